package core

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// 16 goroutines allocate and free through a Pressure adaptor over a pool;
// each threshold's events alternate up, down, up, ... and end down when
// everything is freed; a callback that allocates through the adaptor does
// not deadlock.
func TestPressureThresholds16Goroutines(t *testing.T) {
	cuda, _ := NewCuda()
	pool, err := NewPool(cuda, PoolOptions{InitialSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	thresholds := []uintptr{4 << 20, 8 << 20, 16 << 20}
	var mu sync.Mutex
	events := map[uintptr][]bool{}
	var pr *Pressure
	var inCallback atomic.Int32
	pr, err = NewPressure(pool, PressureOptions{Thresholds: thresholds, OnCross: func(ev PressureEvent) {
		if inCallback.Add(1) != 1 {
			t.Error("callbacks overlap")
		}
		defer inCallback.Add(-1)
		mu.Lock()
		events[ev.Threshold] = append(events[ev.Threshold], ev.Up)
		mu.Unlock()
		if ev.Up && (ev.Live < ev.Threshold) || !ev.Up && ev.Live >= ev.Threshold {
			t.Errorf("event %+v: live on the wrong side", ev)
		}
		// A callback may allocate and free through the adaptor.
		if p, err := pr.Allocate(DefaultStream, 256, DefaultAlignment); err == nil {
			pr.Deallocate(DefaultStream, p, 256, DefaultAlignment)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Rounds: 16 goroutines allocate 8 blocks of 512 KiB each (64 MiB
	// live at the top), then 16 goroutines free them.
	held := make([][]uintptr, 16)
	var wg sync.WaitGroup
	for round := 0; round < 6; round++ {
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 8; i++ {
					p, err := pr.Allocate(DefaultStream, 512<<10, DefaultAlignment)
					if err != nil {
						t.Error(err)
						return
					}
					held[g] = append(held[g], p)
				}
			}(g)
		}
		wg.Wait()
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for _, p := range held[g] {
					if err := pr.Deallocate(DefaultStream, p, 512<<10, DefaultAlignment); err != nil {
						t.Error(err)
					}
				}
				held[g] = held[g][:0]
			}(g)
		}
		wg.Wait()
	}
	if pr.LiveBytes() != 0 {
		t.Fatalf("live %d after every free", pr.LiveBytes())
	}
	for _, th := range thresholds {
		evs := events[th]
		if len(evs) == 0 {
			t.Fatalf("threshold %d never crossed", th)
		}
		for i, up := range evs {
			if up != (i%2 == 0) {
				t.Fatalf("threshold %d: events %v do not alternate", th, evs)
			}
		}
		if evs[len(evs)-1] {
			t.Fatalf("threshold %d: last event up with nothing live", th)
		}
		t.Logf("threshold %d MiB: %d crossings", th>>20, len(evs))
	}
}

// OnFailure is told the retry count; it spills (frees) on the second
// failure and the allocation then succeeds. Under 16 goroutines each
// failing allocation sees retries 0, 1, ... in order.
func TestPressureOnFailureRetries(t *testing.T) {
	cuda, _ := NewCuda()
	pool, err := NewPool(cuda, PoolOptions{InitialSize: 32 << 20, MaximumSize: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var spillMu sync.Mutex
	var spill []uintptr
	var failures, maxRetry atomic.Int32
	var pr *Pressure
	pr, _ = NewPressure(pool, PressureOptions{History: 64, OnFailure: func(bytes uintptr, retry int, err error) bool {
		failures.Add(1)
		var oom *OutOfMemoryError
		if !errors.As(err, &oom) || oom.Bytes != bytes {
			t.Errorf("OnFailure got %v", err)
		}
		if int32(retry) > maxRetry.Load() {
			maxRetry.Store(int32(retry))
		}
		if retry == 0 {
			return true // try once more before spilling
		}
		spillMu.Lock()
		defer spillMu.Unlock()
		if len(spill) == 0 {
			return retry < 50
		}
		p := spill[len(spill)-1]
		spill = spill[:len(spill)-1]
		pr.Deallocate(DefaultStream, p, 1<<20, DefaultAlignment)
		return true
	}})
	for i := 0; i < 32; i++ {
		p, err := pr.Allocate(DefaultStream, 1<<20, DefaultAlignment)
		if err != nil {
			t.Fatal(err)
		}
		spill = append(spill, p)
	}
	var wg sync.WaitGroup
	var got atomic.Int32
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := pr.Allocate(DefaultStream, 1<<20, DefaultAlignment)
			if err != nil {
				t.Error(err)
				return
			}
			got.Add(1)
			_ = p
		}()
	}
	wg.Wait()
	// Each allocation failed at least once; most twice (their first retry
	// is not a spill), but another goroutine's spill can free a block for
	// it in between (31 failure calls once under the race detector).
	if got.Load() != 16 || failures.Load() < 16 || maxRetry.Load() < 1 {
		t.Fatalf("%d allocations, %d failure calls, max retry %d", got.Load(), failures.Load(), maxRetry.Load())
	}
	var ooms int
	for _, ev := range pr.traceEvents() {
		if ev.Action == "oom" {
			ooms++
		}
	}
	if ooms == 0 {
		t.Fatal("no oom event in the history")
	}
}

func TestFailureCallbackRetryCount(t *testing.T) {
	cuda, _ := NewCuda()
	lim, _ := NewLimiting(cuda, 1<<20, DefaultAlignment)
	var seen []int
	f, err := NewFailureCallbackRetries(lim, func(bytes uintptr, retry int) bool {
		seen = append(seen, retry)
		return retry < 2
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Allocate(DefaultStream, 2<<20, DefaultAlignment)
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != 0 || seen[1] != 1 || seen[2] != 2 {
		t.Fatalf("retries seen %v", seen)
	}
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || oom.Chain[0] != "failure_callback" {
		t.Fatalf("%v", err)
	}
}
