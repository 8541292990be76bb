/* rmm/process_is_exiting.hpp -- whether the process has begun running its
 * exit handlers (rmmgo). The flag is set by an atexit handler registered
 * when the per-device resource map is first made, so it is already true
 * while that map (and whatever it keeps alive) is torn down, and in any
 * atexit handler registered before it. */
#pragma once
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace RMM_NAMESPACE {

namespace detail {
RMM_EXPORT inline std::atomic<bool>& process_exit_flag() noexcept {
  static std::atomic<bool> flag{false};
  return flag;
}
/// Registers the handler that sets the flag (once per process).
inline void register_process_exit_hook() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)process_exit_flag();  // made before the handler is registered, so it outlives it
    if (std::atexit([]() noexcept { process_exit_flag().store(true, std::memory_order_release); }) != 0) {
      std::abort();
    }
  });
}
}  // namespace detail

/// True once the process runs its exit handlers (after main returned or exit was called).
inline bool process_is_exiting() noexcept { return detail::process_exit_flag().load(std::memory_order_acquire); }

}  // namespace RMM_NAMESPACE
