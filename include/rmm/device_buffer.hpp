/* rmm/device_buffer.hpp -- untyped, uninitialised, stream-ordered device
 * memory with an alignment, owning a copy of its resource as RMM 26.08's
 * does (rmmgo: copies through librmmgo, so it runs on the simulated device
 * too). */
#pragma once
#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/error.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <rmmgo.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace RMM_NAMESPACE {

class device_buffer {
 public:
  /// What a buffer keeps its resource as (RMM 26.08: it owns a copy, so a
  /// buffer may outlive the object it was given when that object is a
  /// resource rather than a reference).
  using resource_type = cuda::mr::any_resource<cuda::mr::device_accessible>;

  device_buffer(device_buffer const&) = delete;
  device_buffer& operator=(device_buffer const&) = delete;

  device_buffer() : mr_{mr::get_current_device_resource_ref()} {}

  explicit device_buffer(std::size_t size, cuda_stream_view stream,
                         resource_type mr = mr::get_current_device_resource_ref())
      : device_buffer{size, CUDA_ALLOCATION_ALIGNMENT, stream, std::move(mr)} {}

  explicit device_buffer(std::size_t size, std::size_t alignment, cuda_stream_view stream,
                         resource_type mr = mr::get_current_device_resource_ref())
      : alignment_{alignment}, stream_{stream}, mr_{std::move(mr)} {
    RMM_EXPECTS(rmm::is_supported_alignment(alignment), "Requested alignment is not a power of 2",
                rmm::invalid_argument);
    cuda_set_device_raii dev{device_};
    allocate_async(size);
  }

  device_buffer(void const* source_data, std::size_t size, cuda_stream_view stream,
                resource_type mr = mr::get_current_device_resource_ref())
      : device_buffer{source_data, size, CUDA_ALLOCATION_ALIGNMENT, stream, std::move(mr)} {}

  explicit device_buffer(void const* source_data, std::size_t size, std::size_t alignment, cuda_stream_view stream,
                         resource_type mr = mr::get_current_device_resource_ref())
      : device_buffer{size, alignment, stream, std::move(mr)} {
    cuda_set_device_raii dev{device_};
    copy_async(source_data, size);
  }

  device_buffer(device_buffer const& other, cuda_stream_view stream,
                resource_type mr = mr::get_current_device_resource_ref())
      : device_buffer{other.data(), other.size(), other.alignment(), stream, std::move(mr)} {}

  device_buffer(device_buffer&& other) noexcept
      : data_{std::exchange(other.data_, nullptr)},
        size_{std::exchange(other.size_, 0)},
        alignment_{std::exchange(other.alignment_, 1)},
        capacity_{std::exchange(other.capacity_, 0)},
        stream_{std::exchange(other.stream_, cuda_stream_view{})},
        mr_{std::move(other.mr_)},
        device_{std::exchange(other.device_, cuda_device_id{-1})} {}

  device_buffer& operator=(device_buffer&& other) noexcept {
    if (&other != this) {
      {
        cuda_set_device_raii dev{device_};
        deallocate_async();
      }
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      alignment_ = std::exchange(other.alignment_, 1);
      capacity_ = std::exchange(other.capacity_, 0);
      set_stream(std::exchange(other.stream_, cuda_stream_view{}));
      mr_ = std::move(other.mr_);
      device_ = std::exchange(other.device_, cuda_device_id{-1});
    }
    return *this;
  }

  ~device_buffer() noexcept {
    cuda_set_device_raii dev{device_};
    deallocate_async();
    stream_ = cuda_stream_view{};
  }

  /// Grows the allocation to new_capacity bytes (keeping the contents); never shrinks it.
  void reserve(std::size_t new_capacity, cuda_stream_view stream) {
    set_stream(stream);
    if (new_capacity > capacity()) {
      cuda_set_device_raii dev{device_};
      auto tmp = device_buffer{new_capacity, alignment(), stream, mr_};
      auto const old_size = size();
      copy(tmp.data(), data(), old_size, stream);
      *this = std::move(tmp);
      size_ = old_size;
    }
  }

  /// Sets the size; reallocates (keeping the contents) only when it grows past the capacity.
  void resize(std::size_t new_size, cuda_stream_view stream) {
    set_stream(stream);
    if (new_size <= capacity()) {
      size_ = new_size;
    } else {
      cuda_set_device_raii dev{device_};
      auto tmp = device_buffer{new_size, alignment(), stream, mr_};
      copy(tmp.data(), data(), size(), stream);
      *this = std::move(tmp);
    }
  }

  /// Reallocates to exactly size() bytes when the capacity is larger.
  void shrink_to_fit(cuda_stream_view stream) {
    set_stream(stream);
    if (size() != capacity()) {
      cuda_set_device_raii dev{device_};
      auto tmp = device_buffer{*this, stream, mr_};
      std::swap(tmp, *this);
    }
  }

  [[nodiscard]] void const* data() const noexcept { return data_; }
  void* data() noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::int64_t ssize() const noexcept {
    assert(size() < static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()) &&
           "Size overflows signed integer");
    return static_cast<std::int64_t>(size_);
  }
  [[nodiscard]] bool is_empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t alignment() const noexcept { return alignment_; }
  [[nodiscard]] cuda_stream_view stream() const noexcept { return stream_; }
  void set_stream(cuda_stream_view stream) noexcept { stream_ = stream; }
  [[nodiscard]] device_async_resource_ref memory_resource() noexcept { return device_async_resource_ref{mr_}; }

 private:
  static void copy(void* dst, void const* src, std::size_t bytes, cuda_stream_view stream) {
    if (bytes == 0) { return; }
    detail::check_rmmgo(rmm_memcpy(dst, src, bytes, reinterpret_cast<rmm_stream_t>(stream.value())), "cudaMemcpyAsync");
  }
  void allocate_async(std::size_t bytes) {
    size_ = bytes;
    capacity_ = bytes;
    data_ = (bytes > 0) ? mr_.allocate(cuda::stream_ref{stream_.value()}, bytes, alignment_) : nullptr;
  }
  void deallocate_async() noexcept {
    if (capacity() > 0) { mr_.deallocate(cuda::stream_ref{stream_.value()}, data_, capacity(), alignment_); }
    size_ = 0;
    alignment_ = 1;
    capacity_ = 0;
    data_ = nullptr;
  }
  void copy_async(void const* source, std::size_t bytes) {
    if (bytes > 0) {
      RMM_EXPECTS(nullptr != source, "Invalid copy from nullptr.");
      RMM_EXPECTS(nullptr != data_, "Invalid copy to nullptr.");
      copy(data_, source, bytes, stream_);
    }
  }

  void* data_{nullptr};
  std::size_t size_{};
  std::size_t alignment_{CUDA_ALLOCATION_ALIGNMENT};
  std::size_t capacity_{};
  cuda_stream_view stream_{};
  resource_type mr_;
  cuda_device_id device_{get_current_cuda_device()};
};

}  // namespace RMM_NAMESPACE
