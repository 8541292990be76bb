/* rmm/mr/tracking_resource_adaptor.hpp -- records every outstanding
 * allocation (rmmgo: a librmmgo tracking handle; see
 * rmm/mr/detail/rmmgo_handle.hpp). The record is librmmgo's, so allocations
 * C and Python make through the handle are in it too;
 * get_outstanding_allocations() copies it (rmm_tracking_outstanding) into a
 * map this object keeps, which stays valid until the next call. */
#pragma once
#include <rmm/detail/stack_trace.hpp>
#include <rmm/logger.hpp>
#include <rmm/mr/detail/rmmgo_handle.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace RMM_NAMESPACE::mr {

class tracking_resource_adaptor : public detail::upstream_resource {
 public:
  /// One outstanding allocation: its size, and a stack when the adaptor captures them.
  struct allocation_info {
    std::unique_ptr<rmm::detail::stack_trace> strace;
    std::size_t allocation_size;
    allocation_info() = delete;
    allocation_info(std::size_t size, bool capture_stack)
        : strace{capture_stack ? std::make_unique<rmm::detail::stack_trace>() : nullptr}, allocation_size{size} {}
  };
  using read_lock_t = std::shared_lock<std::shared_mutex>;
  using write_lock_t = std::unique_lock<std::shared_mutex>;

  explicit tracking_resource_adaptor(detail::upstream_arg upstream, bool capture_stacks = false)
      : tracking_resource_adaptor{std::move(upstream), capture_stacks, 0} {}
  RMMGO_RMM_EQUALITY(tracking_resource_adaptor)
  friend void get_property(tracking_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}

  [[nodiscard]] std::size_t get_allocated_bytes() const noexcept {
    std::size_t n = 0;
    (void)rmm_tracking_allocated_bytes(handle(), &n);
    return n;
  }
  /// The outstanding allocations by address (a copy of librmmgo's record,
  /// valid until the next call on this adaptor or its copies).
  [[nodiscard]] std::map<void*, allocation_info> const& get_outstanding_allocations() const noexcept {
    auto& mine = *listing_;
    std::lock_guard<std::mutex> lock{mine.mutex};
    mine.map.clear();
    std::size_t count = 0;
    if (rmm_tracking_outstanding(handle(), nullptr, nullptr, 0, &count) != RMM_SUCCESS) { return mine.map; }
    try {
      std::vector<void*> ptrs(count + 16);  // room for a few made meanwhile
      std::vector<std::size_t> sizes(count + 16);
      if (rmm_tracking_outstanding(handle(), ptrs.data(), sizes.data(), ptrs.size(), &count) != RMM_SUCCESS) {
        return mine.map;
      }
      for (std::size_t i = 0; i < count && i < ptrs.size(); ++i) {
        mine.map.emplace(ptrs[i], allocation_info{sizes[i], capture_stacks_});
      }
    } catch (...) {
    }
    return mine.map;
  }
  /// The number of outstanding allocations (rmmgo).
  [[nodiscard]] std::size_t get_outstanding_allocation_count() const noexcept {
    std::size_t n = 0;
    (void)rmm_tracking_outstanding_count(handle(), &n);
    return n;
  }
  /// A readable list of the outstanding allocations (with their stacks when captured).
  [[nodiscard]] std::string get_outstanding_allocations_str() const {
    std::size_t needed = 0;
    detail::check(rmm_tracking_report(handle(), nullptr, 0, &needed));
    std::vector<char> buf(needed + 1);
    detail::check(rmm_tracking_report(handle(), buf.data(), buf.size(), &needed));
    return std::string{buf.data()};
  }
  /// Logs get_outstanding_allocations_str() to rmm::default_logger() at debug level.
  void log_outstanding_allocations() const {
    rmm::default_logger().log(rapids_logger::level_enum::debug, "Outstanding Allocations: %s",
                              get_outstanding_allocations_str());
  }

 private:
  struct listing {
    std::mutex mutex;
    std::map<void*, allocation_info> map;
  };
  tracking_resource_adaptor(detail::upstream_arg&& upstream, bool capture_stacks, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_TRACKING,
                                            [&](rmm_resource_options& o) { o.capture_stacks = capture_stacks ? 1 : 0; }),
                                  std::move(upstream)},
        capture_stacks_{capture_stacks} {}

  bool capture_stacks_{};
  std::shared_ptr<listing> listing_{std::make_shared<listing>()};
};
static_assert(cuda::mr::resource_with<tracking_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
