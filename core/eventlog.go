package core

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The memory-event log: the CSV file RMM's logging_resource_adaptor writes
// and its replay benchmark reads, and that Logging writes and
// cmd/rmmgo-replay reads. A log is the header line EventLogHeader and one row
// per event, for example
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

// EventLogHeader is the first line of an event log.
const EventLogHeader = "Thread,Time,Action,Pointer,Size,Stream"

// EventAction is what an event-log row records.
type EventAction uint8

// The actions of an event log.
const (
	// ActionAllocate: an allocation succeeded (logged after it did).
	ActionAllocate EventAction = iota + 1
	// ActionFree: a deallocation (logged once the upstream accepted it,
	// ahead of any allocation that reuses the memory).
	ActionFree
	// ActionAllocateFailure: an allocation failed; Pointer is 0.
	ActionAllocateFailure
)

// String returns the action as the log spells it: "allocate", "free" or
// "allocate failure".
func (a EventAction) String() string {
	switch a {
	case ActionAllocate:
		return "allocate"
	case ActionFree:
		return "free"
	case ActionAllocateFailure:
		return "allocate failure"
	}
	return "EventAction(" + strconv.Itoa(int(a)) + ")"
}

// ParseEventAction reads an action as the log spells it (case and
// surrounding spaces do not matter).
func ParseEventAction(s string) (EventAction, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "allocate":
		return ActionAllocate, nil
	case "free":
		return ActionFree, nil
	case "allocate failure", "allocate_failure":
		return ActionAllocateFailure, nil
	}
	return 0, fmt.Errorf("%w: unknown event-log action %q (want allocate, free or allocate failure)", ErrInvalidArgument, s)
}

// Event is one row of an event log.
type Event struct {
	Thread  uint64        // OS thread id of the caller
	Time    time.Duration // local time of day, since midnight, to the microsecond
	Action  EventAction   // allocate, free or allocate failure
	Pointer uintptr       // the memory; 0 for a failure
	Size    uintptr       // requested bytes
	Stream  Stream        // the stream; DefaultStream for synchronous calls
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

// WriteEventLog writes the header and events to w. The fields of a row never
// need CSV quoting, so rows are written as they are formatted.
func WriteEventLog(w io.Writer, events []Event) error {
	b := make([]byte, 0, 64*1024)
	b = append(b, EventLogHeader+"\n"...)
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

// EventLogReader reads an event log written by RMM or rmmgo. It finds the
// columns by their names in the header (the Time column may be missing), so
// extra columns and other orders are read too.
type EventLogReader struct {
	r    *csv.Reader
	cols [6]int // index of Thread, Time, Action, Pointer, Size, Stream; -1 when absent
}

var eventLogColumns = [6]string{"Thread", "Time", "Action", "Pointer", "Size", "Stream"}

// NewEventLogReader reads the header of the log in r.
func NewEventLogReader(r io.Reader) (*EventLogReader, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: event log is empty (want the header %q)", ErrInvalidArgument, EventLogHeader)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading the event-log header: %w", ErrInvalidArgument, err)
	}
	lr := &EventLogReader{r: cr}
	for i := range lr.cols {
		lr.cols[i] = -1
	}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		for c, name := range eventLogColumns {
			if strings.EqualFold(h, name) {
				lr.cols[c] = i
			}
		}
	}
	for c, name := range eventLogColumns {
		if lr.cols[c] < 0 && name != "Time" {
			return nil, fmt.Errorf("%w: event-log header %q has no %s column (want %q)",
				ErrInvalidArgument, strings.Join(header, ","), name, EventLogHeader)
		}
	}
	return lr, nil
}

// Read returns the next event, or io.EOF after the last. Blank lines are
// skipped. A malformed row is an error wrapping ErrInvalidArgument that names
// its line.
func (lr *EventLogReader) Read() (Event, error) {
	for {
		rec, err := lr.r.Read()
		if err == io.EOF {
			return Event{}, io.EOF
		}
		if err != nil {
			return Event{}, fmt.Errorf("%w: event log: %w", ErrInvalidArgument, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		e, err := lr.parse(rec)
		if err != nil {
			line, _ := lr.r.FieldPos(0)
			return Event{}, fmt.Errorf("%w: event log line %d: %w", ErrInvalidArgument, line, err)
		}
		return e, nil
	}
}

func (lr *EventLogReader) field(rec []string, c int) (string, error) {
	i := lr.cols[c]
	if i < 0 {
		return "", nil
	}
	if i >= len(rec) {
		return "", fmt.Errorf("row has %d fields, no %s", len(rec), eventLogColumns[c])
	}
	return strings.TrimSpace(rec[i]), nil
}

func (lr *EventLogReader) parse(rec []string) (Event, error) {
	var f [6]string
	for c := range f {
		s, err := lr.field(rec, c)
		if err != nil {
			return Event{}, err
		}
		f[c] = s
	}
	var e Event
	var err error
	if e.Thread, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return e, fmt.Errorf("thread %q: %w", f[0], errors.Unwrap(err))
	}
	if f[1] != "" {
		if e.Time, err = parseTimeOfDay(f[1]); err != nil {
			return e, err
		}
	}
	if e.Action, err = ParseEventAction(f[2]); err != nil {
		return e, fmt.Errorf("unknown action %q (want allocate, free or allocate failure)", f[2])
	}
	p, err := parsePointer(f[3])
	if err != nil {
		return e, fmt.Errorf("pointer %q: %w", f[3], err)
	}
	e.Pointer = uintptr(p)
	size, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil {
		return e, fmt.Errorf("size %q: %w", f[4], errors.Unwrap(err))
	}
	e.Size = uintptr(size)
	s, err := parseStream(f[5])
	if err != nil {
		return e, fmt.Errorf("stream %q: %w", f[5], err)
	}
	e.Stream = Stream(s)
	return e, nil
}

// parsePointer reads a pointer as %p prints it: "0x..." hexadecimal, or
// "(nil)" (glibc), "0x0", "0", "nil" or "" for none. Digits without a prefix
// are hexadecimal too, as RMM's replay reads them.
func parsePointer(s string) (uint64, error) {
	switch strings.ToLower(s) {
	case "", "(nil)", "nil", "null", "(null)", "0":
		return 0, nil
	}
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, errors.Unwrap(err)
	}
	return v, nil
}

// parseStream reads a stream as C++ prints a pointer: "0" or "0x..."
// hexadecimal; "(nil)" is the default stream too. Unlike RMM's replay (which
// reads "0x..." as 0), the hexadecimal value is kept, so that replays can
// tell streams apart. Digits without a prefix are decimal.
func parseStream(s string) (uint64, error) {
	switch strings.ToLower(s) {
	case "", "(nil)", "nil", "null", "(null)":
		return 0, nil
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return 0, errors.Unwrap(err)
		}
		return v, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.Unwrap(err)
	}
	return v, nil
}

// parseTimeOfDay reads HH:MM:SS[.fraction].
func parseTimeOfDay(s string) (time.Duration, error) {
	bad := fmt.Errorf("time %q is not HH:MM:SS.ffffff", s)
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return 0, bad
	}
	h, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[1])
	secStr, frac, _ := strings.Cut(parts[2], ".")
	sec, err3 := strconv.Atoi(secStr)
	// A time of day: hours beyond 23 are not one, and enough of them
	// overflow a time.Duration into a negative time.
	if err1 != nil || err2 != nil || err3 != nil || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60 {
		return 0, bad
	}
	d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		n, err := strconv.Atoi(frac)
		if err != nil || n < 0 {
			return 0, bad
		}
		for i := len(frac); i < 9; i++ {
			n *= 10
		}
		d += time.Duration(n)
	}
	return d, nil
}

// ReadEventLog reads a whole event log.
func ReadEventLog(r io.Reader) ([]Event, error) {
	lr, err := NewEventLogReader(r)
	if err != nil {
		return nil, err
	}
	var events []Event
	for {
		e, err := lr.Read()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		events = append(events, e)
	}
}
