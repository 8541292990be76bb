/* rmm/mr/limiting_resource_adaptor.hpp -- a cap on bytes outstanding (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class limiting_resource_adaptor : public detail::upstream_resource {
 public:
  explicit limiting_resource_adaptor(detail::upstream_arg upstream,
      std::size_t allocation_limit,
      std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT)
      : limiting_resource_adaptor{std::move(upstream), allocation_limit, alignment, 0} {}
  RMMGO_RMM_EQUALITY(limiting_resource_adaptor)
  friend void get_property(limiting_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}
  [[nodiscard]] std::size_t get_allocated_bytes() const {
    std::size_t n = 0;
    detail::check(rmm_limiting_allocated_bytes(handle(), &n));
    return n;
  }
  [[nodiscard]] std::size_t get_allocation_limit() const {
    std::size_t n = 0;
    detail::check(rmm_limiting_allocation_limit(handle(), &n));
    return n;
  }

 private:
  limiting_resource_adaptor(detail::upstream_arg&& upstream, std::size_t allocation_limit, std::size_t alignment, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_LIMITING, [&](rmm_resource_options& o) {
                                      o.allocation_limit = allocation_limit;
                                    o.alignment = alignment;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<limiting_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
