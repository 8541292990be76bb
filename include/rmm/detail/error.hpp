/* rmm/detail/error.hpp -- RMM's error macros (rmmgo's definitions):
 * RMM_EXPECTS(cond, reason[, exception]), RMM_FAIL(reason[, exception]),
 * RMM_CUDA_TRY(call[, exception]), RMM_CUDA_TRY_ALLOC(call[, bytes]),
 * RMM_ASSERT_CUDA_SUCCESS(call), RMM_CHECK_CUDA_ERROR(call). */
#pragma once
#include <rmm/error.hpp>

#include <cuda_runtime_api.h>

#include <cassert>
#include <iostream>
#include <string>

#define RMM_STRINGIFY_DETAIL(x) #x
#define RMM_STRINGIFY(x) RMM_STRINGIFY_DETAIL(x)

#define RMM_EXPECTS(...) RMM_DETAIL_PICK3(__VA_ARGS__, RMM_EXPECTS_3, RMM_EXPECTS_2, unused)(__VA_ARGS__)
#define RMM_DETAIL_PICK3(_1, _2, _3, NAME, ...) NAME
#define RMM_EXPECTS_3(_condition, _reason, _exception_type)                                          \
  (!!(_condition)) ? static_cast<void>(0)                                                             \
                   : throw _exception_type {                                                          \
    std::string{"RMM failure at: "} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " + (_reason)     \
  }
#define RMM_EXPECTS_2(_condition, _reason) RMM_EXPECTS_3(_condition, _reason, rmm::logic_error)

#define RMM_FAIL(...) RMM_DETAIL_PICK2(__VA_ARGS__, RMM_FAIL_2, RMM_FAIL_1, unused)(__VA_ARGS__)
#define RMM_DETAIL_PICK2(_1, _2, NAME, ...) NAME
#define RMM_FAIL_2(_what, _exception_type)                                                             \
  throw _exception_type                                                                                \
  {                                                                                                    \
    std::string{"RMM failure at:"} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " + (_what)         \
  }
#define RMM_FAIL_1(_what) RMM_FAIL_2(_what, rmm::logic_error)

#define RMM_CUDA_TRY(...) RMM_DETAIL_PICK2(__VA_ARGS__, RMM_CUDA_TRY_2, RMM_CUDA_TRY_1, unused)(__VA_ARGS__)
#define RMM_CUDA_TRY_2(_call, _exception_type)                                                         \
  do {                                                                                                 \
    cudaError_t const error = (_call);                                                                 \
    if (cudaSuccess != error) {                                                                        \
      cudaGetLastError();                                                                              \
      throw _exception_type{std::string{"CUDA error at: "} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + \
                            ": " + cudaGetErrorName(error) + " " + cudaGetErrorString(error)};         \
    }                                                                                                  \
  } while (0)
#define RMM_CUDA_TRY_1(_call) RMM_CUDA_TRY_2(_call, rmm::cuda_error)

#define RMM_CUDA_TRY_ALLOC(...) \
  RMM_DETAIL_PICK2(__VA_ARGS__, RMM_CUDA_TRY_ALLOC_2, RMM_CUDA_TRY_ALLOC_1, unused)(__VA_ARGS__)
#define RMM_CUDA_TRY_ALLOC_2(_call, num_bytes)                                                          \
  do {                                                                                                  \
    cudaError_t const error = (_call);                                                                  \
    if (cudaSuccess != error) {                                                                         \
      cudaGetLastError();                                                                               \
      auto const msg = std::string{"CUDA error (failed to allocate "} + std::to_string(num_bytes) +     \
                       " bytes) at: " + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " +               \
                       cudaGetErrorName(error) + " " + cudaGetErrorString(error);                       \
      if (cudaErrorMemoryAllocation == error) { throw rmm::out_of_memory{msg}; }                       \
      throw rmm::bad_alloc{msg};                                                                        \
    }                                                                                                   \
  } while (0)
#define RMM_CUDA_TRY_ALLOC_1(_call)                                                                     \
  do {                                                                                                  \
    cudaError_t const error = (_call);                                                                  \
    if (cudaSuccess != error) {                                                                         \
      cudaGetLastError();                                                                               \
      auto const msg = std::string{"CUDA error at: "} + __FILE__ + ":" + RMM_STRINGIFY(__LINE__) + ": " + \
                       cudaGetErrorName(error) + " " + cudaGetErrorString(error);                       \
      if (cudaErrorMemoryAllocation == error) { throw rmm::out_of_memory{msg}; }                       \
      throw rmm::bad_alloc{msg};                                                                        \
    }                                                                                                   \
  } while (0)

#ifdef NDEBUG
#define RMM_ASSERT_CUDA_SUCCESS(_call) \
  do {                                 \
    (void)(_call);                     \
  } while (0)
#else
#define RMM_ASSERT_CUDA_SUCCESS(_call)                                                   \
  do {                                                                                   \
    cudaError_t const status__ = (_call);                                                \
    if (status__ != cudaSuccess) {                                                       \
      std::cerr << "CUDA Error detected. " << cudaGetErrorName(status__) << " "          \
                << cudaGetErrorString(status__) << std::endl;                            \
    }                                                                                    \
    assert(status__ == cudaSuccess);                                                     \
  } while (0)
#endif
/* As RMM_ASSERT_CUDA_SUCCESS, but cudaErrorCudartUnloading (the runtime is
 * being torn down at exit) counts as success. */
#ifdef NDEBUG
#define RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(_call) \
  do {                                               \
    (void)(_call);                                   \
  } while (0)
#else
#define RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(_call)                                   \
  do {                                                                                 \
    cudaError_t const status__ = (_call);                                              \
    bool const ok__ = status__ == cudaSuccess || status__ == cudaErrorCudartUnloading; \
    if (!ok__) {                                                                       \
      std::cerr << "CUDA Error detected. " << cudaGetErrorName(status__) << " "        \
                << cudaGetErrorString(status__) << std::endl;                          \
    }                                                                                  \
    assert(ok__);                                                                      \
  } while (0)
#endif

#define RMM_CHECK_CUDA_ERROR(_call) RMM_CUDA_TRY(_call)
