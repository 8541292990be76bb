/* rmm/mr/sam_headroom_memory_resource.hpp -- system memory keeping device headroom (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class sam_headroom_memory_resource : public detail::handle_resource {
 public:
  explicit sam_headroom_memory_resource(std::size_t headroom)
      : detail::handle_resource{make(headroom)} {}
  sam_headroom_memory_resource() = delete;

 private:
  static rmm_resource_t make(std::size_t headroom) {
    rmm_resource_options o = detail::default_options();
    o.headroom = headroom;
    return detail::create(RMM_RESOURCE_SAM_HEADROOM, &o);
  }

 public:
  RMMGO_RMM_EQUALITY(sam_headroom_memory_resource)
  friend void get_property(sam_headroom_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  friend void get_property(sam_headroom_memory_resource const&, cuda::mr::host_accessible) noexcept {}
};
static_assert(cuda::mr::resource_with<sam_headroom_memory_resource, cuda::mr::device_accessible>);
static_assert(cuda::mr::resource_with<sam_headroom_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace RMM_NAMESPACE::mr
