/* rmm/mr/thread_safe_resource_adaptor.hpp -- one lock around the upstream (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class thread_safe_resource_adaptor : public detail::upstream_resource {
 public:
  explicit thread_safe_resource_adaptor(detail::upstream_arg upstream)
      : thread_safe_resource_adaptor{std::move(upstream), 0} {}
  RMMGO_RMM_EQUALITY(thread_safe_resource_adaptor)
  friend void get_property(thread_safe_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}

 private:
  thread_safe_resource_adaptor(detail::upstream_arg&& upstream, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_THREAD_SAFE, [&](rmm_resource_options& o) {
                                      (void)o;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<thread_safe_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
