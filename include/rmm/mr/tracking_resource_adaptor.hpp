/* rmm/mr/tracking_resource_adaptor.hpp -- records every outstanding allocation (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>
#include <iostream>
#include <vector>

namespace RMM_NAMESPACE::mr {

class tracking_resource_adaptor : public detail::upstream_resource {
 public:
  explicit tracking_resource_adaptor(detail::upstream_arg upstream,
      bool capture_stacks = false)
      : tracking_resource_adaptor{std::move(upstream), capture_stacks, 0} {}
  RMMGO_RMM_EQUALITY(tracking_resource_adaptor)
  friend void get_property(tracking_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}
  [[nodiscard]] std::size_t get_allocated_bytes() const noexcept {
    std::size_t n = 0;
    (void)rmm_tracking_allocated_bytes(handle(), &n);
    return n;
  }
  /// The number of outstanding allocations (rmmgo keeps them in the library:
  /// RMM's get_outstanding_allocations() map is not offered).
  [[nodiscard]] std::size_t get_outstanding_allocation_count() const noexcept {
    std::size_t n = 0;
    (void)rmm_tracking_outstanding_count(handle(), &n);
    return n;
  }
  [[nodiscard]] std::string get_outstanding_allocations_str() const {
    std::size_t needed = 0;
    detail::check(rmm_tracking_report(handle(), nullptr, 0, &needed));
    std::vector<char> buf(needed + 1);
    detail::check(rmm_tracking_report(handle(), buf.data(), buf.size(), &needed));
    return std::string{buf.data()};
  }
  void log_outstanding_allocations() const { std::clog << get_outstanding_allocations_str() << std::endl; }

 private:
  tracking_resource_adaptor(detail::upstream_arg&& upstream, bool capture_stacks, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_TRACKING, [&](rmm_resource_options& o) {
                                      o.capture_stacks = capture_stacks ? 1 : 0;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<tracking_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
