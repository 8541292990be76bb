package eventlog_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/core/eventlog"
)

// rmmLog is written by hand in the exact format of RMM's
// logging_resource_adaptor (spdlog "%t,%H:%M:%S.%f,%v" with C's %p pointers
// and C++'s pointer printing for streams).
const rmmLog = `Thread,Time,Action,Pointer,Size,Stream
140201740371968,14:03:27.041325,allocate,0x7f8a3c000000,1000000,0
140201740371968,14:03:27.041511,free,0x7f8a3c000000,1000000,0x5581a0c3e010
140201731979264,14:03:27.041602,allocate failure,(nil),4294967296,0x1
140201731979264,23:59:59.999999,allocate,0x7f8a3c000100,0,0x2
`

func TestReadRMMEventLog(t *testing.T) {
	events, err := eventlog.Read(strings.NewReader(rmmLog))
	require.NoError(t, err)
	at := func(h, m, s, us int) time.Duration {
		return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(us)*time.Microsecond
	}
	want := []eventlog.Event{
		{Thread: 140201740371968, Time: at(14, 3, 27, 41325), Action: eventlog.ActionAllocate, Pointer: 0x7f8a3c000000, Size: 1000000, Stream: 0},
		{Thread: 140201740371968, Time: at(14, 3, 27, 41511), Action: eventlog.ActionFree, Pointer: 0x7f8a3c000000, Size: 1000000, Stream: 0x5581a0c3e010},
		{Thread: 140201731979264, Time: at(14, 3, 27, 41602), Action: eventlog.ActionAllocateFailure, Pointer: 0, Size: 4294967296, Stream: 1},
		{Thread: 140201731979264, Time: at(23, 59, 59, 999999), Action: eventlog.ActionAllocate, Pointer: 0x7f8a3c000100, Size: 0, Stream: 2},
	}
	assert.Equal(t, want, events)

	// Written back, the log is byte for byte what RMM wrote.
	var buf bytes.Buffer
	require.NoError(t, eventlog.Write(&buf, events))
	assert.Equal(t, rmmLog, buf.String())
}

func TestReadEventLogVariants(t *testing.T) {
	// Other column orders, extra columns, no Time column, CRLF line ends,
	// spaces, fmt-style null pointers ("0x0") and decimal streams.
	log := "Size, Action ,Pointer,Stream,Thread,Extra\r\n" +
		"256,allocate,0x1000,0x0,7,x\r\n" +
		"\r\n" +
		"256,free,0x1000,12345,7,y\r\n" +
		"9,allocate failure,0x0,(nil),8,z\r\n"
	events, err := eventlog.Read(strings.NewReader(log))
	require.NoError(t, err)
	assert.Equal(t, []eventlog.Event{
		{Thread: 7, Action: eventlog.ActionAllocate, Pointer: 0x1000, Size: 256},
		{Thread: 7, Action: eventlog.ActionFree, Pointer: 0x1000, Size: 256, Stream: 12345},
		{Thread: 8, Action: eventlog.ActionAllocateFailure, Size: 9},
	}, events)
}

func TestReadEventLogErrors(t *testing.T) {
	tests := []struct{ name, log, want string }{
		{"empty", "", "empty"},
		{"no Size column", "Thread,Time,Action,Pointer,Stream\n", "no Size column"},
		{"bad action", eventlog.Header + "\n1,00:00:00.000001,alloc,0x100,1,0\n", "line 2: unknown action"},
		{"bad pointer", eventlog.Header + "\n1,00:00:00.000001,allocate,0xZZ,1,0\n", "pointer"},
		{"bad size", eventlog.Header + "\n1,00:00:00.000001,allocate,0x100,-1,0\n", "size"},
		{"bad thread", eventlog.Header + "\n1,00:00:00.000001,allocate,0x100,1,0\nx,00:00:00.000001,allocate,0x100,1,0\n", "line 3: thread"},
		{"bad time", eventlog.Header + "\n1,00:99:00.000001,allocate,0x100,1,0\n", "time"},
		{"bad stream", eventlog.Header + "\n1,00:00:00.000001,allocate,0x100,1,0xg\n", "stream"},
		{"short row", eventlog.Header + "\n1,00:00:00.000001,allocate\n", "fields"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eventlog.Read(strings.NewReader(tc.log))
			require.ErrorIs(t, err, core.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestEventLogReaderStreams(t *testing.T) {
	lr, err := eventlog.NewReader(strings.NewReader(rmmLog))
	require.NoError(t, err)
	n := 0
	for {
		_, err := lr.Read()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, 4, n)
}

func TestEventFormatting(t *testing.T) {
	e := eventlog.Event{Thread: 42, Time: 3*time.Hour + 4*time.Minute + 5*time.Second + 6*time.Microsecond,
		Action: eventlog.ActionAllocate, Pointer: 0xabc00, Size: 17, Stream: 0}
	assert.Equal(t, "42,03:04:05.000006,allocate,0xabc00,17,0", e.String())
	e.Action, e.Pointer, e.Stream = eventlog.ActionAllocateFailure, 0, 0xdead
	assert.Equal(t, "42,03:04:05.000006,allocate failure,(nil),17,0xdead", e.String())
	assert.Equal(t, "free", eventlog.ActionFree.String())
	for _, a := range []eventlog.Action{eventlog.ActionAllocate, eventlog.ActionFree, eventlog.ActionAllocateFailure} {
		got, err := eventlog.ParseAction(a.String())
		require.NoError(t, err)
		assert.Equal(t, a, got)
	}
	_, err := eventlog.ParseAction("reallocate")
	assert.ErrorIs(t, err, core.ErrInvalidArgument)

	now := time.Date(2026, 1, 2, 13, 14, 15, 123456789, time.Local)
	assert.Equal(t, 13*time.Hour+14*time.Minute+15*time.Second+123456*time.Microsecond, eventlog.TimeOfDay(now))
}

// Read a log written by RMM's logging_resource_adaptor (or by Logging).
func ExampleRead() {
	log := `Thread,Time,Action,Pointer,Size,Stream
2310477,14:03:27.041325,allocate,0x7f8a3c000000,1000000,0x5581a0c3e010
2310477,14:03:27.041602,free,0x7f8a3c000000,1000000,0x5581a0c3e010
`
	events, err := eventlog.Read(strings.NewReader(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range events {
		fmt.Printf("thread %d %s %#x (%d B) on stream %#x\n", e.Thread, e.Action, e.Pointer, e.Size, e.Stream)
	}
	// Output:
	// thread 2310477 allocate 0x7f8a3c000000 (1000000 B) on stream 0x5581a0c3e010
	// thread 2310477 free 0x7f8a3c000000 (1000000 B) on stream 0x5581a0c3e010
}
