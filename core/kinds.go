package core

import "github.com/rmmgo/rmmgo/internal/cabi"

// The resources' Kind() names: the C ABI's kind names (internal/cabi, one
// definition for Go, C and Python). arena.go and fixed_size.go name theirs
// as well; kinds_test.go checks that they agree.
const (
	kindCuda             = cabi.KindCuda
	kindManaged          = cabi.KindManaged
	kindPinnedHost       = cabi.KindPinnedHost
	kindSystem           = cabi.KindSystem
	kindSAMHeadroom      = cabi.KindSAMHeadroom
	kindCudaAsync        = cabi.KindCudaAsync
	kindCudaAsyncView    = cabi.KindCudaAsyncView
	kindCudaAsyncManaged = cabi.KindCudaAsyncManaged
	kindPool             = cabi.KindPool
	kindBinning          = cabi.KindBinning
	kindExpandable       = cabi.KindExpandable
	kindAligned          = cabi.KindAligned
	kindCallback         = cabi.KindCallback
	kindFailureCallback  = cabi.KindFailureCallback
	kindLimiting         = cabi.KindLimiting
	kindLogging          = cabi.KindLogging
	kindPrefetch         = cabi.KindPrefetch
	kindStatistics       = cabi.KindStatistics
	kindThreadSafe       = cabi.KindThreadSafe
	kindTracking         = cabi.KindTracking
	kindExternal         = cabi.KindExternal
)
