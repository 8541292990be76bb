/* rmm/mr/polymorphic_allocator.hpp -- stream-ordered allocators over a
 * device resource (rmmgo): polymorphic_allocator<T> allocates n objects of T
 * on a stream from the resource it holds (the current device resource by
 * default); stream_allocator_adaptor binds one stream to such an allocator
 * so that it meets the standard Allocator requirements. */
#pragma once
#include <rmm/aligned.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/export.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <memory>
#include <utility>

namespace RMM_NAMESPACE::mr {

template <typename T>
class polymorphic_allocator {
 public:
  using value_type = T;

  polymorphic_allocator() = default;
  polymorphic_allocator(cuda::mr::any_resource<cuda::mr::device_accessible> mr) : mr_{std::move(mr)} {}  // NOLINT
  template <typename U>
  polymorphic_allocator(polymorphic_allocator<U> const& other) noexcept : mr_{other.get_upstream_resource()} {}

  value_type* allocate(std::size_t num, cuda_stream_view stream) {
    return static_cast<value_type*>(mr_.allocate(stream, num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT));
  }
  void deallocate(value_type* ptr, std::size_t num, cuda_stream_view stream) noexcept {
    mr_.deallocate(stream, ptr, num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT);
  }
  [[nodiscard]] rmm::device_async_resource_ref get_upstream_resource() const noexcept {
    return rmm::device_async_resource_ref{mr_};
  }

 private:
  mutable cuda::mr::any_resource<cuda::mr::device_accessible> mr_{get_current_device_resource_ref()};
};

/// Allocators compare equal when their resources do.
template <typename T, typename U>
bool operator==(polymorphic_allocator<T> const& lhs, polymorphic_allocator<U> const& rhs) {
  return lhs.get_upstream_resource() == rhs.get_upstream_resource();
}
template <typename T, typename U>
bool operator!=(polymorphic_allocator<T> const& lhs, polymorphic_allocator<U> const& rhs) {
  return !(lhs == rhs);
}

template <typename Allocator>
class stream_allocator_adaptor {
 public:
  using value_type = typename std::allocator_traits<Allocator>::value_type;

  stream_allocator_adaptor() = delete;
  stream_allocator_adaptor(Allocator const& allocator, cuda_stream_view stream) : alloc_{allocator}, stream_{stream} {}
  template <typename OtherAllocator>
  stream_allocator_adaptor(stream_allocator_adaptor<OtherAllocator> const& other)
      : stream_allocator_adaptor{other.underlying_allocator(), other.stream()} {}

  template <typename U>
  struct rebind {
    using other = stream_allocator_adaptor<typename std::allocator_traits<Allocator>::template rebind_alloc<U>>;
  };

  value_type* allocate(std::size_t num) { return alloc_.allocate(num, stream()); }
  void deallocate(value_type* ptr, std::size_t num) noexcept { alloc_.deallocate(ptr, num, stream()); }
  [[nodiscard]] cuda_stream_view stream() const noexcept { return stream_; }
  [[nodiscard]] Allocator underlying_allocator() const noexcept { return alloc_; }

 private:
  Allocator alloc_;
  cuda_stream_view stream_;
};

template <typename A, typename O>
bool operator==(stream_allocator_adaptor<A> const& lhs, stream_allocator_adaptor<O> const& rhs) {
  return lhs.underlying_allocator() == rhs.underlying_allocator();
}
template <typename A, typename O>
bool operator!=(stream_allocator_adaptor<A> const& lhs, stream_allocator_adaptor<O> const& rhs) {
  return !(lhs == rhs);
}

}  // namespace RMM_NAMESPACE::mr
