/* rmm/mr/thrust_allocator_adaptor.hpp -- a Thrust device allocator that
 * allocates on a stream from a device resource (the current device resource
 * by default), on the device current when it was made. Needs Thrust's
 * headers (CCCL): not compiled by rmmgo's shim builds. */
#pragma once
#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/exec_check_disable.hpp>
#include <rmm/detail/export.hpp>
#include <rmm/detail/thrust_namespace.h>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <thrust/device_malloc_allocator.h>
#include <thrust/device_ptr.h>
#include <thrust/memory.h>

#include <utility>

namespace RMM_NAMESPACE::mr {

template <typename T>
class thrust_allocator : public thrust::device_malloc_allocator<T> {
 public:
  using Base = thrust::device_malloc_allocator<T>;
  using pointer = typename Base::pointer;
  using size_type = typename Base::size_type;

  template <typename U>
  struct rebind {
    using other = thrust_allocator<U>;
  };

  RMM_EXEC_CHECK_DISABLE
  thrust_allocator() {}
  RMM_EXEC_CHECK_DISABLE
  explicit thrust_allocator(cuda_stream_view stream) : stream_{stream} {}
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(cuda_stream_view stream, cuda::mr::any_resource<cuda::mr::device_accessible> mr)
      : stream_{stream}, mr_{std::move(mr)} {}
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(thrust_allocator const& other)
      : Base(other), stream_{other.stream_}, mr_{other.mr_}, device_{other.device_} {}
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(thrust_allocator&& other) noexcept
      : Base(std::move(other)), stream_{other.stream_}, mr_{std::move(other.mr_)}, device_{other.device_} {}
  thrust_allocator& operator=(thrust_allocator const&) = default;
  thrust_allocator& operator=(thrust_allocator&&) noexcept = default;
  RMM_EXEC_CHECK_DISABLE
  template <typename U>
  thrust_allocator(thrust_allocator<U> const& other)
      : stream_{other.stream()}, mr_{other.get_upstream_resource()}, device_{other.device_} {}

  pointer allocate(size_type num) {
    cuda_set_device_raii dev{device_};
    return thrust::device_pointer_cast(
        static_cast<T*>(mr_.allocate(stream_, num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT)));
  }
  void deallocate(pointer ptr, size_type num) noexcept {
    cuda_set_device_raii dev{device_};
    mr_.deallocate(stream_, thrust::raw_pointer_cast(ptr), num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT);
  }
  [[nodiscard]] rmm::device_async_resource_ref get_upstream_resource() const noexcept {
    return rmm::device_async_resource_ref{mr_};
  }
  [[nodiscard]] cuda_stream_view stream() const noexcept { return stream_; }
  RMM_CONSTEXPR_FRIEND void get_property(thrust_allocator const&, cuda::mr::device_accessible) noexcept {}

 private:
  template <typename>
  friend class thrust_allocator;
  cuda_stream_view stream_{};
  mutable cuda::mr::any_resource<cuda::mr::device_accessible> mr_{rmm::mr::get_current_device_resource_ref()};
  cuda_device_id device_{get_current_cuda_device()};
};

}  // namespace RMM_NAMESPACE::mr
