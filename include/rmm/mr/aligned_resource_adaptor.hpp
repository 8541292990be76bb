/* rmm/mr/aligned_resource_adaptor.hpp -- allocations aligned beyond 256 bytes (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class aligned_resource_adaptor : public detail::upstream_resource {
 public:
  static constexpr std::size_t default_alignment_threshold = 0;
  explicit aligned_resource_adaptor(detail::upstream_arg upstream,
      std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT,
      std::size_t alignment_threshold = default_alignment_threshold)
      : aligned_resource_adaptor{std::move(upstream), alignment, alignment_threshold, 0} {}
  RMMGO_RMM_EQUALITY(aligned_resource_adaptor)
  friend void get_property(aligned_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}

 private:
  aligned_resource_adaptor(detail::upstream_arg&& upstream, std::size_t alignment, std::size_t alignment_threshold, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_ALIGNED, [&](rmm_resource_options& o) {
                                      RMM_EXPECTS(rmm::is_supported_alignment(alignment), "Allocation alignment is not a power of 2.");
                                    o.alignment = alignment;
                                    o.alignment_threshold = alignment_threshold;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<aligned_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
