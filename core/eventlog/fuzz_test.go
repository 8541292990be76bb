package eventlog_test

// Fuzz tests of the event-log reader and writer: any bytes are read without
// a panic, and refused with an error wrapping ErrInvalidArgument or read
// into events that the writer writes back into a log the reader reads as
// the same events; any event the writer can express reads back as itself.

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rmmgo/rmmgo/core"
	. "github.com/rmmgo/rmmgo/core/eventlog"
)

func FuzzReader(f *testing.F) {
	f.Add([]byte(rmmLog))
	f.Add([]byte("Size, Action ,Pointer,Stream,Thread,Extra\r\n256,allocate,0x1000,0x0,7,x\r\n\r\n256,free,0x1000,12345,7,y\r\n9,allocate failure,0x0,(nil),8,z\r\n"))
	f.Add([]byte("\ufeffThread,Time,Action,Pointer,Size,Stream\n1,00:00:00.000001,allocate_failure,(nil),1,(nil)\n2,24:00:00,ALLOCATE,7f00,0,0X10\n"))
	f.Add([]byte("Thread,Time,Action,Pointer,Size,Stream\n1,1:2:3.123456789123,free,0x0,18446744073709551615,0xffffffffffffffff\n"))
	f.Add([]byte("Thread,Action,Pointer,Size,Stream\n\"1\",\"free\",\"0x1\",\"2\",\"3\"\n"))
	f.Add([]byte("Thread,Time,Action,Pointer,Size\n1,00:00:00,free,0x1,2\n"))
	f.Add([]byte("Thread,Time,Action,Pointer,Size,Stream\n1,2562047:47:16.854775,free,0x1,2,0\n")) // hours near time.Duration's limit
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("reading %q: the error does not wrap ErrInvalidArgument: %v", data, err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, events); err != nil {
			t.Fatal(err)
		}
		again, err := Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("the log written from %q does not read back: %v\n%s", data, err, buf.Bytes())
		}
		if len(again) != len(events) {
			t.Fatalf("%d events read from %q, %d after writing them back", len(events), data, len(again))
		}
		for i, e := range events {
			e.Time = e.Time.Truncate(time.Microsecond) // the log keeps microseconds
			if again[i] != e {
				t.Fatalf("event %d read from %q is %+v, written back and read again %+v", i, data, e, again[i])
			}
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(uint64(140201740371968), int64(50607041325), uint8(1), uint64(0x7f8a3c000000), uint64(1000000), uint64(0))
	f.Add(uint64(0), int64(0), uint8(3), uint64(0), uint64(1<<63), uint64(0x5581a0c3e010))
	f.Add(uint64(1<<64-1), int64(86399999999), uint8(2), uint64(1<<64-1), uint64(1<<64-1), uint64(1<<64-1))
	f.Fuzz(func(t *testing.T, thread uint64, us int64, action uint8, ptr, size, stream uint64) {
		const day = int64(24 * time.Hour / time.Microsecond)
		e := Event{
			Thread:  thread,
			Time:    time.Duration((us%day+day)%day) * time.Microsecond, // a time of day
			Action:  Action(1 + action%3),
			Pointer: uintptr(ptr),
			Size:    uintptr(size),
			Stream:  core.Stream(stream),
		}
		if e.Action == ActionAllocateFailure {
			e.Pointer = 0
		}
		var buf bytes.Buffer
		if err := Write(&buf, []Event{e}); err != nil {
			t.Fatal(err)
		}
		got, err := Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%+v written as %q does not read back: %v", e, buf.Bytes(), err)
		}
		if len(got) != 1 || got[0] != e {
			t.Fatalf("%+v written as %q reads back as %+v", e, buf.Bytes(), got)
		}
	})
}
