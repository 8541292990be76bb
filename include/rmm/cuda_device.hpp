/* rmm/cuda_device.hpp -- device ids, the current device, memory info (rmmgo). */
#pragma once
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>

#include <rmmgo.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace RMM_NAMESPACE {

namespace detail {
inline void check_rmmgo(rmm_status st, const char* what) {
  if (st != RMM_SUCCESS) {
    throw rmm::cuda_error{std::string{"CUDA error: "} + what + ": " + rmm_last_error_message()};
  }
}
}  // namespace detail

struct cuda_device_id {
  using value_type = int;
  cuda_device_id() noexcept : id_{0} {}
  explicit constexpr cuda_device_id(value_type dev_id) noexcept : id_{dev_id} {}
  [[nodiscard]] constexpr value_type value() const noexcept { return id_; }
  [[nodiscard]] constexpr bool operator==(cuda_device_id const& o) const noexcept { return id_ == o.id_; }
  [[nodiscard]] constexpr bool operator!=(cuda_device_id const& o) const noexcept { return id_ != o.id_; }
  [[nodiscard]] constexpr bool operator<(cuda_device_id const& o) const noexcept { return id_ < o.id_; }
  [[nodiscard]] constexpr bool operator>(cuda_device_id const& o) const noexcept { return id_ > o.id_; }
  [[nodiscard]] constexpr bool operator<=(cuda_device_id const& o) const noexcept { return id_ <= o.id_; }
  [[nodiscard]] constexpr bool operator>=(cuda_device_id const& o) const noexcept { return id_ >= o.id_; }

 private:
  value_type id_;
};

inline cuda_device_id get_current_cuda_device() {
  int d = 0;
  detail::check_rmmgo(rmm_get_device(&d), "cudaGetDevice");
  return cuda_device_id{d};
}

inline int get_num_cuda_devices() {
  int n = 0;
  detail::check_rmmgo(rmm_get_device_count(&n), "cudaGetDeviceCount");
  return n;
}

inline std::pair<std::size_t, std::size_t> available_device_memory() {
  std::size_t free{}, total{};
  detail::check_rmmgo(rmm_mem_get_info(&free, &total), "cudaMemGetInfo");
  return {free, total};
}

/// A fraction (0..1] of the device's total memory, rounded down to 256 bytes.
inline std::size_t percent_of_free_device_memory(int percent) {
  auto const [free, total] = available_device_memory();
  (void)total;
  return static_cast<std::size_t>(static_cast<double>(free) * percent / 100.0) / 256 * 256;
}

/// Sets the current device for its lifetime, restoring the previous one after.
struct cuda_set_device_raii {
  explicit cuda_set_device_raii(cuda_device_id dev_id)
      : old_device_{get_current_cuda_device()}, needs_reset_{dev_id.value() >= 0 && old_device_ != dev_id} {
    if (needs_reset_) { detail::check_rmmgo(rmm_set_device(dev_id.value()), "cudaSetDevice"); }
  }
  ~cuda_set_device_raii() noexcept {
    if (needs_reset_) { (void)rmm_set_device(old_device_.value()); }
  }
  cuda_set_device_raii(cuda_set_device_raii const&) = delete;
  cuda_set_device_raii& operator=(cuda_set_device_raii const&) = delete;
  cuda_set_device_raii(cuda_set_device_raii&&) = delete;
  cuda_set_device_raii& operator=(cuda_set_device_raii&&) = delete;

 private:
  cuda_device_id old_device_;
  bool needs_reset_;
};

}  // namespace RMM_NAMESPACE
