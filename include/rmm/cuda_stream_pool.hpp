/* rmm/cuda_stream_pool.hpp -- a fixed set of streams handed out round-robin (rmmgo). */
#pragma once
#include <rmm/cuda_stream.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>

#include <atomic>
#include <cstddef>
#include <vector>

namespace RMM_NAMESPACE {

class cuda_stream_pool {
 public:
  static constexpr std::size_t default_size{16};

  explicit cuda_stream_pool(std::size_t pool_size = default_size,
                            cuda_stream::flags flags = cuda_stream::flags::sync_default) {
    RMM_EXPECTS(pool_size > 0, "Stream pool size must be greater than zero");
    streams_.reserve(pool_size);
    for (std::size_t i = 0; i < pool_size; ++i) { streams_.emplace_back(flags); }
  }
  ~cuda_stream_pool() = default;
  cuda_stream_pool(cuda_stream_pool&&) = delete;
  cuda_stream_pool(cuda_stream_pool const&) = delete;
  cuda_stream_pool& operator=(cuda_stream_pool&&) = delete;
  cuda_stream_pool& operator=(cuda_stream_pool const&) = delete;

  rmm::cuda_stream_view get_stream() const noexcept {
    return streams_[(next_.fetch_add(1, std::memory_order_relaxed)) % streams_.size()].view();
  }
  rmm::cuda_stream_view get_stream(std::size_t stream_id) const {
    return streams_[stream_id % streams_.size()].view();
  }
  [[nodiscard]] std::size_t get_pool_size() const noexcept { return streams_.size(); }

 private:
  std::vector<rmm::cuda_stream> streams_;
  mutable std::atomic_size_t next_{};
};

}  // namespace RMM_NAMESPACE
