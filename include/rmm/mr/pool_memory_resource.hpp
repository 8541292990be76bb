/* rmm/mr/pool_memory_resource.hpp -- a coalescing pool sub-allocator (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class pool_memory_resource : public detail::upstream_resource {
 public:
  explicit pool_memory_resource(detail::upstream_arg upstream,
      std::size_t initial_pool_size,
      std::optional<std::size_t> maximum_pool_size = std::nullopt)
      : pool_memory_resource{std::move(upstream), initial_pool_size, maximum_pool_size, 0} {}
  RMMGO_RMM_EQUALITY(pool_memory_resource)
  friend void get_property(pool_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  [[nodiscard]] std::size_t pool_size() const noexcept {
    std::size_t n = 0;
    (void)rmm_pool_size(handle(), &n);
    return n;
  }

 private:
  pool_memory_resource(detail::upstream_arg&& upstream, std::size_t initial_pool_size, std::optional<std::size_t> maximum_pool_size, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_POOL, [&](rmm_resource_options& o) {
                                      RMM_EXPECTS(rmm::is_aligned(initial_pool_size, rmm::CUDA_ALLOCATION_ALIGNMENT),
                                                "Error, Initial pool size required to be a multiple of 256 bytes");
                                    RMM_EXPECTS(!maximum_pool_size || rmm::is_aligned(*maximum_pool_size, rmm::CUDA_ALLOCATION_ALIGNMENT),
                                                "Error, Maximum pool size required to be a multiple of 256 bytes");
                                    o.initial_pool_size = initial_pool_size;
                                    if (maximum_pool_size) { o.maximum_pool_size = *maximum_pool_size; }
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<pool_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
