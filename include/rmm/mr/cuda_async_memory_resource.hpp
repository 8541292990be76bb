/* rmm/mr/cuda_async_memory_resource.hpp -- cudaMallocFromPoolAsync on its own pool (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class cuda_async_memory_resource : public detail::handle_resource {
 public:
  enum class allocation_handle_type : std::int32_t {
    none = 0x0,
    posix_file_descriptor = 0x1,
    win32 = 0x2,
    win32_kmt = 0x4,
    fabric = 0x8,
  };
  enum class mempool_usage : unsigned short { hw_decompress = 0x2 };

  cuda_async_memory_resource(std::optional<std::size_t> initial_pool_size = {},
                             std::optional<std::size_t> release_threshold = {},
                             std::optional<allocation_handle_type> export_handle_type = {})
      : detail::handle_resource{make(initial_pool_size, release_threshold, export_handle_type)} {}

 private:
  static rmm_resource_t make(std::optional<std::size_t> initial, std::optional<std::size_t> release,
                             std::optional<allocation_handle_type> handle_type) {
    rmm_resource_options o = detail::default_options();
    if (initial) { o.initial_pool_size = *initial; }
    if (release) { o.release_threshold = *release; }
    if (handle_type) { o.export_handle_types = static_cast<unsigned int>(*handle_type); }
    return detail::create(RMM_RESOURCE_CUDA_ASYNC, &o);
  }

 public:
  RMMGO_RMM_EQUALITY(cuda_async_memory_resource)
  friend void get_property(cuda_async_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  [[nodiscard]] cudaMemPool_t pool_handle() const noexcept {
    rmm_mem_pool_t p = nullptr;
    (void)rmm_cuda_async_pool_handle(handle(), &p);
    return reinterpret_cast<cudaMemPool_t>(p);
  }
};
static_assert(cuda::mr::resource_with<cuda_async_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
