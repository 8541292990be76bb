package main

import (
	"bytes"
	"fmt"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/core/eventlog"
	"github.com/rmmgo/rmmgo/cudart"
)

// TestMain runs the tests on the simulated device unless RMMGO_BACKEND
// chooses (RMMGO_BACKEND=cuda runs them on the GPU).
func TestMain(m *testing.M) {
	if os.Getenv(cudart.EnvBackend) == "" {
		os.Setenv(cudart.EnvBackend, string(cudart.BackendSimulated))
	}
	os.Exit(m.Run())
}

func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func testRuntime(t *testing.T) cudart.Runtime {
	t.Helper()
	rt, err := cudart.Default()
	require.NoError(t, err)
	return rt
}

// rmmRows is an event log written by hand in RMM's exact format: OS thread
// ids, microsecond times, %p pointers with "(nil)" for a failure, and
// streams printed as C++ prints pointers ("0", "0x1", "0x5581...").
const rmmRows = `Thread,Time,Action,Pointer,Size,Stream
2310477,14:03:27.041325,allocate,0x7f8a3c000000,1000000,0
2310477,14:03:27.041402,allocate,0x7f8a3c100000,4096,0x5581a0c3e010
2310478,14:03:27.041511,allocate failure,(nil),68719476736,0x1
2310478,14:03:27.041540,allocate,0x7f8a3c200000,300,0x1
2310477,14:03:27.041602,free,0x7f8a3c000000,1000000,0
2310478,14:03:27.041650,free,0x7f8a3c100000,4096,0x5581a0c3e010
2310479,14:03:27.041700,allocate,0x7f8a3c300000,0,0x2
2310479,14:03:27.041701,free,(nil),0,0x2
2310479,14:03:27.041800,free,0x7f8a3cdead00,64,0
`

func TestReplayRMMRows(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "rmm.csv")
	require.NoError(t, os.WriteFile(log, []byte(rmmRows), 0o644))
	out, errOut, code := runCmd(t, "-f", log, "-r", "cuda")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "backend:  "+string(testRuntime(t).Backend()))
	assert.Contains(t, out, "9 events from 3 threads on 1 non-default streams")
	assert.Contains(t, out, "replayed: 3 allocations, 2 frees")
	assert.Contains(t, out, "(2 zero-byte events skipped)")
	assert.Contains(t, out, "failures: 0 allocations failed in the replay; 1 had failed in the log")
	assert.Contains(t, out, "1 frees of unknown pointers")
	assert.Contains(t, out, "leaks:    1 allocations (300 B)")
	assert.Contains(t, out, "peak live 980.9 KiB")
}

// workload runs goroutines, each on an OS thread of its own, allocating and
// freeing through a logging adaptor over cuda into path, and returns the
// allocations it left unfreed (freed by the test through the upstream).
func workload(t *testing.T, path string, goroutines, ops int) int {
	rt := testRuntime(t)
	base, err := core.NewCuda()
	require.NoError(t, err)
	lg, err := core.NewLogging(base, core.LoggingOptions{FileName: path})
	require.NoError(t, err)
	streams := make([]core.Stream, 2)
	for i := range streams {
		streams[i], err = rt.StreamCreate(cudart.StreamFlagDefault)
		require.NoError(t, err)
	}
	type held struct {
		p, n uintptr
		s    core.Stream
	}
	var (
		mu       sync.Mutex
		leftover []held
		wg       sync.WaitGroup
	)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			var mine []held
			for i := 0; i < ops; i++ {
				if len(mine) > 0 && rng.IntN(3) == 0 {
					k := rng.IntN(len(mine))
					h := mine[k]
					mine = append(mine[:k], mine[k+1:]...)
					if err := lg.Deallocate(h.s, h.p, h.n, core.DefaultAlignment); err != nil {
						t.Error(err)
					}
					continue
				}
				s := core.DefaultStream
				if g%3 != 0 {
					s = streams[g%2]
				}
				n := uintptr(1 + rng.IntN(1<<20))
				p, err := lg.Allocate(s, n, core.DefaultAlignment)
				if err != nil {
					t.Error(err)
					continue
				}
				mine = append(mine, held{p, n, s})
			}
			// Free all but two: those are the workload's leaks.
			for len(mine) > 2 {
				h := mine[0]
				mine = mine[1:]
				if err := lg.Deallocate(h.s, h.p, h.n, core.DefaultAlignment); err != nil {
					t.Error(err)
				}
			}
			mu.Lock()
			leftover = append(leftover, mine...)
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	require.NoError(t, lg.Close())
	for _, h := range leftover {
		require.NoError(t, base.Deallocate(h.s, h.p, h.n, core.DefaultAlignment))
	}
	for _, s := range streams {
		require.NoError(t, rt.StreamSynchronize(s))
		require.NoError(t, rt.StreamDestroy(s))
	}
	return len(leftover)
}

func readEvents(t *testing.T, path string) []eventlog.Event {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	events, err := eventlog.Read(f)
	require.NoError(t, err)
	return events
}

// TestRoundTrip runs a multi-threaded workload through the logging adaptor,
// replays its log (logging the replay itself with -log), and checks that the
// replay made the same allocations and frees: the same sizes in the same
// order, each logged thread replayed by one thread of its own, each free
// given the memory its allocation got, streams kept apart.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "workload.csv")
	leaks := workload(t, orig, 4, 150)
	again := filepath.Join(dir, "replayed.csv")

	for _, tc := range []struct{ r, mode string }{
		{"pool", modeThreads}, {"cuda", modeThreads}, {"cuda_async", modeThreads}, {"expandable", modeSerial},
	} {
		r, serial := tc.r, tc.mode == modeSerial
		t.Run(r+"/"+tc.mode, func(t *testing.T) {
			out, errOut, code := runCmd(t, "-f", orig, "-r", r, "-log", again, "-mode", tc.mode)
			require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut, out)
			assert.Contains(t, out, "failures: 0 allocations failed")
			assert.Contains(t, out, fmt.Sprintf("leaks:    %d allocations", leaks))

			want := readEvents(t, orig)
			got := readEvents(t, again)
			require.Len(t, got, len(want)+leaks, "every event replayed, then the leaks freed")
			threadMap := map[uint64]uint64{}
			threadBack := map[uint64]uint64{}
			ptrMap := map[uintptr]uintptr{}
			streamMap := map[core.Stream]core.Stream{}
			for i, w := range want {
				g := got[i]
				require.Equal(t, w.Action, g.Action, "event %d", i)
				require.Equal(t, w.Size, g.Size, "event %d", i)
				if serial {
					threadMap[w.Thread] = g.Thread
					require.Equal(t, got[0].Thread, g.Thread, "event %d: a serial replay runs on one thread", i)
				} else if m, ok := threadMap[w.Thread]; ok {
					require.Equal(t, m, g.Thread, "event %d: logged thread %d replayed on another thread", i, w.Thread)
				} else {
					_, taken := threadBack[g.Thread]
					require.False(t, taken, "event %d: two logged threads replayed on one thread", i)
					threadMap[w.Thread], threadBack[g.Thread] = g.Thread, w.Thread
				}
				if m, ok := streamMap[w.Stream]; ok {
					require.Equal(t, m, g.Stream, "event %d: stream mapping", i)
				} else {
					streamMap[w.Stream] = g.Stream
				}
				require.Equal(t, w.Stream == 0, g.Stream == 0, "event %d: default stream stays default", i)
				switch w.Action {
				case eventlog.ActionAllocate:
					ptrMap[w.Pointer] = g.Pointer
				case eventlog.ActionFree:
					require.Equal(t, ptrMap[w.Pointer], g.Pointer, "event %d: the free gets its allocation's memory", i)
				}
			}
			assert.Len(t, threadMap, 4)
			for _, g := range got[len(want):] {
				assert.Equal(t, eventlog.ActionFree, g.Action, "leaks are freed at the end")
			}
		})
	}
}

func TestPlotFiles(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "gen.csv")
	pngPath := filepath.Join(dir, "memory.png")
	out, errOut, code := runCmd(t, "-generate", "3000", "-threads", "3", "-live", "128MiB",
		"-f", log, "-r", "pool", "-initial", "0", "-plot", pngPath)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "generated: "+log+" (3000 events, 3 threads")
	assert.Contains(t, out, "plot:     "+pngPath)

	f, err := os.Open(pngPath)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err, "a valid PNG")
	assert.Greater(t, img.Bounds().Dx(), 500)
	assert.Greater(t, img.Bounds().Dy(), 200)

	svgPath := filepath.Join(dir, "memory.svg")
	_, errOut, code = runCmd(t, "-f", log, "-r", "cuda", "-plot", svgPath)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	svg, err := os.ReadFile(svgPath)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "live (requested)")
}

func TestEveryResource(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "gen.csv")
	events := generate(genConfig{Events: 2000, Threads: 3, Seed: 9, PeakLive: 64 << 20})
	require.NoError(t, writeLog(log, events))
	allocs := 0
	for _, e := range events {
		if e.Action == eventlog.ActionAllocate {
			allocs++
		}
	}
	for _, r := range resourceNames {
		t.Run(r, func(t *testing.T) {
			args := []string{"-f", log, "-r", r, "-initial", "0", "-arena", "256MiB", "-bin-max", "20", "-block", "4MiB", "-blocks", "16"}
			out, errOut, code := runCmd(t, args...)
			require.Equal(t, 0, code, "stderr: %s", errOut)
			assert.NotContains(t, out, "error:", "every free succeeded")
			rt := testRuntime(t)
			rr, err := buildResource(rt, resourceConfig{Name: r, InitialPool: 0, ArenaSize: 256 << 20, BlockSize: 4 << 20, Blocks: 16, BinMinExp: 18, BinMaxExp: 20, Threshold: core.SizeDefault}, 0)
			require.NoError(t, err)
			res, err := replay(rt, rr, events, modeThreads)
			require.NoError(t, err)
			require.NoError(t, rr.close())
			assert.Empty(t, res.FreeErrors)
			assert.Equal(t, allocs, res.Allocs+len(res.Failures), "every allocation tried")
			assert.Equal(t, 3, res.Threads)
			assert.GreaterOrEqual(t, res.PeakReserved, res.PeakLive-res.LeakedBytes, "reserved covers live")
			assert.NotEmpty(t, res.Samples)
			assert.Positive(t, res.AllocTimes.N)
		})
	}
}

func TestGenerate(t *testing.T) {
	cfg := genConfig{Events: 5000, Threads: 5, Seed: 42, PeakLive: 256 << 20}
	a, b := generate(cfg), generate(cfg)
	require.Equal(t, a, b, "the same seed gives the same log")
	require.Len(t, a, 5000)
	cfg.Seed = 43
	assert.NotEqual(t, a, generate(cfg))

	live := map[uintptr]uintptr{}
	threads := map[uint64]bool{}
	var liveBytes, peak uint64
	for i, e := range a {
		threads[e.Thread] = true
		if i > 0 {
			assert.Greater(t, e.Time, a[i-1].Time, "time moves on")
		}
		switch e.Action {
		case eventlog.ActionAllocate:
			_, dup := live[e.Pointer]
			require.False(t, dup)
			live[e.Pointer] = e.Size
			liveBytes += uint64(e.Size)
			peak = max(peak, liveBytes)
		case eventlog.ActionFree:
			n, ok := live[e.Pointer]
			require.True(t, ok, "event %d frees what was allocated", i)
			require.Equal(t, n, e.Size)
			delete(live, e.Pointer)
			liveBytes -= uint64(n)
		}
	}
	assert.Len(t, threads, 5)
	assert.InDelta(t, float64(256<<20), float64(peak), float64(256<<20)*0.1, "peaks near -live")
	assert.NotEmpty(t, live, "some allocations leak")

	var buf bytes.Buffer
	require.NoError(t, eventlog.Write(&buf, a))
	back, err := eventlog.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, a, back, "the generated log reads back as written")
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{nil, "give one with -f"},
		{[]string{"-f", "x.csv", "-r", "nope"}, `-r "nope": want one of`},
		{[]string{"-f", "x.csv", "-plot", "x.gif"}, "must end in one of"},
		{[]string{"-f", "x.csv", "-initial", "2k"}, "could not parse"},
		{[]string{"-f", "x.csv", "extra"}, "unexpected arguments"},
		{[]string{"-generate", "10", "-threads", "0", "-f", "x.csv"}, "-threads"},
	}
	for _, tc := range tests {
		_, errOut, code := runCmd(t, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	_, errOut, code := runCmd(t, "-f", filepath.Join(dir, "missing.csv"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no such file")

	bad := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("Thread,Time,Action,Pointer,Size,Stream\n1,00:00:00.000001,grab,0x100,1,0\n"), 0o644))
	_, errOut, code = runCmd(t, "-f", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "line 2: unknown action")

	_, errOut, code = runCmd(t, "-h")
	assert.Equal(t, 0, code)
	assert.True(t, strings.Contains(errOut, "usage: rmmgo-replay"))
}
