// host-check only (scripts/rmm-cpp-suite/host-check.sh): not CUDA. The CUDA
// runtime calls RMM's tests make, over librmmgo on the simulated device:
// pointer attributes always say device memory, events synchronize the device.
#pragma once
#include <cuda_runtime_api.h>
#include <cstddef>
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDefault = 4 };
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes { cudaMemoryType type; int device; void* devicePointer; void* hostPointer; };
enum cudaDeviceAttr { cudaDevAttrPageableMemoryAccess = 88, cudaDevAttrPageableMemoryAccessUsesHostPageTables = 100, cudaDevAttrConcurrentManagedAccess = 89 };
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
typedef struct CUevent_st* cudaEvent_t;
#define cudaEventDisableTiming 0x02
extern "C" {
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int f);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int f = 0);
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaMemsetAsync(void* p, int v, std::size_t n, cudaStream_t s);
cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int* f);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p);
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int dev);
cudaError_t cudaDriverGetVersion(int* v);
cudaError_t cudaMalloc(void** p, std::size_t n);
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* d, const void* s, std::size_t n, cudaMemcpyKind);
cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDevice(int* d);
cudaError_t cudaDeviceSynchronize(void);
}
