/* rmm/mr/cuda_memory_resource.hpp -- cudaMalloc / cudaFree (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class cuda_memory_resource : public detail::handle_resource {
 public:
  cuda_memory_resource() : detail::handle_resource{detail::create(RMM_RESOURCE_CUDA, nullptr)} {}
  /// rmmgo: stands for a cuda handle librmmgo already has (takes over the
  /// caller's reference), e.g. a device's initial resource.
  cuda_memory_resource(detail::adopt_handle_t, rmm_resource_t adopted) : detail::handle_resource{adopted} {}
  RMMGO_RMM_EQUALITY(cuda_memory_resource)
  friend void get_property(cuda_memory_resource const&, cuda::mr::device_accessible) noexcept {}
};
static_assert(cuda::mr::resource_with<cuda_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
