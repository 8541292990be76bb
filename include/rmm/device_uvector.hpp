/* rmm/device_uvector.hpp -- a typed, uninitialised vector in device memory
 * for trivially copyable element types, stream-ordered, kept in a
 * device_buffer aligned to the element type (rmmgo: element access goes
 * through librmmgo's rmm_memcpy / rmm_memset, so it runs on the simulated
 * device too). */
#pragma once
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/detail/exec_check_disable.hpp>
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
  static_assert(std::is_trivially_copyable_v<T>, "device_uvector only supports types that are trivially copyable.");

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

  RMM_EXEC_CHECK_DISABLE
  ~device_uvector() = default;
  RMM_EXEC_CHECK_DISABLE
  device_uvector(device_uvector&&) noexcept = default;
  RMM_EXEC_CHECK_DISABLE
  device_uvector& operator=(device_uvector&&) noexcept = default;
  device_uvector(device_uvector const&) = delete;
  device_uvector& operator=(device_uvector const&) = delete;
  device_uvector() = delete;

  /// size uninitialised elements, allocated from mr on stream; throws
  /// rmm::invalid_argument when size elements do not fit in a size_t of bytes.
  explicit device_uvector(size_type size, cuda_stream_view stream,
                          cuda::mr::any_resource<cuda::mr::device_accessible> mr =
                              mr::get_current_device_resource_ref())
      : storage_{bytes_for(size), std::alignment_of_v<T>, stream, std::move(mr)} {}

  /// A copy of other's elements, in memory from mr, made on stream.
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

  /// Copies value into element i in stream order (value must live until the copy is done).
  void set_element_async(size_type i, value_type const& value, cuda_stream_view stream) {
    check_index(i);
    detail::check_rmmgo(rmm_memcpy(element_ptr(i), &value, sizeof(value), raw(stream)), "cudaMemcpyAsync");
  }
  /// A temporary would be gone before the copy reads it.
  void set_element_async(size_type, value_type const&&, cuda_stream_view) = delete;

  /// Sets element i's bytes to zero in stream order.
  void set_element_to_zero_async(size_type i, cuda_stream_view stream) {
    check_index(i);
    detail::check_rmmgo(rmm_memset(element_ptr(i), 0, sizeof(value_type), raw(stream)), "cudaMemsetAsync");
  }

  /// set_element_async, then waits for stream.
  void set_element(size_type i, T const& value, cuda_stream_view stream) {
    set_element_async(i, value, stream);
    stream.synchronize_no_throw();
  }

  /// Element i, copied to the host (waits for stream).
  [[nodiscard]] value_type element(size_type i, cuda_stream_view stream) const {
    check_index(i);
    value_type value;
    detail::check_rmmgo(rmm_memcpy(&value, element_ptr(i), sizeof(value), raw(stream)), "cudaMemcpyAsync");
    stream.synchronize();
    return value;
  }
  [[nodiscard]] value_type front_element(cuda_stream_view stream) const { return element(0, stream); }
  [[nodiscard]] value_type back_element(cuda_stream_view stream) const { return element(size() - 1, stream); }

  void reserve(size_type new_capacity, cuda_stream_view stream) { storage_.reserve(bytes_for(new_capacity), stream); }
  void resize(size_type new_size, cuda_stream_view stream) { storage_.resize(bytes_for(new_size), stream); }
  void shrink_to_fit(cuda_stream_view stream) { storage_.shrink_to_fit(stream); }

  /// Hands the storage over; the vector is left empty.
  device_buffer release() noexcept { return std::move(storage_); }

  [[nodiscard]] size_type capacity() const noexcept { return elements_in(storage_.capacity()); }
  [[nodiscard]] pointer data() noexcept { return static_cast<pointer>(storage_.data()); }
  [[nodiscard]] const_pointer data() const noexcept { return static_cast<const_pointer>(storage_.data()); }

  [[nodiscard]] iterator begin() noexcept { return data(); }
  [[nodiscard]] const_iterator cbegin() const noexcept { return data(); }
  [[nodiscard]] const_iterator begin() const noexcept { return cbegin(); }
  [[nodiscard]] iterator end() noexcept { return data() + size(); }
  [[nodiscard]] const_iterator cend() const noexcept { return data() + size(); }
  [[nodiscard]] const_iterator end() const noexcept { return cend(); }
  [[nodiscard]] reverse_iterator rbegin() noexcept { return reverse_iterator{end()}; }
  [[nodiscard]] const_reverse_iterator crbegin() const noexcept { return const_reverse_iterator{cend()}; }
  [[nodiscard]] const_reverse_iterator rbegin() const noexcept { return crbegin(); }
  [[nodiscard]] reverse_iterator rend() noexcept { return reverse_iterator{begin()}; }
  [[nodiscard]] const_reverse_iterator crend() const noexcept { return const_reverse_iterator{cbegin()}; }
  [[nodiscard]] const_reverse_iterator rend() const noexcept { return crend(); }

  [[nodiscard]] size_type size() const noexcept { return elements_in(storage_.size()); }
  [[nodiscard]] std::int64_t ssize() const noexcept {
    assert(size() < static_cast<size_type>(std::numeric_limits<std::int64_t>::max()) && "Size overflows signed integer");
    return static_cast<std::int64_t>(size());
  }
  [[nodiscard]] bool is_empty() const noexcept { return size() == 0; }

  [[nodiscard]] operator cuda::std::span<T const>() const noexcept { return cuda::std::span<T const>(data(), size()); }
  [[nodiscard]] operator cuda::std::span<T>() noexcept { return cuda::std::span<T>(data(), size()); }

  [[nodiscard]] rmm::device_async_resource_ref memory_resource() noexcept { return storage_.memory_resource(); }
  [[nodiscard]] cuda_stream_view stream() const noexcept { return storage_.stream(); }
  void set_stream(cuda_stream_view stream) noexcept { storage_.set_stream(stream); }

 private:
  static rmm_stream_t raw(cuda_stream_view s) noexcept { return reinterpret_cast<rmm_stream_t>(s.value()); }
  void check_index(size_type i) const {
    RMM_EXPECTS(i < size(), "Attempt to access out of bounds element.", rmm::out_of_range);
  }
  [[nodiscard]] static size_type bytes_for(size_type n) {
    RMM_EXPECTS(n <= std::numeric_limits<size_type>::max() / sizeof(value_type),
                "Requested size overflows device_uvector storage.", rmm::invalid_argument);
    return n * sizeof(value_type);
  }
  [[nodiscard]] static constexpr size_type elements_in(size_type bytes) noexcept { return bytes / sizeof(value_type); }

  device_buffer storage_{};
};

}  // namespace RMM_NAMESPACE
