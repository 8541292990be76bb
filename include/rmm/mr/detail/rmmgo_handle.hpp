/* rmm/mr/detail/rmmgo_handle.hpp -- what every rmm::mr resource class of
 * rmmgo shares: one counted reference to a librmmgo handle (so a resource
 * made here is the one C, Python and Go see), kept with the upstream the
 * class was given, and the registration of any other CCCL resource as an
 * external librmmgo resource (rmm_resource_create_external). rmmgo's own. */
#pragma once
#include <rmm/aligned.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/resource_ref.hpp>

#include <rmmgo.h>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace RMM_NAMESPACE::mr::detail {

/// Throws the rmm exception for a failed librmmgo status.
[[noreturn]] inline void throw_status(rmm_status st) {
  std::string msg = rmm_last_error_message();
  switch (st) {
    case RMM_ERROR_OUT_OF_MEMORY: throw rmm::out_of_memory{msg};
    case RMM_ERROR_BAD_ALLOC:
    case RMM_ERROR_BAD_ALIGNMENT: throw rmm::bad_alloc{msg};
    case RMM_ERROR_CUDA:
    case RMM_ERROR_BACKEND_UNAVAILABLE: throw rmm::cuda_error{"CUDA error: " + msg};
    case RMM_ERROR_OUT_OF_RANGE: throw rmm::out_of_range{msg};
    default: throw rmm::logic_error{"RMM failure: " + msg};
  }
}
inline void check(rmm_status st) {
  if (st != RMM_SUCCESS) { throw_status(st); }
}
/// For allocations: every failure is an rmm::bad_alloc (out_of_memory when memory ran out).
inline void check_alloc(rmm_status st) {
  if (st == RMM_SUCCESS) { return; }
  if (st == RMM_ERROR_OUT_OF_MEMORY) { throw rmm::out_of_memory{rmm_last_error_message()}; }
  if (st == RMM_ERROR_INVALID_ARGUMENT || st == RMM_ERROR_INVALID_HANDLE || st == RMM_ERROR_WRONG_DEVICE) {
    throw_status(st);
  }
  throw rmm::bad_alloc{rmm_last_error_message()};
}

inline rmm_resource_options default_options() {
  rmm_resource_options o{};
  check(rmm_resource_options_init(&o));
  return o;
}

inline rmm_resource_t create(rmm_resource_kind kind, rmm_resource_options const* o) {
  rmm_resource_t h = nullptr;
  check(rmm_resource_create(kind, o, &h));
  return h;
}

/// The shared state of a resource object: its handle and its upstream.
struct handle_state {
  rmm_resource_t handle{};
  std::optional<cuda::mr::any_resource<cuda::mr::device_accessible>> upstream;
  explicit handle_state(rmm_resource_t h) noexcept : handle{h} {}
  handle_state(handle_state const&) = delete;
  handle_state& operator=(handle_state const&) = delete;
  ~handle_state() {
    upstream.reset();
    if (handle != nullptr) { (void)rmm_resource_release(handle); }
  }
};

/// Picks a class's constructor that takes over an existing librmmgo handle.
struct adopt_handle_t {};
inline constexpr adopt_handle_t adopt_handle{};

/// The base of every rmm::mr class of rmmgo: copies share one librmmgo
/// resource, as RMM's shared_resource-based classes share one impl.
class handle_resource {
 public:
  /// Takes over a reference the caller owns.
  explicit handle_resource(rmm_resource_t adopted) : state_{std::make_shared<handle_state>(adopted)} {}

  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) {
    void* p = nullptr;
    check_alloc(rmm_allocate(state_->handle, reinterpret_cast<rmm_stream_t>(stream.get()), bytes, alignment, &p));
    return p;
  }
  void deallocate(cuda::stream_ref stream, void* ptr, std::size_t bytes,
                  std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept {
    report(rmm_deallocate(state_->handle, reinterpret_cast<rmm_stream_t>(stream.get()), ptr, bytes, alignment));
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) {
    void* p = nullptr;
    check_alloc(rmm_allocate_sync(state_->handle, bytes, alignment, &p));
    return p;
  }
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept {
    report(rmm_deallocate_sync(state_->handle, ptr, bytes, alignment));
  }

  /// The librmmgo handle (still owned by this object).
  [[nodiscard]] rmm_resource_t handle() const noexcept { return state_->handle; }

  [[nodiscard]] bool is_equal(handle_resource const& other) const noexcept {
    if (state_->handle == other.state_->handle) { return true; }
    int eq = 0;
    return rmm_resource_is_equal(state_->handle, other.state_->handle, &eq) == RMM_SUCCESS && eq != 0;
  }
  friend void get_property(handle_resource const&, cuda::mr::device_accessible) noexcept {}

 protected:
  handle_resource() = default;
  [[nodiscard]] device_async_resource_ref upstream_ref() const noexcept {
    return device_async_resource_ref{*state_->upstream};
  }
  std::shared_ptr<handle_state> state_;

 private:
  static void report(rmm_status st) noexcept {
    if (st != RMM_SUCCESS) {
      std::fprintf(stderr, "rmm (rmmgo): deallocation failed: %s\n", rmm_last_error_message());
    }
  }
};

/* ------------------------------------------- any CCCL resource as a handle */

using any_device_resource = cuda::mr::any_resource<cuda::mr::device_accessible>;

struct external_box {
  any_device_resource resource;
};

template <class E>
inline rmm_status put_message(char* msg, std::size_t size, E const& e, rmm_status st) noexcept {
  if (msg != nullptr && size > 0) {
    std::snprintf(msg, size, "%s", e.what());
  }
  return st;
}

/// The status for the exception in flight (inside a catch).
inline rmm_status current_exception_status(char* msg, std::size_t size) noexcept {
  try {
    throw;
  } catch (rmm::out_of_memory const& e) {
    return put_message(msg, size, e, RMM_ERROR_OUT_OF_MEMORY);
  } catch (rmm::cuda_error const& e) {
    return put_message(msg, size, e, RMM_ERROR_CUDA);
  } catch (rmm::out_of_range const& e) {
    return put_message(msg, size, e, RMM_ERROR_OUT_OF_RANGE);
  } catch (std::bad_alloc const& e) {
    return put_message(msg, size, e, RMM_ERROR_BAD_ALLOC);
  } catch (std::logic_error const& e) {
    return put_message(msg, size, e, RMM_ERROR_INVALID_ARGUMENT);
  } catch (std::exception const& e) {
    return put_message(msg, size, e, RMM_ERROR_BAD_ALLOC);
  } catch (...) {
    if (msg != nullptr && size > 0) { std::snprintf(msg, size, "unknown exception"); }
    return RMM_ERROR_BAD_ALLOC;
  }
}

extern "C++" struct external_ops {
  static rmm_status allocate(void* self, std::size_t bytes, std::size_t alignment, rmm_stream_t stream, void** ptr,
                             char* msg, std::size_t size) noexcept {
    try {
      *ptr = static_cast<external_box*>(self)->resource.allocate(
          cuda::stream_ref{reinterpret_cast<cudaStream_t>(stream)}, bytes, alignment);
      return RMM_SUCCESS;
    } catch (...) {
      return current_exception_status(msg, size);
    }
  }
  static rmm_status deallocate(void* self, void* ptr, std::size_t bytes, std::size_t alignment, rmm_stream_t stream,
                               char*, std::size_t) noexcept {
    static_cast<external_box*>(self)->resource.deallocate(cuda::stream_ref{reinterpret_cast<cudaStream_t>(stream)},
                                                           ptr, bytes, alignment);
    return RMM_SUCCESS;
  }
  static rmm_status allocate_sync(void* self, std::size_t bytes, std::size_t alignment, void** ptr, char* msg,
                                  std::size_t size) noexcept {
    try {
      *ptr = static_cast<external_box*>(self)->resource.allocate_sync(bytes, alignment);
      return RMM_SUCCESS;
    } catch (...) {
      return current_exception_status(msg, size);
    }
  }
  static rmm_status deallocate_sync(void* self, void* ptr, std::size_t bytes, std::size_t alignment, char*,
                                    std::size_t) noexcept {
    static_cast<external_box*>(self)->resource.deallocate_sync(ptr, bytes, alignment);
    return RMM_SUCCESS;
  }
  static int is_equal(void* a, void* b) noexcept {
    try {
      return static_cast<external_box*>(a)->resource == static_cast<external_box*>(b)->resource ? 1 : 0;
    } catch (...) {
      return 0;
    }
  }
  static void release(void* self) noexcept { delete static_cast<external_box*>(self); }
};

/// A new external handle whose calls are Ops's static members, given box
/// as their first argument; device-accessible, and host-accessible too when
/// host. If librmmgo refuses it, box is released (Ops::release) and the
/// status thrown.
template <class Ops>
inline rmm_resource_t create_external(void* box, bool host) {
  rmm_external_resource ops{};
  ops.struct_size = sizeof ops;
  ops.self = box;
  ops.allocate = &Ops::allocate;
  ops.deallocate = &Ops::deallocate;
  ops.allocate_sync = &Ops::allocate_sync;
  ops.deallocate_sync = &Ops::deallocate_sync;
  ops.is_equal = &Ops::is_equal;
  ops.release = &Ops::release;
  ops.properties = static_cast<unsigned int>(RMM_PROPERTY_DEVICE_ACCESSIBLE) |
                   (host ? static_cast<unsigned int>(RMM_PROPERTY_HOST_ACCESSIBLE) : 0u);
  ops.device = -1;
  rmm_resource_t h = nullptr;
  rmm_status st = rmm_resource_create_external(&ops, &h);
  if (st != RMM_SUCCESS) {
    Ops::release(box);
    throw_status(st);
  }
  return h;
}

/// Registers r (any CCCL resource with device_accessible) with librmmgo;
/// returns a new reference.
inline rmm_resource_t register_external(any_device_resource r) {
  bool host = try_get_property(r, cuda::mr::host_accessible{});
  return create_external<external_ops>(new external_box{std::move(r)}, host);
}

template <class R>
inline constexpr bool is_rmmgo_resource_v = std::is_base_of_v<handle_resource, std::remove_cv_t<std::remove_reference_t<R>>>;

/// An upstream as a class is given it: a handle for librmmgo (the object's
/// own for rmmgo's classes, else an external registration) and the object
/// itself, kept as RMM keeps it (an any_resource).
struct upstream_arg {
  rmm_resource_t handle{};
  std::optional<any_device_resource> object;

  template <class R, std::enable_if_t<!std::is_same_v<std::decay_t<R>, upstream_arg>, int> = 0>
  upstream_arg(R&& r) {  // NOLINT: implicit, as RMM's any_resource parameter
    if constexpr (is_rmmgo_resource_v<R>) {
      handle = r.handle();
      check(rmm_resource_retain(handle));
      object.emplace(std::forward<R>(r));
    } else {
      object.emplace(std::forward<R>(r));
      handle = register_external(*object);
    }
  }
  upstream_arg(upstream_arg&& o) noexcept : handle{std::exchange(o.handle, nullptr)}, object{std::move(o.object)} {}
  upstream_arg(upstream_arg const&) = delete;
  ~upstream_arg() {
    if (handle != nullptr) { (void)rmm_resource_release(handle); }
  }
};

/// A resource made over an upstream (adopts new_handle and keeps up's object).
class upstream_resource : public handle_resource {
 protected:
  upstream_resource(rmm_resource_t new_handle, upstream_arg&& up) : handle_resource{new_handle} {
    state_->upstream = std::move(up.object);
  }
  template <class Make>
  static rmm_resource_t make_over(upstream_arg const& up, rmm_resource_kind kind, Make&& set) {
    rmm_resource_options o = default_options();
    o.upstream = up.handle;
    set(o);
    return create(kind, &o);
  }

 public:
  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }
};

}  // namespace RMM_NAMESPACE::mr::detail

/// Every class gets operator== / != with its own type (CCCL's concept asks for it).
#define RMMGO_RMM_EQUALITY(cls)                                                                              \
  [[nodiscard]] bool operator==(cls const& other) const noexcept { return is_equal(other); }                 \
  [[nodiscard]] bool operator!=(cls const& other) const noexcept { return !is_equal(other); }
