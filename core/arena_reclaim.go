package core

// How an arena that found no room gets it back: quiesce (the global arena
// to one caller), reclaim (a device synchronization, every stream's freed
// memory settled, wholly free superblocks back to the global arena) and
// adopt (a partly used superblock of another stream moved to the caller).
// The allocation paths that call them are in arena.go.

import (
	"errors"

	"github.com/rmmgo/rmmgo/core/internal/streamorder"
)

// quiesce gives the global arena to the caller alone, until unquiesce:
// the reclaim it makes next, and the allocation it then retries. Other
// calls that would allocate from the global arena or free into it wait
// for unquiesce (waitQuiet), so that the retry finds what the reclaim
// made usable for every stream. Without it the other streams go on
// freeing meanwhile, and a block one of them frees next to a free block of
// its list merges with it into a block only that stream may use until it
// records its event: in the 16-stream soak (core/soak_test.go), right
// after a reclaim, the other streams had most times made the global
// arena's free memory theirs again before the retry looked (310-374
// requests failed a minute, with 400 MiB and more free). The caller holds
// no lock.
func (a *Arena) quiesce() {
	// Blocks the caches in front of the arena hold come back first
	// (through Deallocate, which waits while the arena is quiet).
	a.caches.reclaim(0)
	a.reclaimMu.Lock()
	a.quiet.Store(true)
}

func (a *Arena) unquiesce() {
	a.quiet.Store(false)
	a.reclaimMu.Unlock()
}

// waitQuiet waits while another call has the global arena to itself
// (quiesce). A call already under way when it began is not waited for:
// quiet makes a retry's success likely, ordering never depends on it. The
// caller holds no lock.
func (a *Arena) waitQuiet() {
	if a.quiet.Load() {
		a.reclaimMu.Lock()
		a.reclaimMu.Unlock()
	}
}

// reclaim (the caller quiesced the arena) synchronizes the device, then
// takes back into every arena the memory freed on other streams and
// returns every wholly free superblock to the global arena. When own (the list of an allocation of u units
// that found no room, or nil) is still in the engine and has no room for
// u units, it moves to own the superblock of another list that has
// (adopt). It reports whether an allocation may now succeed: it gave a
// superblock back or moved one, or the global arena has room for one.
func (a *Arena) reclaim(own *arenaList, u int) (progress bool, err error) {
	// Synchronize with every arena locked, so that no free is queued
	// between the synchronization and the draining below; the global
	// arena's lists settle what was freed on them before it.
	marks := a.global.SyncMarks()
	ls := a.eng.LockAll()
	if err := a.rt.DeviceSynchronize(); err != nil {
		streamorder.UnlockAll(ls)
		return false, cudaError(kindArena+": synchronizing to take memory back", err)
	}
	var give []*superblock
	for _, l := range ls {
		_ = a.drain(l, 0, false)
		for i := 0; i < len(l.sbs); {
			if sb := l.sbs[i]; sb.free == superblockUnits {
				l.disown(sb)
				a.windows[(sb.base-a.base)/superblockSize].Store(nil)
				give = append(give, sb)
				continue
			}
			i++
		}
	}
	adopted := false
	if own != nil && !own.hasRoom(u) {
		for _, l := range ls {
			if l == own { // locked, hence not retired
				adopted = a.adopt(ls, own, u)
				break
			}
		}
	}
	// Streams left with nothing (their superblocks given back above) go;
	// own stays (its allocation is about to use it).
	a.eng.Sweep(ls, own)
	streamorder.UnlockAll(ls)
	a.global.ApplySync(marks)
	var errs []error
	for _, sb := range give {
		errs = append(errs, a.global.Deallocate(DefaultStream, sb.base, superblockSize))
	}
	// Memory freed into the global arena on other streams is ordered for
	// every stream now (ApplySync): progress too.
	return len(give) > 0 || adopted || a.global.FreeBytes() >= superblockSize, errors.Join(errs...)
}

// adopt moves to own the superblock of another list that has the most
// free units among those with a free run of at least u units (false when
// there is none). A superblock belongs to the list of the stream that took
// it from the global arena until it is wholly free, and only that list
// allocates from it: without adopt, the lists of streams that were
// destroyed, or are idle, keep the free room of superblocks in which a few
// blocks are still live, and an arena whose superblocks are all lent runs
// out of memory with most of it free. Every list is locked (ls) and
// drained, and the device was synchronized since anything was freed into
// them, so their free units are idle for every stream. The superblock's
// live blocks are then freed into own like its other blocks (from another
// stream than own's, they queue).
func (a *Arena) adopt(ls []*arenaList, own *arenaList, u int) bool {
	var best *superblock
	var from *arenaList
	var bestRun int
	for _, l := range ls {
		if l == own {
			continue
		}
		for j, sb := range l.sbs {
			if int(l.runs[j]) < u || (best != nil && sb.free <= best.free) || sb.hasPending() {
				continue
			}
			run := sb.largestRun()
			l.runs[j] = int32(run) // runs[j] is a bound; make it exact
			if run >= u {
				best, from, bestRun = sb, l, run
			}
		}
	}
	if best == nil {
		return false
	}
	from.detach(best)
	own.attach(best, int32(bestRun))
	return true
}

// hasRoom reports whether one of l's superblocks has a free run of u
// units, making the hints it looks at exact. l.mu is held.
func (l *arenaList) hasRoom(u int) bool {
	for j, sb := range l.sbs {
		if int(l.runs[j]) >= u {
			l.runs[j] = int32(sb.largestRun())
			if int(l.runs[j]) >= u {
				return true
			}
		}
	}
	return false
}
