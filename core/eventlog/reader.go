package eventlog

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/cudart"
)

// Reader reads an event log written by RMM or rmmgo. It finds the
// columns by their names in the header (the Time column may be missing), so
// extra columns and other orders are read too.
type Reader struct {
	r    *csv.Reader
	cols [6]int // index of Thread, Time, Action, Pointer, Size, Stream; -1 when absent
}

var eventLogColumns = [6]string{"Thread", "Time", "Action", "Pointer", "Size", "Stream"}

// NewReader reads the header of the log in r.
func NewReader(r io.Reader) (*Reader, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: event log is empty (want the header %q)", errs.InvalidArgument, Header)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading the event-log header: %w", errs.InvalidArgument, err)
	}
	lr := &Reader{r: cr}
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
				errs.InvalidArgument, strings.Join(header, ","), name, Header)
		}
	}
	return lr, nil
}

// Read returns the next event, or io.EOF after the last. Blank lines are
// skipped. A malformed row is an error wrapping errs.InvalidArgument that names
// its line.
func (lr *Reader) Read() (Event, error) {
	for {
		rec, err := lr.r.Read()
		if err == io.EOF {
			return Event{}, io.EOF
		}
		if err != nil {
			return Event{}, fmt.Errorf("%w: event log: %w", errs.InvalidArgument, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		e, err := lr.parse(rec)
		if err != nil {
			line, _ := lr.r.FieldPos(0)
			return Event{}, fmt.Errorf("%w: event log line %d: %w", errs.InvalidArgument, line, err)
		}
		return e, nil
	}
}

func (lr *Reader) field(rec []string, c int) (string, error) {
	i := lr.cols[c]
	if i < 0 {
		return "", nil
	}
	if i >= len(rec) {
		return "", fmt.Errorf("row has %d fields, no %s", len(rec), eventLogColumns[c])
	}
	return strings.TrimSpace(rec[i]), nil
}

func (lr *Reader) parse(rec []string) (Event, error) {
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
	if e.Action, err = ParseAction(f[2]); err != nil {
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
	e.Stream = cudart.Stream(s)
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

// Read reads a whole event log.
func Read(r io.Reader) ([]Event, error) {
	lr, err := NewReader(r)
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
