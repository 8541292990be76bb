/* rmm/device_uvector.hpp -- a typed, uninitialised vector in stream-ordered
 * device memory (rmmgo: over rmm::device_buffer; element copies and zeroing
 * go through librmmgo's rmm_memcpy / rmm_memset, so it runs on the
 * simulated device too). */
#pragma once
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <rmmgo.h>

#include <cuda/std/iterator>
#include <cuda/std/span>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace RMM_NAMESPACE {

template <typename T>
class device_uvector {
  static_assert(std::is_trivially_copyable_v<T>,
                "device_uvector only supports types that are trivially copyable.");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using reference = value_type&;
  using const_reference = value_type const&;
  using pointer = value_type*;
  using const_pointer = value_type const*;
  using iterator = pointer;
  using const_iterator = const_pointer;
  using reverse_iterator = cuda::std::reverse_iterator<iterator>;
  using const_reverse_iterator = cuda::std::reverse_iterator<const_iterator>;

  ~device_uvector() = default;
  device_uvector(device_uvector&&) noexcept = default;
  device_uvector& operator=(device_uvector&&) noexcept = default;
  device_uvector(device_uvector const&) = delete;
  device_uvector& operator=(device_uvector const&) = delete;
  device_uvector() = delete;

  /// size uninitialised elements from mr (RMM 26.08: the buffer owns a copy
  /// of the resource and is aligned to the element type).
  explicit device_uvector(std::size_t size, cuda_stream_view stream,
                          cuda::mr::any_resource<cuda::mr::device_accessible> mr =
                              mr::get_current_device_resource_ref())
      : storage_{checked_bytes(size), std::alignment_of_v<T>, stream, std::move(mr)} {}

  explicit device_uvector(device_uvector const& other, cuda_stream_view stream,
                          cuda::mr::any_resource<cuda::mr::device_accessible> mr =
                              mr::get_current_device_resource_ref())
      : storage_{other.storage_, stream, std::move(mr)} {}

  [[nodiscard]] pointer element_ptr(size_type i) noexcept {
    assert(i < size());
    return data() + i;
  }
  [[nodiscard]] const_pointer element_ptr(size_type i) const noexcept {
    assert(i < size());
    return data() + i;
  }

  void set_element_async(size_type i, value_type const& value, cuda_stream_view stream) {
    RMM_EXPECTS(i < size(), "Attempt to access out of bounds element.", rmm::out_of_range);
    copy(element_ptr(i), &value, sizeof(value), stream);
  }
  // The value must outlive the asynchronous copy: no temporaries.
  void set_element_async(size_type, value_type const&&, cuda_stream_view) = delete;

  void set_element_to_zero_async(size_type i, cuda_stream_view stream) {
    RMM_EXPECTS(i < size(), "Attempt to access out of bounds element.", rmm::out_of_range);
    detail::check_rmmgo(rmm_memset(element_ptr(i), 0, sizeof(value_type), raw(stream)), "cudaMemsetAsync");
  }

  void set_element(size_type i, T const& value, cuda_stream_view stream) {
    set_element_async(i, value, stream);
    stream.synchronize_no_throw();
  }

  [[nodiscard]] value_type element(size_type i, cuda_stream_view stream) const {
    RMM_EXPECTS(i < size(), "Attempt to access out of bounds element.", rmm::out_of_range);
    value_type value;
    copy(&value, element_ptr(i), sizeof(value), stream);
    stream.synchronize();
    return value;
  }
  [[nodiscard]] value_type front_element(cuda_stream_view stream) const { return element(0, stream); }
  [[nodiscard]] value_type back_element(cuda_stream_view stream) const { return element(size() - 1, stream); }

  void reserve(size_type new_capacity, cuda_stream_view stream) {
    storage_.reserve(elements_to_bytes(new_capacity), stream);
  }
  void resize(size_type new_size, cuda_stream_view stream) { storage_.resize(elements_to_bytes(new_size), stream); }
  void shrink_to_fit(cuda_stream_view stream) { storage_.shrink_to_fit(stream); }
  device_buffer release() noexcept { return std::move(storage_); }

  [[nodiscard]] size_type capacity() const noexcept { return bytes_to_elements(storage_.capacity()); }
  [[nodiscard]] pointer data() noexcept { return static_cast<pointer>(storage_.data()); }
  [[nodiscard]] const_pointer data() const noexcept { return static_cast<const_pointer>(storage_.data()); }
  [[nodiscard]] iterator begin() noexcept { return data(); }
  [[nodiscard]] const_iterator cbegin() const noexcept { return data(); }
  [[nodiscard]] const_iterator begin() const noexcept { return cbegin(); }
  [[nodiscard]] iterator end() noexcept { return data() + size(); }
  [[nodiscard]] const_iterator cend() const noexcept { return data() + size(); }
  [[nodiscard]] const_iterator end() const noexcept { return cend(); }
  [[nodiscard]] reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  [[nodiscard]] const_reverse_iterator crbegin() const noexcept { return const_reverse_iterator(cend()); }
  [[nodiscard]] const_reverse_iterator rbegin() const noexcept { return crbegin(); }
  [[nodiscard]] reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  [[nodiscard]] const_reverse_iterator crend() const noexcept { return const_reverse_iterator(begin()); }
  [[nodiscard]] const_reverse_iterator rend() const noexcept { return crend(); }
  [[nodiscard]] size_type size() const noexcept { return bytes_to_elements(storage_.size()); }
  [[nodiscard]] std::int64_t ssize() const noexcept { return static_cast<std::int64_t>(size()); }
  [[nodiscard]] bool is_empty() const noexcept { return size() == 0; }
  [[nodiscard]] operator cuda::std::span<T const>() const noexcept { return cuda::std::span<T const>(data(), size()); }
  [[nodiscard]] operator cuda::std::span<T>() noexcept { return cuda::std::span<T>(data(), size()); }
  [[nodiscard]] rmm::device_async_resource_ref memory_resource() noexcept { return storage_.memory_resource(); }
  [[nodiscard]] cuda_stream_view stream() const noexcept { return storage_.stream(); }
  void set_stream(cuda_stream_view stream) noexcept { storage_.set_stream(stream); }

 private:
  device_buffer storage_;

  static rmm_stream_t raw(cuda_stream_view s) noexcept { return reinterpret_cast<rmm_stream_t>(s.value()); }
  static void copy(void* dst, void const* src, std::size_t bytes, cuda_stream_view stream) {
    detail::check_rmmgo(rmm_memcpy(dst, src, bytes, raw(stream)), "cudaMemcpyAsync");
  }
  [[nodiscard]] static size_type elements_to_bytes(size_type n) {
    RMM_EXPECTS(n <= std::numeric_limits<size_type>::max() / sizeof(value_type),
                "Requested number of elements exceeds maximum representable size.", rmm::invalid_argument);
    return n * sizeof(value_type);
  }
  /// The bytes for n elements, refusing a type aligned beyond what the
  /// resources guarantee (CUDA_ALLOCATION_ALIGNMENT), as RMM's resources do.
  [[nodiscard]] static size_type checked_bytes(size_type n) {
    if constexpr (alignof(T) > rmm::CUDA_ALLOCATION_ALIGNMENT) {
      throw rmm::bad_alloc{"device_uvector: the value type's alignment exceeds CUDA_ALLOCATION_ALIGNMENT"};
    }
    return elements_to_bytes(n);
  }
  [[nodiscard]] static constexpr size_type bytes_to_elements(size_type bytes) noexcept {
    return bytes / sizeof(value_type);
  }
};

}  // namespace RMM_NAMESPACE
