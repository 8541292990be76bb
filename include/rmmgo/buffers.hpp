/*
 * rmmgo/buffers.hpp -- device memory that owns itself: rmmgo::device_buffer
 * (untyped) and rmmgo::device_uvector<T> (typed, uninitialised), allocated
 * and freed in stream order from a resource they keep alive (by default the
 * current device's resource).
 */
#ifndef RMMGO_BUFFERS_HPP
#define RMMGO_BUFFERS_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"
#include "devices.hpp"
#include "errors.hpp"
#include "memory_resource.hpp"
#include "per_device.hpp"
#include "streams.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace rmmgo {

/// Untyped, uninitialised device memory, allocated and freed in stream order
/// on its stream. It keeps its resource alive and remembers the device that
/// was current when it was made: it frees there, whatever device is current.
/// Move-only; copy explicitly with the (other, stream, mr) constructor.
class device_buffer {
 public:
  /// An empty buffer; growing it later uses the current device's resource.
  device_buffer() noexcept = default;

  /// size bytes from mr on stream.
  device_buffer(std::size_t size, stream_ref stream,
                mr::device_memory_resource resource = mr::get_current_device_resource())
      : stream_(stream), mr_(std::move(resource)), device_(get_current_cuda_device().value()) {
    allocate(size);
  }

  /// size bytes from mr on stream, copied from source (host or device).
  device_buffer(const void* source, std::size_t size, stream_ref stream,
                mr::device_memory_resource resource = mr::get_current_device_resource())
      : device_buffer(size, stream, std::move(resource)) {
    copy_in(source, size);
  }

  /// A copy of other's contents, from mr on stream.
  device_buffer(const device_buffer& other, stream_ref stream,
                mr::device_memory_resource resource = mr::get_current_device_resource())
      : device_buffer(other.data(), other.size(), stream, std::move(resource)) {}

  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  device_buffer(device_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)),
        stream_(other.stream_),
        mr_(std::move(other.mr_)),
        device_(other.device_) {}

  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      free_storage();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
      stream_ = other.stream_;
      mr_ = std::move(other.mr_);
      device_ = other.device_;
    }
    return *this;
  }

  ~device_buffer() { free_storage(); }

  /// Makes room for new_capacity bytes, keeping the contents.
  void reserve(std::size_t new_capacity, stream_ref stream) {
    set_stream(stream);
    if (new_capacity > capacity_) { reallocate(new_capacity); }
  }
  /// Changes the size, keeping the contents (new bytes are uninitialised).
  /// Shrinking only changes the size.
  void resize(std::size_t new_size, stream_ref stream) {
    set_stream(stream);
    if (new_size > capacity_) { reallocate(new_size); }
    size_ = new_size;
  }
  /// Gives back the room beyond size().
  void shrink_to_fit(stream_ref stream) {
    set_stream(stream);
    if (size_ != capacity_) { reallocate(size_); }
  }

  void* data() noexcept { return data_; }
  const void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::int64_t ssize() const noexcept { return static_cast<std::int64_t>(size_); }
  std::size_t capacity() const noexcept { return capacity_; }
  bool is_empty() const noexcept { return size_ == 0; }
  /// The stream the buffer allocates, copies and frees on.
  stream_ref stream() const noexcept { return stream_; }
  void set_stream(stream_ref stream) noexcept { stream_ = stream; }
  /// The resource the memory came from (a new reference).
  mr::device_memory_resource memory_resource() const { return mr_; }
  /// The device the buffer was made on.
  cuda_device_id device() const noexcept { return cuda_device_id{device_}; }

 private:
  void ensure_resource() {
    if (!mr_) {
      device_ = get_current_cuda_device().value();
      mr_ = mr::get_current_device_resource();
    }
  }
  void allocate(std::size_t bytes) {
    if (bytes == 0) { return; }
    cuda_set_device_raii dev{cuda_device_id{device_}};
    data_ = mr_.allocate(stream_, bytes);
    size_ = bytes;
    capacity_ = bytes;
  }
  void copy_in(const void* source, std::size_t bytes) {
    if (bytes == 0) { return; }
    if (source == nullptr) { throw rmmgo::logic_error("rmmgo: device_buffer: null source with a nonzero size"); }
    detail::check(rmm_memcpy(data_, source, bytes, stream_.get()));
  }
  void reallocate(std::size_t new_capacity) {
    ensure_resource();
    cuda_set_device_raii dev{cuda_device_id{device_}};
    void* p = new_capacity == 0 ? nullptr : mr_.allocate(stream_, new_capacity);
    if (size_ > 0 && p != nullptr) {
      rmm_status st = rmm_memcpy(p, data_, size_ < new_capacity ? size_ : new_capacity, stream_.get());
      if (st != RMM_SUCCESS) {
        const char* m = rmm_last_error_message();
        std::string msg = m;
        mr_.deallocate(stream_, p, new_capacity);
        detail::throw_status(st, msg.c_str());
      }
    }
    if (data_ != nullptr) { mr_.deallocate(stream_, data_, capacity_); }
    data_ = p;
    capacity_ = new_capacity;
  }
  void free_storage() noexcept {
    if (data_ == nullptr) { return; }
    int current = -1;
    bool switched = false;
    if (rmm_get_device(&current) == RMM_SUCCESS && current != device_) {
      detail::report(rmm_set_device(device_), "device_buffer: switching to its device");
      switched = true;
    }
    mr_.deallocate(stream_, data_, capacity_);
    if (switched) { detail::report(rmm_set_device(current), "device_buffer: restoring the current device"); }
    data_ = nullptr;
    size_ = 0;
    capacity_ = 0;
  }

  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  stream_ref stream_{rmm_stream_t{}};
  mr::device_memory_resource mr_;
  int device_ = 0;
};

/// A typed, uninitialised device array of trivially copyable T, stream
/// ordered like device_buffer. Elements are read and written with copies
/// (element, set_element); iterators are device pointers.
template <class T>
class device_uvector {
  static_assert(std::is_trivially_copyable_v<T>, "device_uvector needs a trivially copyable element type");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  device_uvector() = default;
  /// size uninitialised elements from mr on stream.
  device_uvector(std::size_t size, stream_ref stream,
                 mr::device_memory_resource resource = mr::get_current_device_resource())
      : storage_(bytes_for(size), stream, std::move(resource)) {}
  /// A copy of other, from mr on stream.
  device_uvector(const device_uvector& other, stream_ref stream,
                 mr::device_memory_resource resource = mr::get_current_device_resource())
      : storage_(other.storage_, stream, std::move(resource)) {}
  device_uvector(const device_uvector&) = delete;
  device_uvector& operator=(const device_uvector&) = delete;
  device_uvector(device_uvector&&) noexcept = default;
  device_uvector& operator=(device_uvector&&) noexcept = default;
  ~device_uvector() = default;

  std::size_t size() const noexcept { return storage_.size() / sizeof(T); }
  std::int64_t ssize() const noexcept { return static_cast<std::int64_t>(size()); }
  std::size_t capacity() const noexcept { return storage_.capacity() / sizeof(T); }
  bool is_empty() const noexcept { return size() == 0; }
  T* data() noexcept { return static_cast<T*>(storage_.data()); }
  const T* data() const noexcept { return static_cast<const T*>(storage_.data()); }
  T* element_ptr(std::size_t i) noexcept { return data() + i; }
  const T* element_ptr(std::size_t i) const noexcept { return data() + i; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size(); }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size(); }
  const_iterator cbegin() const noexcept { return data(); }
  const_iterator cend() const noexcept { return data() + size(); }

  /// Element i copied to the host; waits for the stream. out_of_range past
  /// the end.
  T element(std::size_t i, stream_ref stream) const {
    bounds(i, "element");
    T value;
    detail::check(rmm_memcpy(&value, data() + i, sizeof(T), stream.get()));
    detail::check(rmm_stream_synchronize(stream.get()));
    return value;
  }
  T front_element(stream_ref stream) const { return element(0, stream); }
  T back_element(stream_ref stream) const { return element(size() - 1, stream); }

  /// Copies value into element i and waits for the stream.
  void set_element(std::size_t i, const T& value, stream_ref stream) {
    set_element_async(i, value, stream);
    detail::check(rmm_stream_synchronize(stream.get()));
  }
  /// Copies value into element i in stream order; value must stay alive
  /// until the stream reaches the copy.
  void set_element_async(std::size_t i, const T& value, stream_ref stream) {
    bounds(i, "set_element");
    detail::check(rmm_memcpy(data() + i, &value, sizeof(T), stream.get()));
  }
  void set_element_async(std::size_t, const T&&, stream_ref) = delete;
  /// Sets every byte of element i to zero in stream order.
  void set_element_to_zero_async(std::size_t i, stream_ref stream) {
    bounds(i, "set_element_to_zero_async");
    detail::check(rmm_memset(data() + i, 0, sizeof(T), stream.get()));
  }

  void reserve(std::size_t new_capacity, stream_ref stream) { storage_.reserve(bytes_for(new_capacity), stream); }
  /// Changes the size, keeping the elements (new ones are uninitialised).
  void resize(std::size_t new_size, stream_ref stream) { storage_.resize(bytes_for(new_size), stream); }
  void shrink_to_fit(stream_ref stream) { storage_.shrink_to_fit(stream); }
  /// Hands over the storage; the vector is left empty.
  device_buffer release() noexcept { return std::move(storage_); }

  stream_ref stream() const noexcept { return storage_.stream(); }
  void set_stream(stream_ref stream) noexcept { storage_.set_stream(stream); }
  mr::device_memory_resource memory_resource() const { return storage_.memory_resource(); }
  cuda_device_id device() const noexcept { return storage_.device(); }

 private:
  static std::size_t bytes_for(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) {
      throw rmmgo::logic_error("rmmgo: device_uvector: size overflows", RMM_ERROR_INVALID_ARGUMENT);
    }
    return n * sizeof(T);
  }
  void bounds(std::size_t i, const char* what) const {
    if (i >= size()) {
      throw rmmgo::out_of_range(std::string("rmmgo: device_uvector::") + what + ": index " + std::to_string(i) +
                                " out of range for size " + std::to_string(size()));
    }
  }

  device_buffer storage_;
};

}  // namespace rmmgo

#endif /* RMMGO_BUFFERS_HPP */
