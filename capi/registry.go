package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/internal/cabi"
)

// The registry: one per process, it maps the opaque handles C callers hold
// to resources.
//
// A handle is a 64-bit number, never a pointer:
//
//	bits 63..48  tag: a random non-zero number chosen when the process starts
//	bits 47..24  generation of the slot (1..2^24-1, bumped when the slot is freed)
//	bits 23..0   slot index (slot 0 is never used)
//
// The tag makes a forged or corrupted value unlikely to name any slot, and
// puts every handle far above any address a program could dereference. A
// lookup checks the tag, the index range, that the slot is live and that
// its generation matches, using atomic loads only: the allocation hot path
// takes no lock. Slots live in fixed chunks that never move; the directory
// of chunks is published atomically and copied when it grows.
//
// Each live slot holds an entry with a reference count. Creating a
// resource, retaining a handle and every getter add a reference; the last
// release frees the slot (later lookups of the handle fail), closes the
// resource when the C API made it and it is an io.Closer, and then releases
// the references the entry holds on other handles (an adaptor's upstream,
// a binning resource's bins).
//
// Each resource has at most one live handle: a map from resource to entry
// gives the same handle back for the same resource, so a resource set
// current from C is seen through the same handle by every getter.

const (
	indexBits = cabi.HandleIndexBits
	genBits   = cabi.HandleGenBits
	tagShift  = indexBits + genBits
	indexMask = 1<<indexBits - 1
	genMask   = 1<<genBits - 1

	chunkBits = 10
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1

	maxSlots = 1 << indexBits
)

// errInvalidHandle is the error of a lookup that failed.
var errInvalidHandle = errors.New("invalid handle")

// entry is one live handle.
type entry struct {
	res    core.Resource
	handle uintptr
	index  uint32
	gen    uint32
	refs   atomic.Int64
	// owned: the C API made the resource, so the last release closes it.
	owned bool
	// device current when the C API made the resource; -1 when unknown.
	device int

	mu   sync.Mutex // guards deps
	deps []*entry   // references this entry holds, released after it closes
}

type chunk [chunkSize]atomic.Pointer[entry]

type directory struct {
	chunks []*chunk
}

// registry maps handles to entries.
type registry struct {
	tag uintptr
	dir atomic.Pointer[directory]

	mu    sync.Mutex // guards everything below, and every change of a slot
	gens  []uint32   // next generation of each slot ever used
	free  []uint32   // indices of free slots
	next  uint32     // first index never used
	byRes sync.Map   // core.Resource -> *entry; written under mu
}

// reg is the process's registry.
var reg = newRegistry()

func newRegistry() *registry {
	var b [2]byte
	tag := uintptr(0x5a17) // used only if the system has no randomness
	if _, err := rand.Read(b[:]); err == nil {
		tag = uintptr(binary.LittleEndian.Uint16(b[:]))
	}
	if tag == 0 {
		tag = 0x5a17
	}
	r := &registry{tag: tag, next: 1}
	r.dir.Store(&directory{})
	return r
}

// handleOf builds the handle of slot index with generation gen.
func (r *registry) handleOf(index, gen uint32) uintptr {
	return r.tag<<tagShift | uintptr(gen)<<indexBits | uintptr(index)
}

// lookup returns the live entry of handle h. It takes no lock and never
// follows h: a forged, stale or released handle gives ok == false.
func (r *registry) lookup(h uintptr) (*entry, bool) {
	if h>>tagShift != r.tag {
		return nil, false
	}
	index := uint32(h & indexMask)
	d := r.dir.Load()
	ci := index >> chunkBits
	if ci >= uint32(len(d.chunks)) {
		return nil, false
	}
	e := d.chunks[ci][index&chunkMask].Load()
	if e == nil || e.handle != h || e.refs.Load() <= 0 {
		return nil, false
	}
	return e, true
}

// get is lookup with an error that says what was wrong with h.
func (r *registry) get(h uintptr) (*entry, error) {
	if e, ok := r.lookup(h); ok {
		return e, nil
	}
	if h == 0 {
		return nil, fmt.Errorf("%w: the handle is NULL", errInvalidHandle)
	}
	return nil, fmt.Errorf("%w: %#x is not a live resource handle (released, never made, or corrupted)", errInvalidHandle, h)
}

// tryRetain adds a reference to e unless its count already reached zero.
func (e *entry) tryRetain() bool {
	for {
		n := e.refs.Load()
		if n <= 0 {
			return false
		}
		if e.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// retain adds a reference to the live handle h.
func (r *registry) retain(h uintptr) error {
	e, err := r.get(h)
	if err != nil {
		return err
	}
	if !e.tryRetain() {
		return fmt.Errorf("%w: %#x was released while being retained", errInvalidHandle, h)
	}
	return nil
}

// release gives back one reference to the live handle h. The error is that
// of a failed lookup or of closing the resource (the handle is gone then
// all the same).
func (r *registry) release(h uintptr) error {
	e, err := r.get(h)
	if err != nil {
		return err
	}
	for {
		n := e.refs.Load()
		if n <= 0 {
			return fmt.Errorf("%w: %#x was already released", errInvalidHandle, h)
		}
		if e.refs.CompareAndSwap(n, n-1) {
			if n == 1 {
				return r.finalize(e)
			}
			return nil
		}
	}
}

// releaseEntry gives back a reference held on e itself (deps, per-device
// slots, framework allocations).
func (r *registry) releaseEntry(e *entry) error {
	if n := e.refs.Add(-1); n == 0 {
		return r.finalize(e)
	} else if n < 0 {
		// Never happens: references held on entries are counted.
		panic(fmt.Sprintf("registry: handle %#x released below zero", e.handle))
	}
	return nil
}

// finalize frees e's slot after its last reference went, closes the
// resource if the C API made it, and releases what e held.
//
// Calls that looked the handle up before the slot was freed may still be
// inside the resource: the resources are safe to close under them (those
// calls finish or fail with core.ErrClosed, which the C API reports as an
// invalid handle). e stays the resource's entry in byRes until the close
// returned, so that handleFor never makes a new handle for a resource
// being closed.
func (r *registry) finalize(e *entry) error {
	// The thread caches let go of e's blocks before anything else, and
	// the C path stops serving e.
	mirrorRetire(e)
	r.mu.Lock()
	d := r.dir.Load()
	d.chunks[e.index>>chunkBits][e.index&chunkMask].Store(nil)
	g := (r.gens[e.index] + 1) & genMask
	if g == 0 {
		g = 1
	}
	r.gens[e.index] = g
	r.free = append(r.free, e.index)
	r.mu.Unlock()

	var err error
	if c, ok := e.res.(io.Closer); ok && e.owned {
		if cerr := c.Close(); cerr != nil {
			err = fmt.Errorf("closing the %s resource: %w", e.res.Kind(), cerr)
		}
	}
	if comparable(e.res) {
		r.mu.Lock()
		r.byRes.CompareAndDelete(e.res, e)
		r.mu.Unlock()
	}
	e.mu.Lock()
	deps := e.deps
	e.deps = nil
	e.mu.Unlock()
	for _, d := range deps {
		if derr := r.releaseEntry(d); derr != nil && err == nil {
			err = derr
		}
	}
	return err
}

// comparable reports whether res can be a map key (every resource that is
// a pointer can; a Go caller's value type holding a slice cannot).
func comparable(res core.Resource) bool {
	return res != nil && reflect.TypeOf(res).Comparable()
}

// add registers res, which the caller made (owned) or found, and returns
// its entry with one reference. deps are references the new entry takes
// over: they are released when it goes.
func (r *registry) add(res core.Resource, owned bool, device int, deps []*entry) (*entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addLocked(res, owned, device, deps)
}

func (r *registry) addLocked(res core.Resource, owned bool, device int, deps []*entry) (*entry, error) {
	var index uint32
	if n := len(r.free); n > 0 {
		index = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		if r.next >= maxSlots {
			return nil, fmt.Errorf("%w: too many live resource handles (%d)", core.ErrOutOfMemory, maxSlots-1)
		}
		index = r.next
		r.next++
		for uint32(len(r.gens)) <= index {
			r.gens = append(r.gens, 1)
		}
		d := r.dir.Load()
		if int(index>>chunkBits) >= len(d.chunks) {
			nd := &directory{chunks: make([]*chunk, len(d.chunks)+1, 2*len(d.chunks)+1)}
			copy(nd.chunks, d.chunks)
			nd.chunks[len(d.chunks)] = new(chunk)
			r.dir.Store(nd)
		}
	}
	gen := r.gens[index]
	e := &entry{
		res:    res,
		handle: r.handleOf(index, gen),
		index:  index,
		gen:    gen,
		owned:  owned,
		device: device,
		deps:   deps,
	}
	e.refs.Store(1)
	mirrorPublish(e)
	r.dir.Load().chunks[index>>chunkBits][index&chunkMask].Store(e)
	if comparable(res) {
		r.byRes.Store(res, e)
	}
	return e, nil
}

// handleFor returns res's entry with a new reference, making a non-owning
// entry for a resource the C side has not seen (the initial per-device
// resource, or one Go code set). The same resource always gets the same
// handle while it has one. A resource the C API made whose last handle was
// released is being closed: it gets no new handle (errInvalidHandle).
func (r *registry) handleFor(res core.Resource) (*entry, error) {
	if res == nil {
		return nil, fmt.Errorf("%w: no resource", core.ErrInvalidArgument)
	}
	cmp := comparable(res)
	if cmp {
		if e, found, err := r.retainFor(res); found {
			return e, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cmp {
		if e, found, err := r.retainFor(res); found {
			return e, err
		}
	}
	return r.addLocked(res, false, -1, nil)
}

// retainFor takes a new reference to res's entry. found is false when res
// has none, or only a dying one that did not own res (a new one may be
// made: the resource stays open).
func (r *registry) retainFor(res core.Resource) (e *entry, found bool, err error) {
	v, ok := r.byRes.Load(res)
	if !ok {
		return nil, false, nil
	}
	e = v.(*entry)
	if e.tryRetain() {
		return e, true, nil
	}
	if e.owned {
		return nil, true, fmt.Errorf("%w: the %s resource's last handle %#x was released: it is being closed", errInvalidHandle, res.Kind(), e.handle)
	}
	return nil, false, nil
}

// addDep makes e hold a reference on d (taken by the caller) until e goes.
func (e *entry) addDep(d *entry) {
	e.mu.Lock()
	e.deps = append(e.deps, d)
	e.mu.Unlock()
}

// live reports the number of live handles (for tests).
func (r *registry) live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.next) - 1 - len(r.free)
}
