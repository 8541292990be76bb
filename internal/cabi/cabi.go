// Package cabi holds the rules the Go code and the C code of rmmgo share,
// each written once, here: the status codes and resource kinds of the C
// ABI, the handle's layout, the largest request, and the per-thread
// cache's size classes. Go imports them; cabigen writes them into the C
// and Python sources that need them (capi/cabi_generated.h, the enums of
// include/rmmgo.h, python/rmmgo/_abi_generated.py), and its test fails
// when a written file is not current:
//
//	go generate ./internal/cabi
package cabi

//go:generate go run ./cabigen -root ../..

// Status is one rmm_status.
type Status struct {
	Name    string // the C enumerator, e.g. RMM_ERROR_OUT_OF_MEMORY
	Value   int
	Comment string // what it means, for the header
}

// Statuses are every rmm_status, in order. A value never changes: it is
// the ABI.
var Statuses = []Status{
	{"RMM_SUCCESS", 0, ""},
	{"RMM_ERROR_INVALID_ARGUMENT", 1, "NULL out-parameter, bad option, bad size"},
	{"RMM_ERROR_INVALID_HANDLE", 2, "forged, stale or released handle"},
	{"RMM_ERROR_OUT_OF_MEMORY", 3, "no room: RMM's out_of_memory"},
	{"RMM_ERROR_BAD_ALLOC", 4, "allocation failed otherwise: bad_alloc"},
	{"RMM_ERROR_BAD_ALIGNMENT", 5, "alignment not a power of two, or too big"},
	{"RMM_ERROR_INVALID_POINTER", 6, "memory not from this resource, or freed"},
	{"RMM_ERROR_INVALID_DEVICE", 7, "no such device"},
	{"RMM_ERROR_WRONG_DEVICE", 8, "resource used with another device current"},
	{"RMM_ERROR_NOT_SUPPORTED", 9, "the device or runtime lacks a feature"},
	{"RMM_ERROR_CUDA", 10, "a CUDA call failed; message names it"},
	{"RMM_ERROR_BACKEND_UNAVAILABLE", 11, "no CUDA runtime/driver/device found"},
	{"RMM_ERROR_OUT_OF_RANGE", 12, "e.g. popping the last statistics level"},
	{"RMM_ERROR_INTERNAL", 13, "a bug in rmmgo; the message says where"},
}

// The kind names: what core's resources return from Kind() and
// rmm_resource_kind_of's kinds are called.
const (
	KindCuda             = "cuda"
	KindManaged          = "managed"
	KindPinnedHost       = "pinned_host"
	KindSystem           = "system"
	KindSAMHeadroom      = "sam_headroom"
	KindCudaAsync        = "cuda_async"
	KindCudaAsyncView    = "cuda_async_view"
	KindCudaAsyncManaged = "cuda_async_managed"
	KindPool             = "pool"
	KindArena            = "arena"
	KindFixedSize        = "fixed_size"
	KindBinning          = "binning"
	KindExpandable       = "expandable"
	KindAligned          = "aligned"
	KindCallback         = "callback"
	KindFailureCallback  = "failure_callback"
	KindLimiting         = "limiting"
	KindLogging          = "logging"
	KindPrefetch         = "prefetch"
	KindStatistics       = "statistics"
	KindThreadSafe       = "thread_safe"
	KindTracking         = "tracking"
	KindExternal         = "external"
)

// Kind is one rmm_resource_kind.
type Kind struct {
	Enum    string // the C enumerator, e.g. RMM_RESOURCE_POOL
	Value   int
	Name    string // Kind*: core's Kind() of the resources it makes
	Group   string // the header's heading above it, when it starts a group
	Comment string
}

// Kinds are every rmm_resource_kind, in order. A value never changes: it
// is the ABI.
var Kinds = []Kind{
	{"RMM_RESOURCE_CUDA", 1, KindCuda, "base resources", "cudaMalloc"},
	{"RMM_RESOURCE_MANAGED", 2, KindManaged, "", "cudaMallocManaged"},
	{"RMM_RESOURCE_PINNED_HOST", 3, KindPinnedHost, "", "cudaHostAlloc"},
	{"RMM_RESOURCE_SYSTEM", 4, KindSystem, "", "host memory the device can use (HMM/ATS)"},
	{"RMM_RESOURCE_SAM_HEADROOM", 5, KindSAMHeadroom, "", "system memory, keeping a headroom free"},
	{"RMM_RESOURCE_CUDA_ASYNC", 6, KindCudaAsync, "", "cudaMallocFromPoolAsync on its own pool"},
	{"RMM_RESOURCE_CUDA_ASYNC_VIEW", 7, KindCudaAsyncView, "", "the same on a pool it does not own"},
	{"RMM_RESOURCE_CUDA_ASYNC_MANAGED", 8, KindCudaAsyncManaged, "", "stream-ordered managed memory"},
	{"RMM_RESOURCE_POOL", 20, KindPool, "sub-allocators", ""},
	{"RMM_RESOURCE_ARENA", 21, KindArena, "", ""},
	{"RMM_RESOURCE_FIXED_SIZE", 22, KindFixedSize, "", ""},
	{"RMM_RESOURCE_BINNING", 23, KindBinning, "", ""},
	{"RMM_RESOURCE_EXPANDABLE", 24, KindExpandable, "", "one reserved address range, mapped in granules (CUDA 12.5+)"},
	{"RMM_RESOURCE_ALIGNED", 40, KindAligned, "adaptors", ""},
	{"RMM_RESOURCE_CALLBACK", 41, KindCallback, "", ""},
	{"RMM_RESOURCE_FAILURE_CALLBACK", 42, KindFailureCallback, "", ""},
	{"RMM_RESOURCE_LIMITING", 43, KindLimiting, "", ""},
	{"RMM_RESOURCE_LOGGING", 44, KindLogging, "", ""},
	{"RMM_RESOURCE_PREFETCH", 45, KindPrefetch, "", ""},
	{"RMM_RESOURCE_STATISTICS", 46, KindStatistics, "", ""},
	{"RMM_RESOURCE_THREAD_SAFE", 47, KindThreadSafe, "", ""},
	{"RMM_RESOURCE_TRACKING", 48, KindTracking, "", ""},
	{"RMM_RESOURCE_EXTERNAL", 60, KindExternal,
		"a resource whose functions are the caller's (rmm_resource_create_external)", ""},
}

// KindName returns the name of the kind of value v, "" when there is none.
func KindName(v int) string {
	for _, k := range Kinds {
		if k.Value == v {
			return k.Name
		}
	}
	return ""
}

// A handle (capi's registry) is index | generation<<HandleIndexBits |
// tag<<(HandleIndexBits+HandleGenBits): its low HandleIndexBits bits are
// its registry slot, which C's mirror of the registry is indexed by.
const (
	HandleIndexBits = 24
	HandleGenBits   = 24
)

// StreamKeyFlag: the key by which core's stream-ordered resources and the
// C ABI's caches know a stream is its CUDA stream id | StreamKeyFlag (0
// for the legacy default stream), never its handle, which CUDA may give to
// a new stream once the stream is destroyed.
const StreamKeyFlag uint64 = 1 << 63

// MaxAllocation is the largest request a base resource passes to CUDA or
// to the C allocator: 2^57 bytes (128 PiB), the whole virtual address space
// of a CPU with 5-level page tables and more than any GPU addresses. Larger
// requests cannot succeed anywhere, so they fail with an out-of-memory
// error before any call; the C paths send them to Go, which says so.
const MaxAllocation uintptr = 1 << 57
