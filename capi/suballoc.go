package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"

	"github.com/rmmgo/rmmgo/core"
)

// constructMore makes the sub-allocators.
func constructMore(kind C.rmm_resource_kind, o *C.rmm_resource_options, upstream core.Resource) (core.Resource, error) {
	switch kind {
	case C.RMM_RESOURCE_POOL:
		return core.NewPool(upstream, core.PoolOptions{
			InitialSize: uintptr(o.initial_pool_size), // RMM_SIZE_DEFAULT is core.SizeDefault
			MaximumSize: uintptr(o.maximum_pool_size),
		})
	case C.RMM_RESOURCE_ARENA:
		return core.NewArena(upstream, core.ArenaOptions{
			ArenaSize:        uintptr(o.arena_size),
			DumpLogOnFailure: o.dump_log_on_failure != 0,
		})
	case C.RMM_RESOURCE_FIXED_SIZE:
		blocks, err := intOption("blocks_to_preallocate", o.blocks_to_preallocate, 0)
		if err != nil {
			return nil, err
		}
		return core.NewFixedSize(upstream, core.FixedSizeOptions{
			BlockSize:           sizeOption(o.block_size, 0),
			BlocksToPreallocate: blocks,
		})
	case C.RMM_RESOURCE_BINNING:
		return core.NewBinning(upstream, int(o.min_size_exponent), int(o.max_size_exponent))
	}
	return nil, fmt.Errorf("%w: unknown resource kind %d", core.ErrInvalidArgument, int(kind))
}
