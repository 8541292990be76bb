/* rmm/mr/prefetch_resource_adaptor.hpp -- prefetches managed memory to the device on allocation (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class prefetch_resource_adaptor : public detail::upstream_resource {
 public:
  explicit prefetch_resource_adaptor(detail::upstream_arg upstream)
      : prefetch_resource_adaptor{std::move(upstream), 0} {}
  RMMGO_RMM_EQUALITY(prefetch_resource_adaptor)
  friend void get_property(prefetch_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}

 private:
  prefetch_resource_adaptor(detail::upstream_arg&& upstream, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_PREFETCH, [&](rmm_resource_options& o) {
                                      (void)o;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<prefetch_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
