/* rmm/mr/fixed_size_memory_resource.hpp -- blocks of one size (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class fixed_size_memory_resource : public detail::upstream_resource {
 public:
  static constexpr std::size_t default_block_size = 1 << 20;
  static constexpr std::size_t default_blocks_to_preallocate = 128;
  explicit fixed_size_memory_resource(detail::upstream_arg upstream,
      std::size_t block_size = default_block_size,
      std::size_t blocks_to_preallocate = default_blocks_to_preallocate)
      : fixed_size_memory_resource{std::move(upstream), block_size, blocks_to_preallocate, 0} {}
  RMMGO_RMM_EQUALITY(fixed_size_memory_resource)
  friend void get_property(fixed_size_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  [[nodiscard]] std::size_t get_block_size() const noexcept {
    std::size_t n = 0;
    (void)rmm_fixed_size_block_size(handle(), &n);
    return n;
  }

 private:
  fixed_size_memory_resource(detail::upstream_arg&& upstream, std::size_t block_size, std::size_t blocks_to_preallocate, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_FIXED_SIZE, [&](rmm_resource_options& o) {
                                      o.block_size = block_size;
                                    o.blocks_to_preallocate = blocks_to_preallocate;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<fixed_size_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
