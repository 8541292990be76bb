/*
 * A stand-in for <cuda.h>, written for rmmgo's tests: the one driver
 * function rmmgo calls (cuStreamGetId, CUDA 12.0+), so that
 * cudart/check/decl_check.cpp compiles where no CUDA toolkit is installed.
 * It is not CUDA's header.
 */
#ifndef MOCK_CUDA_H
#define MOCK_CUDA_H

typedef enum cudaError_enum { CUDA_SUCCESS = 0 } CUresult;
typedef struct CUstream_st *CUstream;

CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId);

#endif
