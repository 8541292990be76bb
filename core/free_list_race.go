//go:build race

package core

import "sync/atomic"

// Under the race detector the relaxed words are atomic (see
// free_list_norace.go).

type relaxedInt32 struct{ v atomic.Int32 }

func (r *relaxedInt32) Load() int32                    { return r.v.Load() }
func (r *relaxedInt32) Store(v int32)                  { r.v.Store(v) }
func (r *relaxedInt32) CompareAndSwap(o, n int32) bool { return r.v.CompareAndSwap(o, n) }

type relaxedUintptr struct{ v atomic.Uintptr }

func (r *relaxedUintptr) Load() uintptr   { return r.v.Load() }
func (r *relaxedUintptr) Store(v uintptr) { r.v.Store(v) }
func (r *relaxedUintptr) Add(d uintptr)   { r.v.Add(d) }

type relaxedUint64 struct{ v atomic.Uint64 }

func (r *relaxedUint64) Load() uint64                    { return r.v.Load() }
func (r *relaxedUint64) Store(v uint64)                  { r.v.Store(v) }
func (r *relaxedUint64) CompareAndSwap(o, n uint64) bool { return r.v.CompareAndSwap(o, n) }

type relaxedUint32 struct{ v atomic.Uint32 }

func (r *relaxedUint32) Load() uint32                    { return r.v.Load() }
func (r *relaxedUint32) Store(v uint32)                  { r.v.Store(v) }
func (r *relaxedUint32) CompareAndSwap(o, n uint32) bool { return r.v.CompareAndSwap(o, n) }
