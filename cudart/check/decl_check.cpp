// decl_check.cpp: proves package cudart's own CUDA declarations against the
// real CUDA headers. run.sh builds it with nvcc (host C++ only: the file is
// not a .cu, so CUDA's C++ wrappers with their overloads are not pulled in)
// and runs it; it prints every mismatch and exits 1 if there is any.
//
// What it checks, for the CUDA version whose headers it is compiled with:
//   - every constant of types.go and errors.go (decls_generated.h, written by
//     go generate from the list in cudart/internal/abi) has CUDA's value;
//   - every stand-in type of cuda_abi.h has the size of CUDA's type, and
//     every struct field we declare has CUDA's offset and size;
//   - every function rmmgo calls (the runtime's, resolved with dlsym, and the
//     driver's, cuStreamGetId and the cuMem* virtual memory calls, found
//     through cudaGetDriverEntryPointByVersion) has exactly the function-pointer type that
//     cuda_abi.h declares for it (abi_funcs_generated.h), with CUDA's own
//     types substituted for the stand-ins, and is not renamed by a macro (so
//     the symbol dlsym finds is the function the header means).
//
// Nothing here needs a GPU or links the CUDA runtime.

#include <cuda_runtime_api.h>
#include <cuda.h> // the driver functions we call: cuStreamGetId, virtual memory management

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

extern "C" {
#define RMMGO_ABI_USE_CUDA_TYPES 1
#include "cuda_abi.h"
}

static int checks;
static int failures;

static void fail(const char *what, const char *detail) {
	++failures;
	std::printf("FAIL %s: %s\n", what, detail);
}

static void check_eq(const char *what, long long cuda, long long ours) {
	++checks;
	if (cuda != ours) {
		char buf[128];
		std::snprintf(buf, sizeof buf, "CUDA has %lld, rmmgo declares %lld", cuda, ours);
		fail(what, buf);
	}
}

// Constants: the generated list.
static void check_const(const char *cname, long long cuda, long long ours, const char *goname) {
	++checks;
	if (cuda != ours) {
		char buf[160];
		std::snprintf(buf, sizeof buf, "CUDA has %lld, cudart.%s is %lld", cuda, goname, ours);
		fail(cname, buf);
	}
}

// Functions: the type must be exactly ours, and the name no macro.
static void check_func(const char *symbol, const char *expanded, bool same_type, const char *type) {
	++checks;
	if (std::strcmp(symbol, expanded) != 0) {
		char buf[160];
		std::snprintf(buf, sizeof buf, "the header renames it to %s; dlsym would find another function", expanded);
		fail(symbol, buf);
	}
	if (!same_type) {
		char buf[160];
		std::snprintf(buf, sizeof buf, "its type differs from cuda_abi.h's %s", type);
		fail(symbol, buf);
	}
}

#define RMMGO_STR(x) #x
#define RMMGO_XSTR(x) RMMGO_STR(x)

#define RMMGO_CHECK_CONST(cname, value, goname) \
	check_const(#cname, (long long)(cname), (long long)(value), goname);
#define RMMGO_CHECK_FUNC(symbol, type) \
	check_func(#symbol, RMMGO_XSTR(symbol), std::is_same<decltype(&symbol), type>::value, #type);

// Types and fields.
#define RMMGO_CHECK_SIZE(ours, cuda) check_eq("sizeof(" #cuda ")", (long long)sizeof(cuda), (long long)sizeof(ours));
#define RMMGO_CHECK_FIELD(ours, cuda, field)                                          \
	check_eq("offsetof(" #cuda ", " #field ")", (long long)offsetof(cuda, field),     \
		(long long)offsetof(ours, field));                                        \
	check_eq("sizeof(" #cuda "::" #field ")", (long long)sizeof(((cuda *)0)->field), \
		(long long)sizeof(((ours *)0)->field));

// A field that only some CUDA versions declare: checked where present.
#define RMMGO_FIELD_PROBE(field)                                                        \
	template <class T>                                                                 \
	static auto probe_##field(int) -> decltype((void)&T::field, (long long)0) {       \
		return (long long)offsetof(T, field);                                      \
	}                                                                                  \
	template <class T>                                                                 \
	static long long probe_##field(...) { return -1; }
RMMGO_FIELD_PROBE(maxSize)
RMMGO_FIELD_PROBE(usage)

#define RMMGO_CHECK_OPTIONAL_FIELD(ours, cuda, field)                                             \
	if (probe_##field<cuda>(0) >= 0) {                                                        \
		check_eq("offsetof(" #cuda ", " #field ")", probe_##field<cuda>(0),               \
			(long long)offsetof(ours, field));                                        \
	} else {                                                                                  \
		std::printf("note: " #cuda " has no " #field " in this CUDA: rmmgo writes 0 there\n"); \
	}

static void check_types() {
	// Enums are passed by value as 4-byte integers; handles as pointers.
	RMMGO_CHECK_SIZE(rmmgo_cudaError_t, cudaError_t)
	RMMGO_CHECK_SIZE(rmmgo_cudaDeviceAttr, enum cudaDeviceAttr)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemPoolAttr, enum cudaMemPoolAttr)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemcpyKind, enum cudaMemcpyKind)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemoryAdvise, enum cudaMemoryAdvise)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemLocationType, enum cudaMemLocationType)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemAllocationType, enum cudaMemAllocationType)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemAllocationHandleType, enum cudaMemAllocationHandleType)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemoryType, enum cudaMemoryType)
	RMMGO_CHECK_SIZE(rmmgo_cudaStream_t, cudaStream_t)
	RMMGO_CHECK_SIZE(rmmgo_cudaEvent_t, cudaEvent_t)
	RMMGO_CHECK_SIZE(rmmgo_cudaMemPool_t, cudaMemPool_t)

	RMMGO_CHECK_SIZE(rmmgo_cudaMemLocation, struct cudaMemLocation)
	RMMGO_CHECK_FIELD(rmmgo_cudaMemLocation, struct cudaMemLocation, type)
	RMMGO_CHECK_FIELD(rmmgo_cudaMemLocation, struct cudaMemLocation, id)

	RMMGO_CHECK_SIZE(rmmgo_cudaMemPoolProps, struct cudaMemPoolProps)
	RMMGO_CHECK_FIELD(rmmgo_cudaMemPoolProps, struct cudaMemPoolProps, allocType)
	RMMGO_CHECK_FIELD(rmmgo_cudaMemPoolProps, struct cudaMemPoolProps, handleTypes)
	RMMGO_CHECK_FIELD(rmmgo_cudaMemPoolProps, struct cudaMemPoolProps, location)
	RMMGO_CHECK_FIELD(rmmgo_cudaMemPoolProps, struct cudaMemPoolProps, win32SecurityAttributes)
	RMMGO_CHECK_OPTIONAL_FIELD(rmmgo_cudaMemPoolProps, struct cudaMemPoolProps, maxSize)
	RMMGO_CHECK_OPTIONAL_FIELD(rmmgo_cudaMemPoolProps, struct cudaMemPoolProps, usage)

	// The driver's virtual memory management.
	RMMGO_CHECK_SIZE(rmmgo_CUdeviceptr, CUdeviceptr)
	RMMGO_CHECK_SIZE(rmmgo_CUmemGenericAllocationHandle, CUmemGenericAllocationHandle)
	RMMGO_CHECK_SIZE(rmmgo_CUmemAllocationGranularity_flags, CUmemAllocationGranularity_flags)
	RMMGO_CHECK_SIZE(rmmgo_CUmemAccess_flags, CUmemAccess_flags)
	RMMGO_CHECK_SIZE(rmmgo_CUmemLocation, CUmemLocation)
	RMMGO_CHECK_FIELD(rmmgo_CUmemLocation, CUmemLocation, type)
	RMMGO_CHECK_FIELD(rmmgo_CUmemLocation, CUmemLocation, id)
	RMMGO_CHECK_SIZE(rmmgo_CUmemAllocationProp, CUmemAllocationProp)
	RMMGO_CHECK_FIELD(rmmgo_CUmemAllocationProp, CUmemAllocationProp, type)
	RMMGO_CHECK_FIELD(rmmgo_CUmemAllocationProp, CUmemAllocationProp, requestedHandleTypes)
	RMMGO_CHECK_FIELD(rmmgo_CUmemAllocationProp, CUmemAllocationProp, location)
	RMMGO_CHECK_FIELD(rmmgo_CUmemAllocationProp, CUmemAllocationProp, win32HandleMetaData)
	RMMGO_CHECK_FIELD(rmmgo_CUmemAllocationProp, CUmemAllocationProp, allocFlags)
	RMMGO_CHECK_SIZE(rmmgo_CUmemAccessDesc, CUmemAccessDesc)
	RMMGO_CHECK_FIELD(rmmgo_CUmemAccessDesc, CUmemAccessDesc, location)
	RMMGO_CHECK_FIELD(rmmgo_CUmemAccessDesc, CUmemAccessDesc, flags)

	// The runtime writes its own struct; ours must hold it.
	++checks;
	if (sizeof(rmmgo_cudaPointerAttributes) < sizeof(struct cudaPointerAttributes)) {
		char buf[128];
		std::snprintf(buf, sizeof buf, "CUDA's is %zu bytes, rmmgo's only %zu",
			sizeof(struct cudaPointerAttributes), sizeof(rmmgo_cudaPointerAttributes));
		fail("sizeof(struct cudaPointerAttributes)", buf);
	}
	RMMGO_CHECK_FIELD(rmmgo_cudaPointerAttributes, struct cudaPointerAttributes, type)
	RMMGO_CHECK_FIELD(rmmgo_cudaPointerAttributes, struct cudaPointerAttributes, device)
	RMMGO_CHECK_FIELD(rmmgo_cudaPointerAttributes, struct cudaPointerAttributes, devicePointer)
	RMMGO_CHECK_FIELD(rmmgo_cudaPointerAttributes, struct cudaPointerAttributes, hostPointer)
}

static void check_generated() {
#include "decls_generated.h"
}

int main() {
	std::printf("decl_check: rmmgo's CUDA declarations against the headers of CUDA %d.%d (CUDART_VERSION %d)\n",
		CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, CUDART_VERSION);
	check_types();
	check_generated();
	if (failures > 0) {
		std::printf("decl_check: %d of %d checks FAILED\n", failures, checks);
		return 1;
	}
	std::printf("decl_check: all %d checks passed\n", checks);
	return 0;
}
