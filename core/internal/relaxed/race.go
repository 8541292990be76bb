//go:build race

package relaxed

import "sync/atomic"

// Under the race detector the words are atomic (see the package comment).

// Int32 is a relaxed int32.
type Int32 struct{ v atomic.Int32 }

func (r *Int32) Load() int32                    { return r.v.Load() }
func (r *Int32) Store(v int32)                  { r.v.Store(v) }
func (r *Int32) CompareAndSwap(o, n int32) bool { return r.v.CompareAndSwap(o, n) }

// Uintptr is a relaxed uintptr.
type Uintptr struct{ v atomic.Uintptr }

func (r *Uintptr) Load() uintptr   { return r.v.Load() }
func (r *Uintptr) Store(v uintptr) { r.v.Store(v) }
func (r *Uintptr) Add(d uintptr)   { r.v.Add(d) }

// Uint64 is a relaxed uint64.
type Uint64 struct{ v atomic.Uint64 }

func (r *Uint64) Load() uint64                    { return r.v.Load() }
func (r *Uint64) Store(v uint64)                  { r.v.Store(v) }
func (r *Uint64) CompareAndSwap(o, n uint64) bool { return r.v.CompareAndSwap(o, n) }

// Uint32 is a relaxed uint32.
type Uint32 struct{ v atomic.Uint32 }

func (r *Uint32) Load() uint32                    { return r.v.Load() }
func (r *Uint32) Store(v uint32)                  { r.v.Store(v) }
func (r *Uint32) CompareAndSwap(o, n uint32) bool { return r.v.CompareAndSwap(o, n) }
