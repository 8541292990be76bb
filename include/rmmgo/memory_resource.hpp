/*
 * rmmgo/memory_resource.hpp -- what every resource class shares:
 * rmmgo::mr::device_memory_resource (one counted reference to any rmmgo
 * resource, and the base of every class), the property tags
 * device_accessible and host_accessible, has_property_v, the adopt_handle
 * and retain_handle tags, and the default alignment.
 */
#ifndef RMMGO_MEMORY_RESOURCE_HPP
#define RMMGO_MEMORY_RESOURCE_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"
#include "devices.hpp"
#include "errors.hpp"
#include "streams.hpp"

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>

namespace rmmgo {

/// The alignment every resource guarantees and the default argument (256).
inline constexpr std::size_t CUDA_ALLOCATION_ALIGNMENT = 256;  // RMM_DEFAULT_ALIGNMENT

/// As a size argument: "not given, use RMM's default" (see each constructor).
inline constexpr std::size_t size_default = static_cast<std::size_t>(-1);  // RMM_SIZE_DEFAULT

namespace mr {

/* ------------------------------------------------------------ properties */

#if RMMGO_HAS_CCCL
using ::cuda::mr::device_accessible;
using ::cuda::mr::host_accessible;
#else
/// Property: the device can use the memory (cuda::mr::device_accessible with CCCL).
struct device_accessible {};
/// Property: the host can use the memory (cuda::mr::host_accessible with CCCL).
struct host_accessible {};
#endif

namespace detail {
template <class R, class P, class = void>
struct has_property_impl : std::false_type {};
template <class R, class P>
struct has_property_impl<R, P, std::void_t<decltype(get_property(std::declval<const R&>(), std::declval<P>()))>>
    : std::true_type {};

// Gives a class the host_accessible property when Host is true.
template <bool Host>
struct host_accessible_if {};
template <>
struct host_accessible_if<true> {
  friend void get_property(const host_accessible_if&, host_accessible) noexcept {}
};
}  // namespace detail

/// Whether R declares property P through a get_property friend.
template <class R, class P>
inline constexpr bool has_property_v = detail::has_property_impl<R, P>::value;

/* ------------------------------------------------------------ the handle */

/// Tag: a constructor takes over a reference the caller owns.
struct adopt_handle_t {
  explicit adopt_handle_t() = default;
};
inline constexpr adopt_handle_t adopt_handle{};

/// Tag: a constructor takes a new reference of its own (rmm_resource_retain).
struct retain_handle_t {
  explicit retain_handle_t() = default;
};
inline constexpr retain_handle_t retain_handle{};

/// One counted reference to any rmmgo resource: the base of every resource
/// and adaptor class, and the type that stands for "any rmmgo resource" (a
/// per-device resource, an untyped upstream). Not polymorphic: allocate calls
/// the library directly. Device accessible; whether the host can use the
/// memory is asked at run time with has_property.
///
/// A default-constructed or moved-from object holds no resource; using it
/// throws logic_error.
class device_memory_resource {
 public:
  /// Holds no resource.
  device_memory_resource() noexcept = default;
  /// Takes over the caller's reference to handle.
  device_memory_resource(adopt_handle_t, rmm_resource_t handle) noexcept : handle_(handle) {}
  /// Takes a new reference to handle.
  device_memory_resource(retain_handle_t, rmm_resource_t handle) {
    rmmgo::detail::check(rmm_resource_retain(handle));
    handle_ = handle;
  }
  device_memory_resource(const device_memory_resource& other) : handle_(retained(other.handle_)) {}
  device_memory_resource(device_memory_resource&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  device_memory_resource& operator=(const device_memory_resource& other) {
    if (handle_ != other.handle_) {
      rmm_resource_t h = retained(other.handle_);
      drop();
      handle_ = h;
    }
    return *this;
  }
  device_memory_resource& operator=(device_memory_resource&& other) noexcept {
    if (this != &other) {
      drop();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~device_memory_resource() { drop(); }

  /// The handle, still owned by this object.
  rmm_resource_t handle() const noexcept { return handle_; }
  /// Gives up this object's reference without releasing it and returns it;
  /// the caller releases it with rmm_resource_release.
  rmm_resource_t detach() noexcept { return std::exchange(handle_, nullptr); }
  /// Whether the object holds a resource.
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  /// Allocates bytes (aligned to alignment, a power of two) in stream order
  /// on stream. Zero bytes give nullptr.
  [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                               std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) {
    void* p = nullptr;
    rmmgo::detail::check(rmm_allocate(handle_, stream.get(), bytes, alignment, &p));
    return p;
  }
  /// Gives back memory in stream order on stream; bytes and alignment as
  /// allocated. Failures go to the error handler (see set_error_handler).
  void deallocate(stream_ref stream, void* ptr, std::size_t bytes,
                  std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) noexcept {
    rmm_status st = rmm_deallocate(handle_, stream.get(), ptr, bytes, alignment);
    if (st != RMM_SUCCESS) { report_deallocate(st, "deallocate", ptr, bytes); }
  }
  /// Allocates memory that is ready for any use on return.
  [[nodiscard]] void* allocate_sync(std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) {
    void* p = nullptr;
    rmmgo::detail::check(rmm_allocate_sync(handle_, bytes, alignment, &p));
    return p;
  }
  /// Gives back memory at once. Failures go to the error handler.
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) noexcept {
    rmm_status st = rmm_deallocate_sync(handle_, ptr, bytes, alignment);
    if (st != RMM_SUCCESS) { report_deallocate(st, "deallocate_sync", ptr, bytes); }
  }

#if RMMGO_CCCL_LEGACY_NAMES
  // CCCL 3.0 spells the interface with these names; the same calls.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment) { return allocate_sync(bytes, alignment); }
  void deallocate(void* ptr, std::size_t bytes, std::size_t alignment) noexcept {
    deallocate_sync(ptr, bytes, alignment);
  }
  [[nodiscard]] void* allocate_async(std::size_t bytes, std::size_t alignment, stream_ref stream) {
    return allocate(stream, bytes, alignment);
  }
  void deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment, stream_ref stream) noexcept {
    deallocate(stream, ptr, bytes, alignment);
  }
#endif

  /// The resource's kind.
  rmm_resource_kind kind() const {
    rmm_resource_kind k{};
    rmmgo::detail::check(rmm_resource_kind_of(handle_, &k));
    return k;
  }
  /// RMM's name of the class, e.g. "pool_memory_resource".
  const char* name() const {
    const char* n = nullptr;
    rmmgo::detail::check(rmm_resource_name(handle_, &n));
    return n;
  }
  /// The device that was current when the resource was made.
  cuda_device_id device() const {
    int d = 0;
    rmmgo::detail::check(rmm_resource_device(handle_, &d));
    return cuda_device_id{d};
  }
  /// Whether the resource has property p, asked at run time.
  bool has_property(rmm_property p) const {
    int has = 0;
    rmmgo::detail::check(rmm_resource_has_property(handle_, p, &has));
    return has != 0;
  }
  /// Whether memory from one can be deallocated by the other (RMM's is_equal).
  bool is_equal(const device_memory_resource& other) const noexcept {
    if (handle_ == other.handle_) { return true; }
    int equal = 0;
    return rmm_resource_is_equal(handle_, other.handle_, &equal) == RMM_SUCCESS && equal != 0;
  }

  friend bool operator==(const device_memory_resource& a, const device_memory_resource& b) noexcept {
    return a.is_equal(b);
  }
  friend bool operator!=(const device_memory_resource& a, const device_memory_resource& b) noexcept {
    return !a.is_equal(b);
  }
  friend void get_property(const device_memory_resource&, device_accessible) noexcept {}

 protected:
  rmm_resource_t handle_ = nullptr;

 private:
  static rmm_resource_t retained(rmm_resource_t h) {
    if (h != nullptr) { rmmgo::detail::check(rmm_resource_retain(h)); }
    return h;
  }
  void drop() noexcept {
    if (handle_ != nullptr) {
      rmm_resource_t h = std::exchange(handle_, nullptr);
      rmmgo::detail::report(rmm_resource_release(h), "rmm_resource_release");
    }
  }
  void report_deallocate(rmm_status st, const char* what, void* ptr, std::size_t bytes) const noexcept {
    // Read the message before any other call into the library.
    const char* message = rmm_last_error_message();
    char op[160];
    std::snprintf(op, sizeof op, "%s(%p, %zu bytes)", what, ptr, bytes);
    rmmgo::error_handler h = rmmgo::detail::error_handler_slot().load(std::memory_order_acquire);
    (h != nullptr ? h : &rmmgo::detail::default_error_handler)(op, st, message);
  }
};

namespace detail {

inline rmm_resource_options default_options() {
  rmm_resource_options o{};
  o.struct_size = sizeof o;
  rmmgo::detail::check(rmm_resource_options_init(&o));
  return o;
}

inline rmm_resource_t create(rmm_resource_kind kind, const rmm_resource_options* options) {
  rmm_resource_t out = nullptr;
  rmmgo::detail::check(rmm_resource_create(kind, options, &out));
  return out;
}

inline rmm_resource_t create_over(rmm_resource_kind kind, const device_memory_resource& upstream,
                                  rmm_resource_options o) {
  o.upstream = upstream.handle();
  return create(kind, &o);
}

// Throws logic_error unless handle is a resource of kind want.
inline void verify_kind(rmm_resource_t handle, rmm_resource_kind want, const char* cls) {
  rmm_resource_kind k{};
  rmmgo::detail::check(rmm_resource_kind_of(handle, &k));
  if (k != want) {
    const char* name = "another kind";
    rmm_resource_name(handle, &name);
    throw rmmgo::logic_error(std::string("rmmgo: cannot hold a ") + name + " as a " + cls,
                             RMM_ERROR_INVALID_ARGUMENT);
  }
}

template <class Upstream>
void verify_upstream(rmm_resource_t handle) {
  if constexpr (!std::is_same_v<Upstream, device_memory_resource>) {
    rmm_resource_t up = nullptr;
    rmmgo::detail::check(rmm_resource_upstream(handle, &up));
    device_memory_resource owner(adopt_handle, up);
    Upstream::verify_handle(up);
  } else {
    (void)handle;
  }
}

// A class whose handle is of one kind, with no upstream.
template <rmm_resource_kind Kind>
class base_resource : public device_memory_resource {
 public:
  static constexpr rmm_resource_kind resource_kind = Kind;

 protected:
  explicit base_resource(rmm_resource_t adopted) noexcept : device_memory_resource(adopt_handle, adopted) {}
};

// A sub-allocator or adaptor over an Upstream: has the upstream's
// host_accessible property and hands the upstream back typed.
template <rmm_resource_kind Kind, class Upstream>
class upstream_resource : public device_memory_resource,
                          public host_accessible_if<has_property_v<Upstream, host_accessible>> {
  static_assert(std::is_base_of_v<device_memory_resource, Upstream>,
                "the upstream of an rmmgo resource must be an rmmgo resource class");

 public:
  static constexpr rmm_resource_kind resource_kind = Kind;
  using upstream_type = Upstream;

  /// A new reference to the upstream resource, as its type.
  Upstream get_upstream_resource() const {
    rmm_resource_t up = nullptr;
    rmmgo::detail::check(rmm_resource_upstream(handle_, &up));
    return Upstream(adopt_handle, up);
  }

 protected:
  explicit upstream_resource(rmm_resource_t adopted) noexcept : device_memory_resource(adopt_handle, adopted) {}
};

}  // namespace detail

// Every class in resources.hpp and adaptors.hpp has, besides its RMM
// constructors (these two macros, internal to rmmgo, spell them):
//   X(adopt_handle_t, rmm_resource_t h): takes over a reference the caller
//     owns; throws logic_error (releasing h) unless h is of X's kind (and, for
//     templates, its upstream of Upstream's).
//   static void verify_handle(rmm_resource_t h): that check alone.
#define RMMGO_DETAIL_BASE_HANDLE(cls)                                                         \
  cls(adopt_handle_t, rmm_resource_t h) : base_resource(h) { verify_handle(h); }              \
  static void verify_handle(rmm_resource_t h) { detail::verify_kind(h, resource_kind, #cls); }

#define RMMGO_DETAIL_UPSTREAM_HANDLE(cls)                                                     \
  cls(adopt_handle_t, rmm_resource_t h) : detail::upstream_resource<resource_kind_v, Upstream>(h) { \
    verify_handle(h);                                                                         \
  }                                                                                           \
  static void verify_handle(rmm_resource_t h) {                                               \
    detail::verify_kind(h, resource_kind_v, #cls);                                            \
    detail::verify_upstream<Upstream>(h);                                                     \
  }

RMMGO_DETAIL_ASSERT_DEVICE(device_memory_resource);

}  // namespace mr
}  // namespace rmmgo

#endif /* RMMGO_MEMORY_RESOURCE_HPP */
