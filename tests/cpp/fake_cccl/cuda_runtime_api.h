/* fake_cccl: the CUDA types rmmgo.hpp's CCCL branch and the rmm/ headers meet,
 * and the few runtime functions the rmm/ headers name (error reporting);
 * tests/cpp/rmm_api_test.cpp defines those over librmmgo. Not CUDA. */
#ifndef FAKE_CCCL_CUDA_RUNTIME_API_H
#define FAKE_CCCL_CUDA_RUNTIME_API_H
typedef struct CUstream_st* cudaStream_t;
typedef struct CUmemPoolHandle_st* cudaMemPool_t;
typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorCudartUnloading = 4
} cudaError_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaCpuDeviceId ((int)-1)
#ifdef __cplusplus
extern "C" {
#endif
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError(void);
#ifdef __cplusplus
}
#endif
#endif
