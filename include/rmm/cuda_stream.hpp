/* rmm/cuda_stream.hpp -- an owned CUDA stream (rmmgo: made and destroyed
 * through librmmgo, so it works on the simulated device too). */
#pragma once
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/process_is_exiting.hpp>

#include <rmmgo.h>

#include <cuda/stream_ref>

#include <cassert>
#include <cstring>
#include <iostream>
#include <memory>
#include <utility>

namespace RMM_NAMESPACE {

class cuda_stream {
 public:
  enum class flags : unsigned int {
    sync_default = RMM_STREAM_SYNC_DEFAULT,
    non_blocking = RMM_STREAM_NON_BLOCKING,
  };
  cuda_stream(cuda_stream&&) = default;
  cuda_stream& operator=(cuda_stream&&) = default;
  ~cuda_stream() = default;
  cuda_stream(cuda_stream const&) = delete;
  cuda_stream& operator=(cuda_stream const&) = delete;

  explicit cuda_stream(cuda_stream::flags f = cuda_stream::flags::sync_default)
      : stream_{make(static_cast<unsigned int>(f)), deleter{}} {}

  [[nodiscard]] bool is_valid() const { return stream_ != nullptr; }
  [[nodiscard]] cudaStream_t value() const {
    RMM_EXPECTS(is_valid(), "Invalid stream handle");
    return reinterpret_cast<cudaStream_t>(stream_.get());
  }
  explicit operator cudaStream_t() const noexcept { return reinterpret_cast<cudaStream_t>(stream_.get()); }
  [[nodiscard]] cuda_stream_view view() const { return cuda_stream_view{value()}; }
  operator cuda_stream_view() const { return view(); }
  /// As RMM: a cuda_stream passes where CCCL takes a cuda::stream_ref.
  operator cuda::stream_ref() const noexcept { return cuda::stream_ref{reinterpret_cast<cudaStream_t>(stream_.get())}; }
  void synchronize() const { view().synchronize(); }
  void synchronize_no_throw() const noexcept { view().synchronize_no_throw(); }

 private:
  struct deleter {
    // As RMM's RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN: a failed destroy (a
    // stream the caller already destroyed with cudaStreamDestroy) is
    // reported and asserted in debug builds, except while the CUDA runtime
    // unloads at exit.
    void operator()(CUstream_st* s) const noexcept {
      [[maybe_unused]] rmm_status const st = rmm_stream_destroy(reinterpret_cast<rmm_stream_t>(s));
#ifndef NDEBUG
      if (st != RMM_SUCCESS) {
        char const* msg = rmm_last_error_message();
        if (std::strstr(msg, "cudaErrorCudartUnloading") == nullptr && !rmm::process_is_exiting()) {
          std::cerr << "CUDA Error detected. " << msg << std::endl;
          assert(st == RMM_SUCCESS);
        }
      }
#endif
    }
  };
  static CUstream_st* make(unsigned int f) {
    rmm_stream_t s = nullptr;
    if (rmm_stream_create_with_flags(&s, f) != RMM_SUCCESS) {
      throw rmm::cuda_error{std::string{"CUDA error: creating a stream: "} + rmm_last_error_message()};
    }
    return reinterpret_cast<CUstream_st*>(s);
  }
  std::unique_ptr<CUstream_st, deleter> stream_;
};

}  // namespace RMM_NAMESPACE
