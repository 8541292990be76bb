/* fake_cccl: the two CUDA types rmmgo.hpp's CCCL branch meets. Not CUDA. */
#ifndef FAKE_CCCL_CUDA_RUNTIME_API_H
#define FAKE_CCCL_CUDA_RUNTIME_API_H
typedef struct CUstream_st* cudaStream_t;
typedef struct CUmemPoolHandle_st* cudaMemPool_t;
#endif
