package workload

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/core"
)

// Fragmentation is the fragmentation workload (bench/README.md, "The
// fragmentation workload"): a resource capped at Cap bytes gets rounds of
// small and large allocations, interleaved; the round's large blocks are
// freed and one block as large as all of them together is asked for; the
// small blocks live on for Window rounds. So the bytes the big request
// needs are free, but between live small blocks: a pool that grows by
// separate chunks up to its maximum cannot serve it once it has no room
// left to grow, though live bytes plus the request fit under the cap.
//
// Sizes are drawn from a fixed seed with splitmix64, as the C and Python
// versions draw them (bench/random_allocations.c,
// python/bench/torch_fragmentation.py), so that all three make the same
// requests: for each pair, a small size 1 + x % MaxSmall, then a large size
// MaxLarge/2 + 1 + x % (MaxLarge - MaxLarge/2), x the next draw. A failed small or large
// allocation is skipped; a failed big request is counted, and counted again
// as failed with room when the cap minus the live bytes was at least its
// size.
type Fragmentation struct {
	Rounds   int
	Pairs    int     // small/large pairs per round
	MaxSmall uintptr // small sizes: 1 .. MaxSmall
	MaxLarge uintptr // large sizes: MaxLarge/2 .. MaxLarge
	Window   int     // rounds a small block lives
	Cap      uintptr // the maximum size the resource under test was given
	Seed     uint64
}

// FragmentationFor is the standard fragmentation workload for a cap of
// capBytes: 32 rounds of 16 pairs; large sizes up to cap/32 (the large
// blocks of a round, and the big request, take about 37 % of the cap),
// small sizes up to cap/320 (the small blocks of the 4 rounds they live
// about 10 %). Peak live bytes are about half the cap.
func FragmentationFor(capBytes uintptr) Fragmentation {
	return Fragmentation{Rounds: 32, Pairs: 16, MaxSmall: capBytes / 320, MaxLarge: capBytes / 32, Window: 4, Cap: capBytes, Seed: DefaultSeed}
}

// FragResult counts what a run of the fragmentation workload did.
type FragResult struct {
	Ops          int     // allocations plus frees
	FailedAllocs int     // small and large allocations that failed
	Big          int     // big requests
	BigServed    int     // big requests served
	BigWithRoom  int     // big requests that failed while live + request <= Cap
	PeakLive     uintptr // most bytes live at once (requested sizes)
}

// Run runs the workload on r, every operation on stream s.
func (f Fragmentation) Run(r core.Resource, s core.Stream) (FragResult, error) {
	var res FragResult
	rng := f.Seed
	type blk struct{ p, n uintptr }
	var liveBytes uintptr
	alloc := func(n uintptr) (uintptr, bool, error) {
		p, err := r.Allocate(s, n, core.DefaultAlignment)
		if err != nil {
			if errors.Is(err, core.ErrOutOfMemory) || errors.Is(err, core.ErrBadAlloc) {
				return 0, false, nil
			}
			return 0, false, fmt.Errorf("fragmentation workload: allocating %d bytes: %w", n, err)
		}
		res.Ops++
		liveBytes += n
		res.PeakLive = max(res.PeakLive, liveBytes)
		return p, true, nil
	}
	free := func(b blk) error {
		if err := r.Deallocate(s, b.p, b.n, core.DefaultAlignment); err != nil {
			return fmt.Errorf("fragmentation workload: freeing %d bytes at %#x: %w", b.n, b.p, err)
		}
		res.Ops++
		liveBytes -= b.n
		return nil
	}
	smalls := make([][]blk, f.Rounds)
	done := false
	defer func() {
		if done {
			return
		}
		for _, round := range smalls { // after an error: leave nothing behind
			for _, b := range round {
				_ = r.Deallocate(s, b.p, b.n, core.DefaultAlignment)
			}
		}
	}()
	for round := 0; round < f.Rounds; round++ {
		var larges []blk
		var freed uintptr
		for i := 0; i < f.Pairs; i++ {
			n := uintptr(splitmix64(&rng)%uint64(f.MaxSmall)) + 1
			if p, ok, err := alloc(n); err != nil {
				return res, err
			} else if ok {
				smalls[round] = append(smalls[round], blk{p, n})
			} else {
				res.FailedAllocs++
			}
			n = f.MaxLarge/2 + 1 + uintptr(splitmix64(&rng)%uint64(f.MaxLarge-f.MaxLarge/2))
			if p, ok, err := alloc(n); err != nil {
				return res, err
			} else if ok {
				larges = append(larges, blk{p, n})
			} else {
				res.FailedAllocs++
			}
		}
		for _, b := range larges {
			freed += b.n
			if err := free(b); err != nil {
				return res, err
			}
		}
		if freed > 0 {
			res.Big++
			p, ok, err := alloc(freed)
			switch {
			case err != nil:
				return res, err
			case ok:
				res.BigServed++
				if err := free(blk{p, freed}); err != nil {
					return res, err
				}
			case liveBytes+freed <= f.Cap:
				res.BigWithRoom++
			}
		}
		if old := round - f.Window + 1; old >= 0 {
			for _, b := range smalls[old] {
				if err := free(b); err != nil {
					return res, err
				}
			}
			smalls[old] = nil
		}
	}
	for i, round := range smalls {
		for _, b := range round {
			if err := free(b); err != nil {
				return res, err
			}
		}
		smalls[i] = nil
	}
	done = true
	return res, nil
}

// splitmix64 is the generator the fragmentation workload draws from.
func splitmix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
