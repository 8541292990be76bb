// Package eventlog reads and writes memory-event logs: the CSV file RMM's
// logging_resource_adaptor writes and its replay benchmark reads, which
// core.Logging writes and cmd/rmmgo-replay reads and replays. A log is the
// header line Header and one row per event, for example
//
//	Thread,Time,Action,Pointer,Size,Stream
//	140201740371968,14:03:27.041325,allocate,0x7f8a3c000000,1000000,0
//	140201740371968,14:03:27.041511,free,0x7f8a3c000000,1000000,0x5581a0c3e010
//	140201731979264,14:03:27.041602,allocate failure,(nil),4294967296,0x1
//
// Thread is the OS thread id of the caller, Time the local time of day to
// the microsecond, Pointer the address as C's %p prints it ("(nil)" for
// none), Size the requested (unrounded) bytes and Stream the stream as C++
// prints a pointer ("0" for the default stream, else hexadecimal).
//
// Malformed logs are errors wrapping core.ErrInvalidArgument.
package eventlog

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/cudart"
)

// Header is the first line of an event log.
const Header = "Thread,Time,Action,Pointer,Size,Stream"

// Action is what an event-log row records.
type Action uint8

// The actions of an event log.
const (
	// ActionAllocate: an allocation succeeded (logged after it did).
	ActionAllocate Action = iota + 1
	// ActionFree: a deallocation (logged once the upstream accepted it,
	// ahead of any allocation that reuses the memory).
	ActionFree
	// ActionAllocateFailure: an allocation failed; Pointer is 0.
	ActionAllocateFailure
)

// String returns the action as the log spells it: "allocate", "free" or
// "allocate failure".
func (a Action) String() string {
	switch a {
	case ActionAllocate:
		return "allocate"
	case ActionFree:
		return "free"
	case ActionAllocateFailure:
		return "allocate failure"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// ParseAction reads an action as the log spells it (case and
// surrounding spaces do not matter).
func ParseAction(s string) (Action, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "allocate":
		return ActionAllocate, nil
	case "free":
		return ActionFree, nil
	case "allocate failure", "allocate_failure":
		return ActionAllocateFailure, nil
	}
	return 0, fmt.Errorf("%w: unknown event-log action %q (want allocate, free or allocate failure)", errs.InvalidArgument, s)
}

// Event is one row of an event log.
type Event struct {
	Thread  uint64        // OS thread id of the caller
	Time    time.Duration // local time of day, since midnight, to the microsecond
	Action  Action        // allocate, free or allocate failure
	Pointer uintptr       // the memory; 0 for a failure
	Size    uintptr       // requested bytes
	Stream  cudart.Stream // the stream; cudart.DefaultStream for synchronous calls
}

// TimeOfDay converts t to the time of day an Event records, in t's location.
func TimeOfDay(t time.Time) time.Duration {
	h, m, s := t.Clock()
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute +
		time.Duration(s)*time.Second + time.Duration(t.Nanosecond()/1000)*time.Microsecond
}

// AppendCSV appends the event's row, with its newline, to b.
func (e Event) AppendCSV(b []byte) []byte {
	b = strconv.AppendUint(b, e.Thread, 10)
	b = append(b, ',')
	b = appendTimeOfDay(b, e.Time)
	b = append(b, ',')
	switch e.Action {
	case ActionAllocate:
		b = append(b, "allocate"...)
	case ActionFree:
		b = append(b, "free"...)
	default:
		b = append(b, e.Action.String()...)
	}
	b = append(b, ',')
	if e.Pointer == 0 {
		b = append(b, "(nil)"...)
	} else {
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, uint64(e.Pointer), 16)
	}
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(e.Size), 10)
	b = append(b, ',')
	if e.Stream == 0 {
		b = append(b, '0')
	} else {
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, uint64(e.Stream), 16)
	}
	return append(b, '\n')
}

// appendTimeOfDay appends d as HH:MM:SS.ffffff.
func appendTimeOfDay(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	us := int64(d / time.Microsecond)
	sec := us / 1e6
	b = append2(b, sec/3600)
	b = append(b, ':')
	b = append2(b, sec/60%60)
	b = append(b, ':')
	b = append2(b, sec%60)
	b = append(b, '.')
	frac := us % 1e6
	for div := int64(1e5); div > 0; div /= 10 {
		b = append(b, byte('0'+frac/div%10))
	}
	return b
}

func append2(b []byte, v int64) []byte {
	if v >= 100 {
		return strconv.AppendInt(b, v, 10)
	}
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

// String returns the event's row without its newline.
func (e Event) String() string {
	b := e.AppendCSV(nil)
	return string(b[:len(b)-1])
}

// Write writes the header and events to w. The fields of a row never
// need CSV quoting, so rows are written as they are formatted.
func Write(w io.Writer, events []Event) error {
	b := make([]byte, 0, 64*1024)
	b = append(b, Header+"\n"...)
	for _, e := range events {
		b = e.AppendCSV(b)
		if len(b) > 60*1024 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}
