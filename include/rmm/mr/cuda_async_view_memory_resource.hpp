/* rmm/mr/cuda_async_view_memory_resource.hpp -- cudaMallocFromPoolAsync on a pool it does not own (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class cuda_async_view_memory_resource : public detail::handle_resource {
 public:
  explicit cuda_async_view_memory_resource(cudaMemPool_t pool_handle)
      : detail::handle_resource{make(pool_handle)} {}

 private:
  static rmm_resource_t make(cudaMemPool_t pool) {
    RMM_EXPECTS(pool != nullptr, "Unexpected null pool handle.");
    rmm_resource_options o = detail::default_options();
    o.pool_handle = reinterpret_cast<rmm_mem_pool_t>(pool);
    return detail::create(RMM_RESOURCE_CUDA_ASYNC_VIEW, &o);
  }

 public:
  RMMGO_RMM_EQUALITY(cuda_async_view_memory_resource)
  friend void get_property(cuda_async_view_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  [[nodiscard]] cudaMemPool_t pool_handle() const noexcept {
    rmm_mem_pool_t p = nullptr;
    (void)rmm_cuda_async_pool_handle(handle(), &p);
    return reinterpret_cast<cudaMemPool_t>(p);
  }
};
static_assert(cuda::mr::resource_with<cuda_async_view_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
