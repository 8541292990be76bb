/* rmm/process_is_exiting.hpp -- whether the process has begun exit()'s
 * atexit handlers, so that destructors running then can skip CUDA calls
 * (rmmgo: header-only; the flag is set by an atexit hook that
 * rmm::mr::detail::get_ref_map() registers right after it makes the
 * per-device map, as RMM's does). */
#pragma once
#include <rmm/detail/export.hpp>

#include <atomic>
#include <cstdlib>

namespace RMM_NAMESPACE {

namespace detail {
RMM_EXPORT inline std::atomic<bool>& process_exiting_flag() noexcept {
  static std::atomic<bool> flag{false};
  return flag;
}
inline void set_process_exiting() noexcept { process_exiting_flag().store(true, std::memory_order_release); }
/// Registers the hook once (later calls do nothing).
inline void register_process_exit_hook() noexcept {
  static bool const registered = (std::atexit(&set_process_exiting) == 0);
  (void)registered;
}
}  // namespace detail

/// True once the process is running its atexit handlers (those registered
/// before rmm's hook).
inline bool process_is_exiting() noexcept { return detail::process_exiting_flag().load(std::memory_order_acquire); }

}  // namespace RMM_NAMESPACE
