//go:build !race

package relaxed

import "sync/atomic"

// Int32 is a relaxed int32.
type Int32 struct{ v int32 }

func (r *Int32) Load() int32                    { return r.v }
func (r *Int32) Store(v int32)                  { r.v = v }
func (r *Int32) CompareAndSwap(o, n int32) bool { return atomic.CompareAndSwapInt32(&r.v, o, n) }

// Uintptr is a relaxed uintptr.
type Uintptr struct{ v uintptr }

func (r *Uintptr) Load() uintptr   { return r.v }
func (r *Uintptr) Store(v uintptr) { r.v = v }
func (r *Uintptr) Add(d uintptr)   { r.v += d }

// Uint64 is a relaxed uint64.
type Uint64 struct{ v uint64 }

func (r *Uint64) Load() uint64   { return r.v }
func (r *Uint64) Store(v uint64) { r.v = v }
func (r *Uint64) CompareAndSwap(o, n uint64) bool {
	return atomic.CompareAndSwapUint64(&r.v, o, n)
}

// Uint32 is a relaxed uint32.
type Uint32 struct{ v uint32 }

func (r *Uint32) Load() uint32   { return r.v }
func (r *Uint32) Store(v uint32) { r.v = v }
func (r *Uint32) CompareAndSwap(o, n uint32) bool {
	return atomic.CompareAndSwapUint32(&r.v, o, n)
}
