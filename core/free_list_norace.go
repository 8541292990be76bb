//go:build !race

package core

import "sync/atomic"

// Relaxed shared words of the sub-allocators' free lists (see
// free_list.go). Every value they hold is written under a list lock, and
// every read whose result matters is ordered after that write by a lock or
// by the caller handing the memory over; the remaining reads are hints or
// neighbour checks that tolerate a stale value (a stale owner never equals
// the reader's own list). They compile to plain loads and stores, which on
// amd64 and arm64 never tear for aligned words: an atomic store would cost a
// full barrier (XCHG) several times per operation. Under the race detector
// they are atomic (free_list_race.go) so that it checks the rest.

type relaxedInt32 struct{ v int32 }

func (r *relaxedInt32) Load() int32                    { return r.v }
func (r *relaxedInt32) Store(v int32)                  { r.v = v }
func (r *relaxedInt32) CompareAndSwap(o, n int32) bool { return atomic.CompareAndSwapInt32(&r.v, o, n) }

type relaxedUintptr struct{ v uintptr }

func (r *relaxedUintptr) Load() uintptr   { return r.v }
func (r *relaxedUintptr) Store(v uintptr) { r.v = v }
func (r *relaxedUintptr) Add(d uintptr)   { r.v += d }

type relaxedUint64 struct{ v uint64 }

func (r *relaxedUint64) Load() uint64   { return r.v }
func (r *relaxedUint64) Store(v uint64) { r.v = v }
func (r *relaxedUint64) CompareAndSwap(o, n uint64) bool {
	return atomic.CompareAndSwapUint64(&r.v, o, n)
}

type relaxedUint32 struct{ v uint32 }

func (r *relaxedUint32) Load() uint32   { return r.v }
func (r *relaxedUint32) Store(v uint32) { r.v = v }
func (r *relaxedUint32) CompareAndSwap(o, n uint32) bool {
	return atomic.CompareAndSwapUint32(&r.v, o, n)
}
