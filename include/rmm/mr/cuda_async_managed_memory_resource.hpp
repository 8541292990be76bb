/* rmm/mr/cuda_async_managed_memory_resource.hpp -- stream-ordered managed memory (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class cuda_async_managed_memory_resource : public detail::handle_resource {
 public:
  cuda_async_managed_memory_resource() : detail::handle_resource{detail::create(RMM_RESOURCE_CUDA_ASYNC_MANAGED, nullptr)} {}
  RMMGO_RMM_EQUALITY(cuda_async_managed_memory_resource)
  friend void get_property(cuda_async_managed_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  friend void get_property(cuda_async_managed_memory_resource const&, cuda::mr::host_accessible) noexcept {}
  [[nodiscard]] cudaMemPool_t pool_handle() const noexcept {
    rmm_mem_pool_t p = nullptr;
    (void)rmm_cuda_async_pool_handle(handle(), &p);
    return reinterpret_cast<cudaMemPool_t>(p);
  }
};
static_assert(cuda::mr::resource_with<cuda_async_managed_memory_resource, cuda::mr::device_accessible>);
static_assert(cuda::mr::resource_with<cuda_async_managed_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace RMM_NAMESPACE::mr
