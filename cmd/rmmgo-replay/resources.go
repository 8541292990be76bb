package main

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// resourceNames are the configurations -r accepts.
var resourceNames = []string{"pool", "arena", "binning", "cuda", "managed", "cuda_async", "fixed_size"}

// resourceConfig says how to build the resource a log is replayed against.
type resourceConfig struct {
	Name        string  // one of resourceNames
	InitialPool uintptr // pool (and binning's pool): initial size; core.SizeDefault: half the free memory
	MaximumPool uintptr // pool: maximum size; 0: none
	ArenaSize   uintptr // arena: global arena size; core.SizeDefault: half the free memory
	BlockSize   uintptr // fixed_size: block size; 0: 1 MiB
	Blocks      int     // fixed_size: blocks fetched at a time; 0: 128
	BinMinExp   int     // binning: smallest fixed-size bin, 2^BinMinExp bytes
	BinMaxExp   int     // binning: largest fixed-size bin, 2^BinMaxExp bytes
}

// largestFreeBlocker is what a sub-allocator offers when it can tell the
// largest block it could hand out without growing.
type largestFreeBlocker interface {
	LargestFreeBlock() uintptr
}

// replayResource is the resource under test and the probes the replay reads
// after each event.
type replayResource struct {
	top         core.Resource // what the replay allocates from
	description string
	// reserved reports the bytes the resource holds from the device.
	reserved func() (uint64, error)
	// largestFree reports the largest free block, when the resource can.
	largestFree func() uint64
	closers     []func() error // run in order by close
}

func (rr *replayResource) close() error {
	var errs []error
	for _, c := range rr.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// countingUpstream wraps the device resource in a Statistics adaptor, whose
// byte counter is what the sub-allocator above it has reserved.
func countingUpstream(rr *replayResource, base core.Resource) (*core.Statistics, error) {
	st, err := core.NewStatistics(base)
	if err != nil {
		return nil, err
	}
	rr.reserved = func() (uint64, error) {
		b, _ := st.Counters()
		return uint64(b.Value), nil
	}
	return st, nil
}

// probeLargestFree sets rr.largestFree when r can tell its largest free
// block.
func probeLargestFree(rr *replayResource, r core.Resource) {
	if lf, ok := r.(largestFreeBlocker); ok {
		rr.largestFree = func() uint64 { return uint64(lf.LargestFreeBlock()) }
	}
}

func sizeName(v uintptr) string {
	switch v {
	case core.SizeDefault:
		return "half the free memory"
	case 0:
		return "0 (grow on demand)"
	}
	return formatBytes(uint64(v))
}

// buildResource makes the resource cfg describes, on the calling thread's
// current device.
func buildResource(rt cudart.Runtime, cfg resourceConfig) (*replayResource, error) {
	rr := &replayResource{}
	cuda, err := core.NewCuda()
	if err != nil {
		return nil, err
	}
	switch cfg.Name {
	case "cuda", "managed":
		var base core.Resource = cuda
		if cfg.Name == "managed" {
			if base, err = core.NewManaged(); err != nil {
				return nil, err
			}
		}
		st, err := countingUpstream(rr, base)
		if err != nil {
			return nil, err
		}
		rr.top = st
		rr.description = cfg.Name + " (every allocation from the device)"
	case "pool", "binning":
		st, err := countingUpstream(rr, cuda)
		if err != nil {
			return nil, err
		}
		pool, err := core.NewPool(st, core.PoolOptions{InitialSize: cfg.InitialPool, MaximumSize: cfg.MaximumPool})
		if err != nil {
			return nil, err
		}
		rr.closers = append(rr.closers, pool.Close)
		probeLargestFree(rr, pool)
		maxName := "none"
		if cfg.MaximumPool != 0 && cfg.MaximumPool != core.SizeDefault {
			maxName = formatBytes(uint64(cfg.MaximumPool))
		}
		rr.top = pool
		rr.description = fmt.Sprintf("pool (initial %s, maximum %s) over cuda", sizeName(cfg.InitialPool), maxName)
		if cfg.Name == "binning" {
			bin, err := core.NewBinning(pool, cfg.BinMinExp, cfg.BinMaxExp)
			if err != nil {
				return nil, errors.Join(err, rr.close())
			}
			if c, ok := any(bin).(interface{ Close() error }); ok {
				rr.closers = append([]func() error{c.Close}, rr.closers...)
			}
			rr.top = bin
			rr.description = fmt.Sprintf("binning (fixed-size bins 2^%d..2^%d B) over %s", cfg.BinMinExp, cfg.BinMaxExp, rr.description)
		}
	case "arena":
		st, err := countingUpstream(rr, cuda)
		if err != nil {
			return nil, err
		}
		arena, err := core.NewArena(st, core.ArenaOptions{ArenaSize: cfg.ArenaSize})
		if err != nil {
			return nil, err
		}
		if c, ok := any(arena).(interface{ Close() error }); ok {
			rr.closers = append(rr.closers, c.Close)
		}
		probeLargestFree(rr, arena)
		rr.top = arena
		rr.description = fmt.Sprintf("arena (arena size %s) over cuda", sizeName(cfg.ArenaSize))
	case "fixed_size":
		st, err := countingUpstream(rr, cuda)
		if err != nil {
			return nil, err
		}
		fs, err := core.NewFixedSize(st, core.FixedSizeOptions{BlockSize: cfg.BlockSize, BlocksToPreallocate: cfg.Blocks})
		if err != nil {
			return nil, err
		}
		if c, ok := any(fs).(interface{ Close() error }); ok {
			rr.closers = append(rr.closers, c.Close)
		}
		probeLargestFree(rr, fs)
		rr.top = fs
		blocks := cfg.Blocks
		if blocks == 0 {
			blocks = 128
		}
		rr.description = fmt.Sprintf("fixed_size (blocks of %s, fetched %d at a time) over cuda", formatBytes(uint64(fs.BlockSize())), blocks)
	case "cuda_async":
		ca, err := core.NewCudaAsync(core.CudaAsyncOptions{})
		if err != nil {
			return nil, err
		}
		rr.closers = append(rr.closers, ca.Close)
		pool := ca.PoolHandle()
		rr.reserved = func() (uint64, error) {
			return rt.MemPoolGetAttribute(pool, cudart.MemPoolAttrReservedMemCurrent)
		}
		rr.top = ca
		rr.description = "cuda_async (a CUDA memory pool, reserved bytes read from the pool)"
	default:
		return nil, fmt.Errorf("unknown resource %q (want one of %v)", cfg.Name, resourceNames)
	}
	return rr, nil
}
