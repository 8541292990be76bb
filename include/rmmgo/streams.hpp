/*
 * rmmgo/streams.hpp -- CUDA streams: rmmgo::stream_ref (cuda::stream_ref
 * when CCCL is on), the default stream, and rmmgo::cuda_stream, an owned
 * stream.
 */
#ifndef RMMGO_STREAMS_HPP
#define RMMGO_STREAMS_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"
#include "errors.hpp"

#include <cstddef>
#include <utility>

namespace rmmgo {

#if RMMGO_HAS_CCCL
/// A non-owning CUDA stream: cuda::stream_ref with CCCL.
using stream_ref = ::cuda::stream_ref;
#else
/// A non-owning CUDA stream (rmm_stream_t, the same type as cudaStream_t),
/// shaped like cuda::stream_ref, which takes its place when CCCL is on.
class stream_ref {
 public:
  using value_type = rmm_stream_t;
  /// Wraps a stream; a null rmm_stream_t is the default stream.
  constexpr stream_ref(rmm_stream_t stream) noexcept : stream_(stream) {}  // NOLINT: implicit, as CCCL's
  stream_ref(int) = delete;                                                 // as CCCL's: say rmm_stream_t{}
  stream_ref(std::nullptr_t) = delete;
  /// The wrapped stream.
  constexpr rmm_stream_t get() const noexcept { return stream_; }
  /// Waits until the work queued on the stream has finished.
  void sync() const { detail::check(rmm_stream_synchronize(stream_)); }
  friend constexpr bool operator==(stream_ref a, stream_ref b) noexcept { return a.stream_ == b.stream_; }
  friend constexpr bool operator!=(stream_ref a, stream_ref b) noexcept { return a.stream_ != b.stream_; }

 private:
  rmm_stream_t stream_;
};
#endif

/// The default stream.
inline const stream_ref cuda_stream_default{rmm_stream_t{}};

/// Waits until the work queued on stream has finished.
inline void synchronize(stream_ref stream) { detail::check(rmm_stream_synchronize(stream.get())); }

/// An owned CUDA stream (rmm_stream_create_with_flags), destroyed with the
/// object. As RMM's, it synchronizes with the legacy default stream unless
/// made with flags::non_blocking. Move-only; converts to stream_ref.
class cuda_stream {
 public:
  enum class flags : unsigned int {
    sync_default = RMM_STREAM_SYNC_DEFAULT,
    non_blocking = RMM_STREAM_NON_BLOCKING,
  };
  explicit cuda_stream(flags f = flags::sync_default) {
    detail::check(rmm_stream_create_with_flags(&stream_, static_cast<unsigned int>(f)));
  }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  cuda_stream(cuda_stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  cuda_stream& operator=(cuda_stream&& other) noexcept {
    if (this != &other) {
      destroy();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  ~cuda_stream() { destroy(); }

  /// The stream; null once moved from.
  rmm_stream_t value() const noexcept { return stream_; }
  stream_ref view() const noexcept { return stream_ref{stream_}; }
  operator stream_ref() const noexcept { return view(); }  // NOLINT: implicit by design
  void synchronize() const { detail::check(rmm_stream_synchronize(stream_)); }

 private:
  void destroy() noexcept {
    if (stream_ != nullptr) { detail::report(rmm_stream_destroy(stream_), "rmm_stream_destroy"); }
    stream_ = nullptr;
  }
  rmm_stream_t stream_ = nullptr;
};

}  // namespace rmmgo

#endif /* RMMGO_STREAMS_HPP */
