package core

import (
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/cudart"
)

// SAMHeadroom allocates system memory (as System does) and places it
// through system allocated memory (SAM) hints so that a headroom of device
// memory stays free for others, like RMM's sam_headroom_memory_resource.
//
// For each allocation of n bytes it reads the device's free memory f and
// advises the first AlignDown(min(max(f-headroom, 0), n), 256) bytes to
// prefer the device and the rest to prefer the host
// (cudaMemAdviseSetPreferredLocation). The memory is device and host
// accessible and needs a device with pageable memory access. Like System,
// Deallocate synchronizes the stream before freeing, and a double free is an
// error wrapping ErrInvalidPointer (see live_table.go).
//
// The hints name the device current when the resource was made, which must
// be current when it allocates. Two SAMHeadroom resources are equal when
// they keep the same headroom.
type SAMHeadroom struct {
	base
	headroom uintptr
}

// NewSAMHeadroom returns a SAMHeadroom resource for the current device that
// keeps headroom bytes of device memory free. It fails with an error
// wrapping ErrNotSupported when the device lacks pageable memory access.
func NewSAMHeadroom(headroom uintptr) (*SAMHeadroom, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newSAMHeadroom(r, headroom)
}

// newSAMHeadroom is NewSAMHeadroom on runtime r.
func newSAMHeadroom(r cudart.Runtime, headroom uintptr) (*SAMHeadroom, error) {
	b, err := newBase(kindSAMHeadroom, r)
	if err != nil {
		return nil, err
	}
	if err := checkPageableAccess(kindSAMHeadroom, r, b.dev); err != nil {
		return nil, err
	}
	return &SAMHeadroom{base: b, headroom: headroom}, nil
}

// Headroom reports the bytes of device memory the resource keeps free.
func (s *SAMHeadroom) Headroom() uintptr { return s.headroom }

// deviceShare is how many of bytes go to the device when free bytes of
// device memory are free: AlignDown(min(max(free-headroom, 0), bytes), 256).
func (s *SAMHeadroom) deviceShare(free uint64, bytes uintptr) uintptr {
	var room uint64
	if free > uint64(s.headroom) {
		room = free - uint64(s.headroom)
	}
	if room > uint64(bytes) {
		room = uint64(bytes)
	}
	return addr.AlignDown(uintptr(room), DefaultAlignment)
}

// Allocate returns bytes of system memory, advised as the type describes.
func (s *SAMHeadroom) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !requestOK(bytes, alignment) {
		return 0, rejectRequest(kindSAMHeadroom, bytes, alignment)
	}
	if err := s.checkDevice(kindSAMHeadroom); err != nil {
		return 0, err
	}
	p, err := samHeap.alloc(kindSAMHeadroom, bytes, s.headroom)
	if err != nil {
		return 0, explainOOM(s, stream, bytes, alignment, err)
	}
	if err := s.advise(p, bytes); err != nil {
		// Nothing was enqueued on any stream: free at once.
		if ferr := samHeap.free(kindSAMHeadroom, s.rt, DefaultStream, p, bytes, s.headroom); ferr != nil {
			return 0, fmt.Errorf("%w (and freeing the memory failed: %v)", err, ferr)
		}
		return 0, err
	}
	return p, nil
}

func (s *SAMHeadroom) advise(p, bytes uintptr) error {
	free, _, err := s.rt.MemGetInfo()
	if err != nil {
		return cudaError(kindSAMHeadroom+": reading free device memory", err)
	}
	onDevice := s.deviceShare(free, bytes)
	if onDevice > 0 {
		if err := s.rt.MemAdvise(p, onDevice, cudart.MemAdviseSetPreferredLocation, cudart.DeviceLocation(s.dev)); err != nil {
			return cudaError(fmt.Sprintf("%s: advising %d bytes to device %d", kindSAMHeadroom, onDevice, s.dev), err)
		}
	}
	if rest := bytes - onDevice; rest > 0 {
		if err := s.rt.MemAdvise(p+onDevice, rest, cudart.MemAdviseSetPreferredLocation, cudart.HostLocation()); err != nil {
			return cudaError(fmt.Sprintf("%s: advising %d bytes to the host", kindSAMHeadroom, rest), err)
		}
	}
	return nil
}

// Deallocate synchronizes stream, then frees ptr. Memory the resource did
// not hand out (nor one equal to it: keeping the same headroom), or already
// freed, gives an error wrapping ErrInvalidPointer; bytes other than were
// allocated, an error wrapping ErrInvalidArgument.
func (s *SAMHeadroom) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if ptr != 0 && !freeAlignmentOK(alignment) {
		return errFreeAlignment(kindSAMHeadroom, ptr, alignment)
	}
	return samHeap.free(kindSAMHeadroom, s.rt, stream, ptr, bytes, s.headroom)
}

// AllocateSync is Allocate.
func (s *SAMHeadroom) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return s.Allocate(DefaultStream, bytes, alignment)
}

// DeallocateSync is Deallocate on the default stream.
func (s *SAMHeadroom) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return s.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible and HostAccessible.
func (s *SAMHeadroom) Properties() Properties { return DeviceAccessible | HostAccessible }

// Equal reports whether other is a *SAMHeadroom keeping the same headroom.
func (s *SAMHeadroom) Equal(other Resource) bool {
	o, ok := other.(*SAMHeadroom)
	return ok && (o == s || o.headroom == s.headroom)
}

// Kind returns "sam_headroom".
func (s *SAMHeadroom) Kind() string { return kindSAMHeadroom }
