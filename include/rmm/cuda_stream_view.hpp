/* rmm/cuda_stream_view.hpp -- a non-owning CUDA stream (rmmgo). */
#pragma once
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>

#include <rmmgo.h>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <cassert>
#include <cstddef>
#include <iostream>
#include <ostream>

namespace RMM_NAMESPACE {

/// A non-owning CUDA stream; the default-constructed view is the default stream.
class cuda_stream_view {
 public:
  constexpr cuda_stream_view() = default;
  constexpr cuda_stream_view(cuda_stream_view const&) = default;
  constexpr cuda_stream_view(cuda_stream_view&&) = default;
  constexpr cuda_stream_view& operator=(cuda_stream_view const&) = default;
  constexpr cuda_stream_view& operator=(cuda_stream_view&&) = default;
  ~cuda_stream_view() = default;
  cuda_stream_view(int) = delete;
  cuda_stream_view(std::nullptr_t) = delete;
  constexpr cuda_stream_view(cudaStream_t stream) noexcept : stream_{stream} {}
  cuda_stream_view(cuda::stream_ref stream) noexcept : stream_{stream.get()} {}

  [[nodiscard]] constexpr cudaStream_t value() const noexcept { return stream_; }
  constexpr operator cudaStream_t() const noexcept { return stream_; }
  operator cuda::stream_ref() const noexcept { return cuda::stream_ref{stream_}; }
  [[nodiscard]] bool is_per_thread_default() const noexcept {
    return stream_ == reinterpret_cast<cudaStream_t>(2);
  }
  [[nodiscard]] bool is_default() const noexcept {
    return stream_ == nullptr || stream_ == reinterpret_cast<cudaStream_t>(1);
  }
  /// Waits for the stream's work; throws rmm::cuda_error on failure.
  void synchronize() const {
    if (rmm_stream_synchronize(reinterpret_cast<rmm_stream_t>(stream_)) != RMM_SUCCESS) {
      throw rmm::cuda_error{std::string{"CUDA error: synchronizing a stream: "} + rmm_last_error_message()};
    }
  }
  /// Waits for the stream's work; a failure is reported and, as RMM's
  /// RMM_ASSERT_CUDA_SUCCESS, asserted in debug builds (NDEBUG unset).
  void synchronize_no_throw() const noexcept {
    [[maybe_unused]] rmm_status const st = rmm_stream_synchronize(reinterpret_cast<rmm_stream_t>(stream_));
#ifndef NDEBUG
    if (st != RMM_SUCCESS) { std::cerr << "CUDA Error detected. " << rmm_last_error_message() << std::endl; }
    assert(st == RMM_SUCCESS);
#endif
  }

 private:
  cudaStream_t stream_{};
};

static constexpr cuda_stream_view cuda_stream_default{};
static const cuda_stream_view cuda_stream_legacy{reinterpret_cast<cudaStream_t>(1)};
static const cuda_stream_view cuda_stream_per_thread{reinterpret_cast<cudaStream_t>(2)};

inline bool operator==(cuda_stream_view lhs, cuda_stream_view rhs) { return lhs.value() == rhs.value(); }
inline bool operator!=(cuda_stream_view lhs, cuda_stream_view rhs) { return !(lhs == rhs); }
inline std::ostream& operator<<(std::ostream& os, cuda_stream_view stream) {
  os << static_cast<void*>(stream.value());
  return os;
}

}  // namespace RMM_NAMESPACE
