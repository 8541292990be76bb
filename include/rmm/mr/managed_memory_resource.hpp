/* rmm/mr/managed_memory_resource.hpp -- cudaMallocManaged (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class managed_memory_resource : public detail::handle_resource {
 public:
  managed_memory_resource() : detail::handle_resource{detail::create(RMM_RESOURCE_MANAGED, nullptr)} {}
  RMMGO_RMM_EQUALITY(managed_memory_resource)
  friend void get_property(managed_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  friend void get_property(managed_memory_resource const&, cuda::mr::host_accessible) noexcept {}
};
static_assert(cuda::mr::resource_with<managed_memory_resource, cuda::mr::device_accessible>);
static_assert(cuda::mr::resource_with<managed_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace RMM_NAMESPACE::mr
