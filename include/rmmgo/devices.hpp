/*
 * rmmgo/devices.hpp -- devices: rmmgo::cuda_device_id, the calling thread's
 * current device, free and total memory, prefetching managed memory, the
 * backend's name, and cuda_set_device_raii.
 */
#ifndef RMMGO_DEVICES_HPP
#define RMMGO_DEVICES_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"
#include "errors.hpp"
#include "streams.hpp"

#include <cstddef>
#include <string>
#include <utility>

namespace rmmgo {

/// A device ordinal, as RMM spells it.
class cuda_device_id {
 public:
  using value_type = int;
  constexpr explicit cuda_device_id(int id) noexcept : id_(id) {}
  constexpr int value() const noexcept { return id_; }
  friend constexpr bool operator==(cuda_device_id a, cuda_device_id b) noexcept { return a.id_ == b.id_; }
  friend constexpr bool operator!=(cuda_device_id a, cuda_device_id b) noexcept { return a.id_ != b.id_; }

 private:
  int id_;
};

/// The calling thread's current device.
inline cuda_device_id get_current_cuda_device() {
  int d = 0;
  detail::check(rmm_get_device(&d));
  return cuda_device_id{d};
}

/// The number of devices.
inline int get_num_cuda_devices() {
  int n = 0;
  detail::check(rmm_get_device_count(&n));
  return n;
}

/// Makes device current for the calling thread.
inline void set_current_cuda_device(cuda_device_id device) { detail::check(rmm_set_device(device.value())); }

/// Free and total bytes of the current device.
inline std::pair<std::size_t, std::size_t> available_device_memory() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  detail::check(rmm_mem_get_info(&free_bytes, &total_bytes));
  return {free_bytes, total_bytes};
}

/// Asks CUDA to migrate bytes of managed memory at ptr to device, in stream
/// order on stream (rmm::prefetch). A hint: memory that is not managed is
/// left alone without error. Throws rmmgo::logic_error for a device that does
/// not exist.
inline void prefetch(void const* ptr, std::size_t bytes, cuda_device_id device, stream_ref stream) {
  detail::check(rmm_prefetch(ptr, bytes, device.value(), stream.get()));
}

/// "cuda" or "simulated": the backend this process runs on.
inline std::string backend_name() {
  const char* name = nullptr;
  detail::check(rmm_backend_name(&name));
  return name;
}

/// Makes a device current for its lifetime and restores the previous one.
class cuda_set_device_raii {
 public:
  explicit cuda_set_device_raii(cuda_device_id device) : old_(get_current_cuda_device()), needed_(old_ != device) {
    if (needed_) { set_current_cuda_device(device); }
  }
  cuda_set_device_raii(const cuda_set_device_raii&) = delete;
  cuda_set_device_raii& operator=(const cuda_set_device_raii&) = delete;
  ~cuda_set_device_raii() {
    if (needed_) { detail::report(rmm_set_device(old_.value()), "restoring the current device"); }
  }

 private:
  cuda_device_id old_;
  bool needed_;
};

}  // namespace rmmgo

#endif /* RMMGO_DEVICES_HPP */
