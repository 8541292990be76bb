#include "cuda_shim.h"
#include <rmmgo.h>
#include <map>
#include <mutex>
static rmm_resource_t cuda() { static rmm_resource_t h = [] { rmm_resource_t r{}; rmm_resource_create(RMM_RESOURCE_CUDA, nullptr, &r); return r; }(); return h; }
static std::mutex mu; static std::map<void*, std::size_t> sizes;
static cudaError_t e(rmm_status s) { return s == RMM_SUCCESS ? cudaSuccess : (s == RMM_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cudaErrorInvalidValue); }
extern "C" {
const char* cudaGetErrorName(cudaError_t x) { return x == cudaSuccess ? "cudaSuccess" : x == cudaErrorInvalidValue ? "cudaErrorInvalidValue" : x == cudaErrorMemoryAllocation ? "cudaErrorMemoryAllocation" : "cudaErrorCudartUnloading"; }
const char* cudaGetErrorString(cudaError_t x) { return x == cudaSuccess ? "no error" : x == cudaErrorInvalidValue ? "invalid argument" : x == cudaErrorMemoryAllocation ? "out of memory" : "driver shutting down"; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaMalloc(void** p, std::size_t n) { auto s = rmm_allocate_sync(cuda(), n, 256, p); if (s == RMM_SUCCESS) { std::lock_guard l{mu}; sizes[*p] = n; } return e(s); }
cudaError_t cudaFree(void* p) { std::size_t n; { std::lock_guard l{mu}; n = sizes[p]; sizes.erase(p); } return e(rmm_deallocate_sync(cuda(), p, n, 256)); }
cudaError_t cudaMemcpy(void* d, const void* s, std::size_t n, cudaMemcpyKind) { auto st = rmm_memcpy(d, s, n, nullptr); rmm_device_synchronize(); return e(st); }
cudaError_t cudaStreamCreate(cudaStream_t* s) { rmm_stream_t r{}; auto st = rmm_stream_create(&r); *s = reinterpret_cast<cudaStream_t>(r); return e(st); }
cudaError_t cudaStreamDestroy(cudaStream_t s) { return e(rmm_stream_destroy(reinterpret_cast<rmm_stream_t>(s))); }
cudaError_t cudaSetDevice(int d) { return e(rmm_set_device(d)); }
cudaError_t cudaGetDevice(int* d) { return e(rmm_get_device(d)); }
cudaError_t cudaDeviceSynchronize(void) { return e(rmm_device_synchronize()); }
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) { *a = {cudaMemoryTypeDevice, 0, const_cast<void*>(p), nullptr}; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int) { *v = (attr == cudaDevAttrConcurrentManagedAccess) ? 1 : 0; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) { return e(rmm_driver_version(v)); }
cudaError_t cudaMemsetAsync(void* p, int v, std::size_t n, cudaStream_t s) { return e(rmm_memset(p, v, n, reinterpret_cast<rmm_stream_t>(s))); }
cudaError_t cudaStreamGetFlags(cudaStream_t, unsigned int* f) { *f = 0; return cudaSuccess; }
// events: the simulated device's ordering is kept by synchronizing the device
cudaError_t cudaEventCreate(cudaEvent_t* ev) { *ev = reinterpret_cast<cudaEvent_t>(new char); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* ev, unsigned int) { return cudaEventCreate(ev); }
cudaError_t cudaEventDestroy(cudaEvent_t ev) { delete reinterpret_cast<char*>(ev); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return e(rmm_device_synchronize()); }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return e(rmm_device_synchronize()); }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return e(rmm_device_synchronize()); }
cudaError_t cudaGetDeviceCount(int* n) { return e(rmm_get_device_count(n)); }
}
