package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// resourceNames are the configurations -r accepts.
var resourceNames = []string{"pool", "arena", "binning", "cuda", "managed", "cuda_async", "fixed_size", "expandable"}

// adaptorNames are the adaptors -adaptor stacks on top, innermost first.
var adaptorNames = []string{"statistics", "tracking", "limiting", "aligned", "thread_safe"}

// resourceConfig says how to build the resource a log is replayed against.
type resourceConfig struct {
	Name        string  // one of resourceNames
	Label       string  // how tables name it (the -r item as written); Name when empty
	InitialPool uintptr // pool (and binning's pool): initial size; core.SizeDefault: half the free memory
	MaximumPool uintptr // pool and expandable: maximum size; 0: none
	// Threshold is the release threshold of expandable and cuda_async:
	// core.SizeDefault keeps everything; 0 keeps nothing (expandable: gives
	// its free granules back before each growth).
	Threshold   uintptr
	ArenaSize   uintptr  // arena: global arena size; core.SizeDefault: half the free memory
	ArenaFactor float64  // arena: when > 0, the size is this times the log's peak live (ArenaSize ignored)
	BlockSize   uintptr  // fixed_size: block size; 0: 1 MiB
	Blocks      int      // fixed_size: blocks fetched at a time; 0: 128
	BinMinExp   int      // binning: smallest fixed-size bin, 2^BinMinExp bytes
	BinMaxExp   int      // binning: largest fixed-size bin, 2^BinMaxExp bytes
	Adaptors    []string // adaptors on top, innermost first (adaptorNames)
	Limit       uintptr  // limiting: the limit; 0: the device's memory
	Align       uintptr  // aligned: the alignment (threshold 0)
}

func (c resourceConfig) label() string {
	l := c.Label
	if l == "" {
		l = c.Name
	}
	if len(c.Adaptors) > 0 {
		l += "+" + strings.Join(c.Adaptors, "+")
	}
	return l
}

// benchTraces is the -r list "traces" stands for: every sub-allocator on
// the real-workload logs of bench/traces (make bench-traces, and the GPU
// bundle's bench.sh traces). Pools start small (RMM's default of half the
// device says nothing about growth) and at 1 GiB (how the logs were
// recorded); the arena, which never grows, gets a quarter more than the
// log's peak live; fixed_size only where its blocks hold every request.
const benchTraces = "pool:initial=0,pool:initial=1GiB,binning:initial=0,arena:arena=1.25x,expandable,expandable:threshold=0,cuda_async,fixed_size"

// parseResourceList reads -r: a comma-separated list of NAME or
// NAME:KEY=VALUE:KEY=VALUE..., each KEY overriding, for that resource, the
// flag of the same name (initial, max, threshold, arena, block, blocks,
// bin-min, bin-max); or "traces" for benchTraces. base holds the flags'
// values.
func parseResourceList(list string, base resourceConfig) ([]resourceConfig, error) {
	var out []resourceConfig
	if strings.Contains(","+list+",", ",traces,") {
		list = strings.Replace(list, "traces", benchTraces, 1)
	}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		c := base
		c.Name, c.Label = parts[0], item
		if !isOneOf(c.Name, resourceNames) {
			return nil, fmt.Errorf("-r %q: want one of %s", c.Name, strings.Join(resourceNames, ", "))
		}
		for _, kv := range parts[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("-r %q: %q is not KEY=VALUE", item, kv)
			}
			if err := c.set(k, v); err != nil {
				return nil, fmt.Errorf("-r %q: %w", item, err)
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("-r names no resource")
	}
	return out, nil
}

// set applies one KEY=VALUE of a -r item.
func (c *resourceConfig) set(k, v string) error {
	size := func(dst *uintptr) error {
		var f sizeFlag
		if err := f.Set(v); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		*dst = f.v
		return nil
	}
	integer := func(dst *int) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		*dst = n
		return nil
	}
	switch k {
	case "initial":
		return size(&c.InitialPool)
	case "max":
		return size(&c.MaximumPool)
	case "threshold":
		return size(&c.Threshold)
	case "arena", "size":
		c.ArenaFactor = 0
		if f, ok := parseFactor(v); ok {
			c.ArenaFactor = f
			return nil
		}
		return size(&c.ArenaSize)
	case "block":
		return size(&c.BlockSize)
	case "blocks":
		return integer(&c.Blocks)
	case "bin-min":
		return integer(&c.BinMinExp)
	case "bin-max":
		return integer(&c.BinMaxExp)
	}
	return fmt.Errorf("unknown key %q (want initial, max, threshold, arena, block, blocks, bin-min, bin-max)", k)
}

// parseFactor reads "1.25x": a size relative to the log's peak live.
func parseFactor(v string) (float64, bool) {
	s, ok := strings.CutSuffix(strings.TrimSpace(v), "x")
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func isOneOf(s string, list []string) bool {
	for _, n := range list {
		if n == s {
			return true
		}
	}
	return false
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
	// stats is the statistics adaptor of -adaptor statistics, if any.
	stats   *core.Statistics
	closers []func() error // run in order by close
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
// current device, with cfg's adaptors on top. peakLive is the log's peak
// live bytes, for sizes given relative to it (-arena 1.25x).
func buildResource(rt cudart.Runtime, cfg resourceConfig, peakLive uint64) (*replayResource, error) {
	rr, err := buildBase(rt, cfg, peakLive)
	if err != nil {
		return nil, err
	}
	if err := rr.addAdaptors(rt, cfg); err != nil {
		return nil, errors.Join(err, rr.close())
	}
	return rr, nil
}

// addAdaptors stacks cfg.Adaptors on rr.top, innermost first.
func (rr *replayResource) addAdaptors(rt cudart.Runtime, cfg resourceConfig) error {
	for _, a := range cfg.Adaptors {
		var (
			top core.Resource
			err error
		)
		switch a {
		case "statistics":
			var st *core.Statistics
			st, err = core.NewStatistics(rr.top)
			if err == nil {
				rr.stats = st
			}
			top = st
		case "tracking":
			top, err = core.NewTracking(rr.top, false)
		case "limiting":
			limit := cfg.Limit
			if limit == 0 {
				_, total, e := rt.MemGetInfo()
				if e != nil {
					return e
				}
				limit = uintptr(total)
			}
			top, err = core.NewLimiting(rr.top, limit, core.DefaultAlignment)
			a = "limiting (" + formatBytes(uint64(limit)) + ")"
		case "aligned":
			align := cfg.Align
			if align == 0 {
				align = 4096
			}
			top, err = core.NewAligned(rr.top, align, 0)
			a = "aligned (" + strconv.FormatUint(uint64(align), 10) + " B)"
		case "thread_safe":
			top, err = core.NewThreadSafe(rr.top)
		default:
			return fmt.Errorf("unknown adaptor %q (want one of %s)", a, strings.Join(adaptorNames, ", "))
		}
		if err != nil {
			return err
		}
		if c, ok := top.(interface{ Close() error }); ok {
			rr.closers = append([]func() error{c.Close}, rr.closers...)
		}
		rr.top = top
		rr.description = a + " over " + rr.description
	}
	return nil
}

func buildBase(rt cudart.Runtime, cfg resourceConfig, peakLive uint64) (*replayResource, error) {
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
		size := cfg.ArenaSize
		if cfg.ArenaFactor > 0 {
			size = max(1<<20, uintptr(math.Ceil(cfg.ArenaFactor*float64(peakLive)/256))*256)
		}
		arena, err := core.NewArena(st, core.ArenaOptions{ArenaSize: size})
		if err != nil {
			return nil, err
		}
		if c, ok := any(arena).(interface{ Close() error }); ok {
			rr.closers = append(rr.closers, c.Close)
		}
		probeLargestFree(rr, arena)
		rr.top = arena
		rr.description = fmt.Sprintf("arena (arena size %s) over cuda", sizeName(size))
		if cfg.ArenaFactor > 0 {
			rr.description = fmt.Sprintf("arena (arena size %s, %gx the log's peak live) over cuda", formatBytes(uint64(size)), cfg.ArenaFactor)
		}
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
	case "expandable":
		maxSize, threshold := cfg.MaximumPool, cfg.Threshold
		thName := "none (keeps what it maps)"
		switch threshold {
		case core.SizeDefault:
			threshold = 0 // core's "none"
		case 0:
			threshold = core.DefaultAlignment // keep nothing: core's smallest threshold (as the C ABI spells 0)
			thName = "0 (gives free granules back before each growth)"
		default:
			thName = formatBytes(uint64(threshold))
		}
		ex, err := core.NewExpandable(core.ExpandableOptions{MaximumSize: maxSize, ReleaseThreshold: threshold})
		if err != nil {
			return nil, err
		}
		rr.closers = append(rr.closers, ex.Close)
		rr.reserved = func() (uint64, error) { return uint64(ex.PoolSize()), nil }
		probeLargestFree(rr, ex)
		rr.top = ex
		maxName := "none"
		if maxSize != 0 && maxSize != core.SizeDefault {
			maxName = formatBytes(uint64(maxSize))
		}
		rr.description = fmt.Sprintf("expandable (maximum %s, release threshold %s, granule %s; reserved: memory mapped)", maxName, thName, formatBytes(uint64(ex.Granularity())))
	case "cuda_async":
		var opts core.CudaAsyncOptions
		thName := "none (keeps everything)"
		switch cfg.Threshold {
		case core.SizeDefault:
		case 0:
			opts.ReleaseThreshold = 1 // core's 0 keeps everything: 1 byte keeps nothing whole
			thName = "0"
		default:
			opts.ReleaseThreshold = uint64(cfg.Threshold)
			thName = formatBytes(uint64(cfg.Threshold))
		}
		ca, err := core.NewCudaAsync(opts)
		if err != nil {
			return nil, err
		}
		rr.closers = append(rr.closers, ca.Close)
		pool := ca.PoolHandle()
		rr.reserved = func() (uint64, error) {
			return rt.MemPoolGetAttribute(pool, cudart.MemPoolAttrReservedMemCurrent)
		}
		rr.top = ca
		rr.description = "cuda_async (a CUDA memory pool, release threshold " + thName + ", reserved bytes read from the pool)"
	default:
		return nil, fmt.Errorf("unknown resource %q (want one of %v)", cfg.Name, resourceNames)
	}
	return rr, nil
}
