package core

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rmmgo/rmmgo/core/eventlog"
	"github.com/rmmgo/rmmgo/cudart"
)

// EnvLogFile names the log file a Logging adaptor writes when it is given
// neither a file name nor a Writer, as in RMM.
const EnvLogFile = "RMM_LOG_FILE"

// LoggingOptions configures NewLogging.
type LoggingOptions struct {
	// FileName is the CSV file to write; it is created or truncated, and
	// the folders it names are made if they do not exist (as RMM). When
	// both FileName and Writer are empty, the RMM_LOG_FILE environment
	// variable names the file.
	FileName string
	// Writer receives the log instead of a file. Logging does not close it.
	Writer io.Writer
	// AutoFlush writes every row through to the file or Writer as it is
	// logged; otherwise rows are buffered until Flush, Close, or the buffer
	// fills.
	AutoFlush bool
}

// Logging is RMM's logging_resource_adaptor: it writes every allocation and
// deallocation through it to a CSV event log in RMM's format (see
// package eventlog), which RMM's replay benchmark and cmd/rmmgo-replay read.
//
// An allocation is logged after it succeeded ("allocate" with its pointer)
// or failed ("allocate failure" with "(nil)"; the error is then returned); a
// deallocation ("free") only when the upstream accepted it, so a free the
// upstream refuses (a foreign pointer, a double free, a wrong size) leaves
// no row. The free's row still comes before the row of any allocation that
// reuses its memory: while the upstream frees, the pointer is marked in
// flight, and an allocation handed that pointer writes the free's row
// before its own (the free, evidently done, then writes nothing more). The
// row's time is when the free was asked for. Size is the
// requested size; Thread is the OS thread id of the caller (gettid); Time is
// the local time of day to the microsecond; Stream is the stream as C++
// prints it ("0" for the default stream and for the Sync calls). Zero-byte
// requests are logged too (with "(nil)"), as RMM logs them, without calling
// the upstream.
//
// Rows are formatted outside the lock and written whole under it, so rows
// from concurrent goroutines never interleave and the file order is the
// order in which the events were logged. Rows are buffered: call Flush to
// write them out, or set AutoFlush. Close flushes and closes the file. A
// write failure does not fail allocations: it is kept and returned by the
// next Flush or Close.
type Logging struct {
	upstream  Resource
	fileName  string
	file      *os.File  // the file Logging opened, closed by Close
	target    io.Writer // the file or the caller's Writer
	autoFlush bool
	closed    atomic.Bool

	mu       sync.Mutex
	buf      *bufio.Writer
	err      error                     // first write error, reported by Flush and Close
	closeE   error                     // Close's result, returned again by later calls
	inflight map[uintptr][]pendingFree // frees whose upstream call runs, by pointer, oldest first
	seq      uint64                    // numbers the pending frees
}

// pendingFree is a deallocation whose upstream call is in flight: its
// number, its event, and whether an allocation of the same pointer wrote
// its row already.
//
// A free's row is written when its upstream call returns success, unless
// an allocation handed the same pointer wrote it first: the upstream can
// hand the pointer out again only after it accepted a free of it, so an
// allocation that finds frees of its pointer in flight writes the oldest
// one not yet written before its own row. Several frees of one pointer can
// be in flight at once: one whose pointer was handed out again and freed
// again before its call returned, and double frees (which the upstream
// refuses: their rows are never written, unless an allocation had to
// guess).
type pendingFree struct {
	seq     uint64
	ev      eventlog.Event
	written bool
}

// NewLogging returns an adaptor over upstream that logs to the file or
// Writer opts names. With neither given and RMM_LOG_FILE unset, or with
// both given, it returns an error wrapping ErrInvalidArgument. The header
// line is written at once.
func NewLogging(upstream Resource, opts LoggingOptions) (*Logging, error) {
	if err := checkUpstream(kindLogging, upstream); err != nil {
		return nil, err
	}
	l := &Logging{upstream: upstream, autoFlush: opts.AutoFlush, inflight: make(map[uintptr][]pendingFree)}
	switch {
	case opts.Writer != nil && opts.FileName != "":
		return nil, fmt.Errorf("%s: %w: give a file name or a Writer, not both", kindLogging, ErrInvalidArgument)
	case opts.Writer != nil:
		l.target = opts.Writer
	default:
		name := opts.FileName
		if name == "" {
			name = cudart.Getenv(EnvLogFile)
		}
		if name == "" {
			return nil, fmt.Errorf("%s: %w: no log file name given and %s is not set", kindLogging, ErrInvalidArgument, EnvLogFile)
		}
		// As RMM's logger (its file sink makes the parent directories), a
		// log file may name folders that do not exist yet.
		if dir := filepath.Dir(name); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("%s: %w: cannot create the log file's folder: %w", kindLogging, ErrInvalidArgument, err)
			}
		}
		f, err := os.Create(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: cannot create the log file: %w", kindLogging, ErrInvalidArgument, err)
		}
		l.file, l.fileName, l.target = f, name, f
	}
	l.buf = bufio.NewWriterSize(l.target, 64*1024)
	l.buf.WriteString(eventlog.Header + "\n")
	if err := l.buf.Flush(); err != nil {
		if l.file != nil {
			l.file.Close()
		}
		return nil, fmt.Errorf("%s: writing the log header: %w", kindLogging, err)
	}
	return l, nil
}

// FileName reports the log file's name as given (or read from
// RMM_LOG_FILE); "" when logging to a Writer.
func (l *Logging) FileName() string { return l.fileName }

// Header returns the log's header line, without its newline.
func (l *Logging) Header() string { return eventlog.Header }

// Upstream returns the resource Logging allocates from.
func (l *Logging) Upstream() Resource { return l.upstream }

// Properties reports the upstream's properties.
func (l *Logging) Properties() Properties { return l.upstream.Properties() }

// Kind returns "logging".
func (l *Logging) Kind() string { return kindLogging }

// Equal reports whether other is this adaptor, or (as RMM compares an
// upstream and a logger) a logging adaptor over an equal upstream that
// writes to the same Writer. Two adaptors that opened files are equal only
// when they are the same adaptor.
func (l *Logging) Equal(other Resource) bool {
	o, ok := other.(*Logging)
	if !ok {
		return false
	}
	if o == l {
		return true
	}
	if l.file != nil || o.file != nil || !sameWriter(l.target, o.target) {
		return false
	}
	return l.upstream.Equal(o.upstream)
}

// sameWriter compares two Writers without panicking on incomparable ones.
func sameWriter(a, b io.Writer) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}

// Allocate allocates from the upstream and logs the result.
func (l *Logging) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := l.allocate(s, bytes, alignment, false)
	if err != nil {
		return 0, explainOOM(l, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync is Allocate without a stream; it logs stream 0.
func (l *Logging) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := l.allocate(DefaultStream, bytes, alignment, true)
	if err != nil {
		return 0, explainOOM(l, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

func (l *Logging) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if l.closed.Load() {
		return 0, fmt.Errorf("%s: %w: allocating %d bytes", kindLogging, ErrClosed, bytes)
	}
	var p uintptr
	var err error
	if bytes == 0 {
		err = zeroRequest(kindLogging, alignment)
	} else {
		p, err = upAllocate(l.upstream, s, bytes, alignment, sync)
	}
	if err != nil {
		l.log(eventlog.ActionAllocateFailure, 0, bytes, s)
		return 0, err
	}
	l.log(eventlog.ActionAllocate, p, bytes, s)
	return p, nil
}

// event returns the event of the calling thread doing a on ptr and bytes
// now.
func event(a eventlog.Action, ptr, bytes uintptr, s Stream) eventlog.Event {
	return eventlog.Event{
		Thread:  uint64(syscall.Gettid()),
		Time:    eventlog.TimeOfDay(time.Now()),
		Action:  a,
		Pointer: ptr,
		Size:    bytes,
		Stream:  s,
	}
}

// Deallocate logs the deallocation and returns the memory to the upstream.
// After Close it still returns the memory, without logging.
func (l *Logging) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	return l.deallocate(s, ptr, bytes, alignment, false)
}

// DeallocateSync is Deallocate without a stream; it logs stream 0.
func (l *Logging) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return l.deallocate(DefaultStream, ptr, bytes, alignment, true)
}

func (l *Logging) deallocate(s Stream, ptr, bytes, alignment uintptr, sync bool) error {
	if ptr == 0 || l.closed.Load() {
		l.log(eventlog.ActionFree, ptr, bytes, s)
		if ptr == 0 {
			return nil
		}
		return upDeallocate(l.upstream, s, ptr, bytes, alignment, sync)
	}
	e := event(eventlog.ActionFree, ptr, bytes, s)
	var arr [128]byte
	row := e.AppendCSV(arr[:0])
	l.mu.Lock()
	l.seq++
	seq := l.seq
	l.inflight[ptr] = append(l.inflight[ptr], pendingFree{seq: seq, ev: e})
	l.mu.Unlock()
	err := upDeallocate(l.upstream, s, ptr, bytes, alignment, sync)
	l.mu.Lock()
	defer l.mu.Unlock()
	written := l.takePending(ptr, seq)
	if err == nil && !written && !l.closed.Load() {
		l.write(row)
	}
	return err
}

// takePending removes the pending free seq of ptr and reports whether an
// allocation wrote its row; l.mu is held.
func (l *Logging) takePending(ptr uintptr, seq uint64) (written bool) {
	list := l.inflight[ptr]
	for i, f := range list {
		if f.seq == seq {
			written = f.written
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(l.inflight, ptr)
	} else {
		l.inflight[ptr] = list
	}
	return written
}

// log formats a row on the stack and appends it to the buffer under the
// lock. An allocation handed a pointer whose free is still in flight
// writes that free's row first (the oldest such free not yet written).
func (l *Logging) log(a eventlog.Action, ptr, bytes uintptr, s Stream) {
	if l.closed.Load() {
		return
	}
	e := event(a, ptr, bytes, s)
	var arr [128]byte
	row := e.AppendCSV(arr[:0])
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return
	}
	if a == eventlog.ActionAllocate && len(l.inflight) > 0 {
		list := l.inflight[ptr]
		for i := range list {
			if !list[i].written {
				var farr [128]byte
				l.write(list[i].ev.AppendCSV(farr[:0]))
				list[i].written = true
				break
			}
		}
	}
	l.write(row)
}

// write appends row to the buffer, flushing first when it does not fit and
// after when AutoFlush is set; l.mu is held.
func (l *Logging) write(row []byte) {
	if l.buf.Available() < len(row) {
		l.noteErr(l.buf.Flush())
	}
	// Append into the buffer's own free space so that row stays on the
	// stack (passing it to Write would let it escape).
	w := append(l.buf.AvailableBuffer(), row...)
	_, err := l.buf.Write(w)
	l.noteErr(err)
	if l.autoFlush {
		l.noteErr(l.buf.Flush())
	}
}

func (l *Logging) noteErr(err error) {
	if err != nil && l.err == nil {
		l.err = fmt.Errorf("%s: writing the log: %w", kindLogging, err)
	}
}

// Flush writes buffered rows to the file or Writer. It returns the first
// write error seen since the adaptor was made, if any.
func (l *Logging) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return l.closeE
	}
	l.noteErr(l.buf.Flush())
	return l.err
}

// Close flushes the log and closes the file Logging opened (a Writer given
// in LoggingOptions is left open). After Close, allocations fail with an
// error wrapping ErrClosed and deallocations still reach the upstream,
// unlogged. It does not close the upstream. Calling it again returns the
// first call's result.
func (l *Logging) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return l.closeE
	}
	l.noteErr(l.buf.Flush())
	if l.file != nil {
		if err := l.file.Close(); err != nil {
			l.noteErr(err)
		}
	}
	l.closed.Store(true)
	l.closeE = l.err
	return l.closeE
}
