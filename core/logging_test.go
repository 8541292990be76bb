package core

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/eventlog"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rowRE is one row exactly as RMM writes it.
var rowRE = regexp.MustCompile(`^\d+,\d\d:\d\d:\d\d\.\d{6},(allocate|free|allocate failure),(0x[0-9a-f]+|\(nil\)),\d+,(0|0x[0-9a-f]+)$`)

func logLines(t *testing.T, s string) []string {
	t.Helper()
	require.True(t, strings.HasSuffix(s, "\n"), "the log ends with a newline")
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	require.Equal(t, eventlog.Header, lines[0])
	for _, l := range lines[1:] {
		require.Regexp(t, rowRE, l)
	}
	return lines[1:]
}

func TestLoggingConformance(t *testing.T) {
	adaptorConformance(t, "logging", func(up Resource) (Adaptor, error) {
		return NewLogging(up, LoggingOptions{Writer: &syncBuffer{}})
	})
}

func TestLoggingRows(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := strconv.Itoa(syscall.Gettid())

	up := newFake()
	up.setCapacity(1 << 20)
	var buf syncBuffer
	l, err := NewLogging(up, LoggingOptions{Writer: &buf})
	require.NoError(t, err)
	assert.Equal(t, eventlog.Header+"\n", buf.String(), "the header is written at once")
	assert.Empty(t, l.FileName())
	assert.Equal(t, eventlog.Header, l.Header())

	before := eventlog.TimeOfDay(time.Now())
	p, err := l.Allocate(Stream(0x5581a0c3e010), 1000, DefaultAlignment)
	require.NoError(t, err)
	q, err := l.AllocateSync(1, DefaultAlignment)
	require.NoError(t, err)
	_, err = l.Allocate(Stream(1), 2<<20, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory, "the failure is returned after it is logged")
	require.NoError(t, l.Deallocate(Stream(0x5581a0c3e010), p, 1000, DefaultAlignment))
	require.NoError(t, l.DeallocateSync(q, 1, DefaultAlignment))
	z, err := l.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, l.Deallocate(DefaultStream, z, 0, DefaultAlignment))
	after := eventlog.TimeOfDay(time.Now())

	assert.Equal(t, eventlog.Header+"\n", buf.String(), "rows are buffered until Flush")
	require.NoError(t, l.Flush())
	lines := logLines(t, buf.String())
	hex := func(v uintptr) string { return "0x" + strconv.FormatUint(uint64(v), 16) }
	want := []string{
		"allocate," + hex(p) + ",1000,0x5581a0c3e010",
		"allocate," + hex(q) + ",1,0",
		"allocate failure,(nil),2097152,0x1",
		"free," + hex(p) + ",1000,0x5581a0c3e010",
		"free," + hex(q) + ",1,0",
		"allocate,(nil),0,0",
		"free,(nil),0,0",
	}
	require.Len(t, lines, len(want))
	for i, l := range lines {
		f := strings.SplitN(l, ",", 3)
		assert.Equal(t, tid, f[0], "Thread is the OS thread id")
		assert.Equal(t, want[i], f[2])
		row, err := eventlog.Read(strings.NewReader(eventlog.Header + "\n" + l))
		require.NoError(t, err)
		ts := row[0].Time
		if after > before { // not across midnight
			assert.True(t, ts >= before.Truncate(time.Microsecond) && ts <= after, "time %v in [%v, %v]", ts, before, after)
		}
	}
	require.NoError(t, l.Close())
}

// TestLoggingFreeIsLoggedBeforeItsMemoryIsReused: a free is logged only
// once the upstream accepted it, yet an allocation that reuses the memory
// while the freeing call has not returned yet (another goroutine, between
// the upstream's free and the adaptor's row) still comes after the free in
// the log, and the free is logged once.
func TestLoggingFreeIsLoggedBeforeItsMemoryIsReused(t *testing.T) {
	var buf syncBuffer
	up := &spyResource{fakeResource: newFake()}
	l, err := NewLogging(up, LoggingOptions{Writer: &buf, AutoFlush: true})
	require.NoError(t, err)
	p, err := l.Allocate(DefaultStream, 100, DefaultAlignment)
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "allocate,", "AutoFlush writes each row through")
	var q uintptr
	up.afterFree = func() {
		assert.NotContains(t, buf.String(), ",free,", "no free row before the upstream accepted the free")
		q, err = l.Allocate(DefaultStream, 100, DefaultAlignment)
		require.NoError(t, err)
	}
	require.NoError(t, l.Deallocate(DefaultStream, p, 100, DefaultAlignment))
	require.Equal(t, p, q, "the fake upstream reuses the freed address")
	up.afterFree = nil
	rows := strings.Split(strings.TrimSpace(buf.String()), "\n")[1:]
	require.Len(t, rows, 3, buf.String())
	assert.Contains(t, rows[0], ",allocate,"+fmt.Sprintf("%#x", p))
	assert.Contains(t, rows[1], ",free,"+fmt.Sprintf("%#x", p))
	assert.Contains(t, rows[2], ",allocate,"+fmt.Sprintf("%#x", p))

	// A free the upstream refuses writes nothing.
	up.setFreeErr(fmt.Errorf("fake: %w: injected", ErrInvalidPointer))
	require.ErrorIs(t, l.Deallocate(DefaultStream, q, 100, DefaultAlignment), ErrInvalidPointer)
	assert.NotContains(t, strings.Join(strings.Split(buf.String(), "\n")[4:], "\n"), ",free,")
	up.setFreeErr(nil)
	require.NoError(t, l.Deallocate(DefaultStream, q, 100, DefaultAlignment))
	assert.Equal(t, 2, strings.Count(buf.String(), ",free,"))
	require.NoError(t, l.Close())
}

type spyResource struct {
	*fakeResource
	afterFree func()
}

func (s *spyResource) Deallocate(st Stream, p, n, a uintptr) error {
	err := s.fakeResource.Deallocate(st, p, n, a)
	if err == nil && s.afterFree != nil {
		s.afterFree()
	}
	return err
}

func TestLoggingFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "events.csv")
	require.NoError(t, os.WriteFile(name, []byte("old junk that must go\n"), 0o644))

	up := newFake()
	l, err := NewLogging(up, LoggingOptions{FileName: name})
	require.NoError(t, err)
	assert.Equal(t, name, l.FileName())
	p, err := l.Allocate(DefaultStream, 4096, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, l.Deallocate(DefaultStream, p, 4096, DefaultAlignment))
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close twice is fine")

	data, err := os.ReadFile(name)
	require.NoError(t, err)
	lines := logLines(t, string(data))
	assert.Len(t, lines, 2, "truncated, then header and two rows")

	_, err = l.Allocate(DefaultStream, 10, DefaultAlignment)
	require.ErrorIs(t, err, ErrClosed)
	p, err = up.Allocate(DefaultStream, 10, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, l.Deallocate(DefaultStream, p, 10, DefaultAlignment), "frees still reach the upstream after Close")
	assert.Zero(t, up.liveCount())
	data2, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, data, data2, "nothing is logged after Close")
}

// TestLoggingFileMakesItsFolders: as RMM's logger, the adaptor creates the
// folders its file name needs; a folder that cannot be made (a file is in
// the way) is an error that says so.
func TestLoggingFileMakesItsFolders(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a", "b", "log.csv")
	l, err := NewLogging(newFake(), LoggingOptions{FileName: name})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, eventlog.Header+"\n", string(data))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
	_, err = NewLogging(newFake(), LoggingOptions{FileName: filepath.Join(dir, "file", "c", "log.csv")})
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorContains(t, err, "cannot create the log file's folder")
}

func TestLoggingEnvironment(t *testing.T) {
	name := filepath.Join(t.TempDir(), "from-env.csv")
	t.Setenv(EnvLogFile, name)
	l, err := NewLogging(newFake(), LoggingOptions{})
	require.NoError(t, err)
	assert.Equal(t, name, l.FileName())
	require.NoError(t, l.Close())
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, eventlog.Header+"\n", string(data))

	t.Setenv(EnvLogFile, "")
	_, err = NewLogging(newFake(), LoggingOptions{})
	require.ErrorIs(t, err, ErrInvalidArgument, "no file name and no RMM_LOG_FILE")
	_, err = NewLogging(newFake(), LoggingOptions{FileName: name, Writer: io.Discard})
	require.ErrorIs(t, err, ErrInvalidArgument, "both a file and a Writer")
	_, err = NewLogging(newFake(), LoggingOptions{FileName: t.TempDir()})
	require.ErrorIs(t, err, ErrInvalidArgument, "a file that cannot be created (a folder is in the way)")
	assert.ErrorContains(t, err, "cannot create the log file")
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

func TestLoggingWriteErrors(t *testing.T) {
	_, err := NewLogging(newFake(), LoggingOptions{Writer: &failingWriter{}})
	require.Error(t, err, "the header cannot be written")

	up := newFake()
	l, err := NewLogging(up, LoggingOptions{Writer: &failingWriter{after: 1}, AutoFlush: true})
	require.NoError(t, err)
	p, err := l.Allocate(DefaultStream, 10, DefaultAlignment)
	require.NoError(t, err, "a log that cannot be written does not fail allocations")
	require.NoError(t, l.Deallocate(DefaultStream, p, 10, DefaultAlignment))
	err = l.Flush()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disk full")
	assert.Error(t, l.Close())
	assert.Zero(t, up.liveCount())
}

func TestLoggingEqual(t *testing.T) {
	up, other := newFake(), newFake()
	w := &syncBuffer{}
	a, err := NewLogging(up, LoggingOptions{Writer: w})
	require.NoError(t, err)
	b, err := NewLogging(up, LoggingOptions{Writer: w})
	require.NoError(t, err)
	c, err := NewLogging(other, LoggingOptions{Writer: w})
	require.NoError(t, err)
	d, err := NewLogging(up, LoggingOptions{Writer: &syncBuffer{}})
	require.NoError(t, err)
	assert.True(t, a.Equal(b), "same upstream, same log")
	assert.False(t, a.Equal(c), "another upstream")
	assert.False(t, a.Equal(d), "another log")
	dir := t.TempDir()
	f1, err := NewLogging(up, LoggingOptions{FileName: filepath.Join(dir, "1.csv")})
	require.NoError(t, err)
	defer f1.Close()
	assert.True(t, f1.Equal(f1))
	assert.False(t, f1.Equal(a))
}

func TestLoggingConcurrentRowsNeverInterleave(t *testing.T) {
	// More Ps than this machine has cores: goroutines are preempted between
	// the upstream call and the row, as they are on a 16-core GPU host.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	for round := 0; round < 4; round++ {
		up := newFake()
		var buf syncBuffer
		l, err := NewLogging(up, LoggingOptions{Writer: &buf})
		require.NoError(t, err)
		// Few sizes: freed blocks come back at once, to other goroutines.
		n := hammer(t, l, hammerOptions{sync: true, streams: []Stream{0, 1, 0x7f00deadbeef}, sizes: []uintptr{256, 4096}})
		require.NoError(t, l.Close())
		allocs, frees := checkLogOrder(t, buf.String())
		assert.Equal(t, n, allocs)
		assert.Equal(t, allocs, frees)
	}
}

// checkLogOrder reads a log and checks that it is one history: no pointer
// allocated twice without a free between, no free of a pointer not
// allocated, sizes that match, nothing live at the end. It returns the
// number of allocate and free rows.
func checkLogOrder(t *testing.T, log string) (allocs, frees int64) {
	t.Helper()
	events, err := eventlog.Read(strings.NewReader(log))
	require.NoError(t, err)
	live := map[uintptr]uintptr{}
	for i, e := range events {
		switch e.Action {
		case eventlog.ActionAllocate:
			allocs++
			_, dup := live[e.Pointer]
			require.False(t, dup, "row %d: %#x allocated twice without a free between\n%s", i, e.Pointer, log)
			live[e.Pointer] = e.Size
		case eventlog.ActionFree:
			frees++
			size, ok := live[e.Pointer]
			require.True(t, ok, "row %d: free of %#x before its allocate\n%s", i, e.Pointer, log)
			require.Equal(t, size, e.Size)
			delete(live, e.Pointer)
		}
	}
	assert.Empty(t, live)
	return allocs, frees
}

// gatedFree is an upstream whose frees, once accepted, wait for the test
// (hold returns the channel to wait on for ptr's next free, nil: none).
type gatedFree struct {
	*fakeResource
	accepted chan uintptr
	hold     func() chan struct{}
}

func (g *gatedFree) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	wait := g.hold()
	err := g.fakeResource.Deallocate(s, ptr, bytes, alignment)
	if wait != nil {
		g.accepted <- ptr
		<-wait
	}
	return err
}

// TestLoggingFreeRowBeforeReuse: frees of one pointer whose upstream calls
// have returned memory that other goroutines allocate again, before those
// frees' own calls return: each free's row comes before the allocation
// that reused its address, however the calls finish. (Two frees of the same
// pointer in flight at once, the second after the pointer was handed out
// again, once let the later allocation's row come before the second free's
// row.)
func TestLoggingFreeRowBeforeReuse(t *testing.T) {
	var mu sync.Mutex
	var gates []chan struct{}
	g := &gatedFree{fakeResource: newFake(), accepted: make(chan uintptr)}
	g.hold = func() chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if len(gates) == 0 {
			return nil
		}
		c := gates[0]
		gates = gates[1:]
		return c
	}
	var buf syncBuffer
	l, err := NewLogging(g, LoggingOptions{Writer: &buf})
	require.NoError(t, err)
	a, b := make(chan struct{}), make(chan struct{})
	gates = []chan struct{}{a, b}

	x, err := l.Allocate(DefaultStream, 256, DefaultAlignment)
	require.NoError(t, err)
	var wg sync.WaitGroup
	free := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, l.Deallocate(DefaultStream, x, 256, DefaultAlignment))
		}()
		require.Equal(t, x, <-g.accepted) // the upstream took it; the call has not returned
	}
	free()
	y, err := l.Allocate(DefaultStream, 256, DefaultAlignment)
	require.NoError(t, err)
	require.Equal(t, x, y, "the upstream hands the freed block out again")
	free()
	z, err := l.Allocate(DefaultStream, 256, DefaultAlignment)
	require.NoError(t, err)
	require.Equal(t, x, z)
	close(b) // the second free returns first
	close(a)
	wg.Wait()
	require.NoError(t, l.Deallocate(DefaultStream, z, 256, DefaultAlignment))
	require.NoError(t, l.Close())
	allocs, frees := checkLogOrder(t, buf.String())
	assert.Equal(t, int64(3), allocs)
	assert.Equal(t, int64(3), frees)
}

func BenchmarkLogging(b *testing.B) {
	up := newFake()
	l, err := NewLogging(up, LoggingOptions{Writer: io.Discard})
	require.NoError(b, err)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := l.Allocate(DefaultStream, 1000, DefaultAlignment)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Deallocate(DefaultStream, p, 1000, DefaultAlignment); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
