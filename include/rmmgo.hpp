/*
 * rmmgo.hpp -- the C++ interface of rmmgo, header-only over rmmgo.h.
 *
 * Every memory resource and adaptor of RMM has a class here with RMM's name
 * in namespace rmmgo::mr (cuda_memory_resource, pool_memory_resource,
 * statistics_resource_adaptor, ...). An object owns one reference to a
 * library handle: copying it takes another reference (rmm_resource_retain),
 * moving it hands the reference over, destroying it gives the reference back
 * (rmm_resource_release). Copies are therefore cheap views of one shared
 * resource, like RMM's shared_resource-based classes, and a sub-allocator or
 * adaptor keeps its upstream alive however the upstream object is destroyed.
 *
 * Each class offers the CCCL memory-resource interface itself, with no
 * virtual dispatch and no view wrapper:
 *
 *     void* allocate(stream_ref, bytes, alignment = 256);
 *     void  deallocate(stream_ref, ptr, bytes, alignment = 256) noexcept;
 *     void* allocate_sync(bytes, alignment = 256);
 *     void  deallocate_sync(ptr, bytes, alignment = 256) noexcept;
 *     operator==, operator!=, and get_property friends for its properties.
 *
 * Requirements: C++17; rmmgo.h beside this file; link with -lrmmgo. No CUDA
 * header is needed.
 *
 * CCCL. When <cuda/memory_resource>, <cuda/stream_ref> and the CUDA runtime
 * headers are on the include path (nvcc puts them there), the integration
 * switches on (RMMGO_HAS_CCCL is 1): rmmgo::stream_ref is cuda::stream_ref,
 * the property tags are cuda::mr::device_accessible / host_accessible, and
 * static_asserts check that every class satisfies
 * cuda::mr::resource_with<R, device_accessible> (CCCL >= 3.1) or
 * cuda::mr::async_resource_with<R, device_accessible> (CCCL 3.0, whose
 * concepts spell the interface allocate(bytes, alignment) /
 * allocate_async(bytes, alignment, stream); the classes then offer those
 * names too). Define RMMGO_DISABLE_CCCL to keep it off. With CCCL older than
 * 3.2 this header defines LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE, so
 * include it before any CCCL header (or define that macro yourself).
 *
 * Properties. Every rmmgo resource is device accessible. managed, pinned
 * host, system, sam_headroom and cuda_async_managed memory is also host
 * accessible (RMM's table). Sub-allocators and adaptors are class templates
 * over their upstream's type, so they have host_accessible exactly when
 * their upstream has it, known at compile time:
 *
 *     rmmgo::mr::managed_memory_resource managed;
 *     rmmgo::mr::pool_memory_resource pool{managed, 1 << 30};  // deduces
 *     // pool_memory_resource<managed_memory_resource>: device and host
 *     rmmgo::mr::statistics_resource_adaptor stats{pool};      // the same
 *
 * The upstream parameter defaults to device_memory_resource, the handle
 * type every class derives from, which stands for "any rmmgo resource" and
 * is device accessible only (ask has_property(RMM_PROPERTY_HOST_ACCESSIBLE)
 * at run time). Note that, as with any class template, `X b{a}` where a is
 * already an X<U> copies a rather than wrapping it; spell the type to nest.
 *
 * Threads: every call is safe from many threads at once (the library is),
 * including many threads allocating through one object. Like a
 * std::shared_ptr, one object must not be assigned to while other threads use
 * it; copies of it may be used and assigned freely.
 *
 * Errors become exceptions carrying the library's message:
 * rmmgo::out_of_memory (derived from rmmgo::bad_alloc, derived from
 * std::bad_alloc) when memory ran out; rmmgo::bad_alloc for other failed
 * allocations and bad alignments; rmmgo::logic_error for misuse (bad
 * arguments, stale handles, wrong device, unsupported features);
 * rmmgo::cuda_error when CUDA or the backend failed; rmmgo::out_of_range.
 * Each has status(), the library's rmm_status.
 *
 * deallocate, deallocate_sync, destructors and other noexcept members cannot
 * throw. When the library reports a failure there (a pointer the resource
 * did not hand out, a wrong device, a CUDA error), the failure is passed to
 * the handler set with rmmgo::set_error_handler; the default handler writes
 * one line to stderr and returns, and the program goes on (the memory in
 * question is not freed). Install your own to count, log or abort.
 */
#ifndef RMMGO_HPP
#define RMMGO_HPP

#include "rmmgo.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

/* ------------------------------------------------------------------ CCCL */

#if !defined(RMMGO_DISABLE_CCCL) && defined(__has_include)
#  if __has_include(<cuda/memory_resource>) && __has_include(<cuda/stream_ref>) && \
      __has_include(<cuda/std/version>) && __has_include(<cuda_runtime_api.h>)
#    include <cuda/std/version>
#    if defined(CCCL_VERSION) && CCCL_VERSION >= 3000000
#      if CCCL_VERSION < 3002000 && !defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE)
#        define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#      endif
#      include <cuda/memory_resource>
#      include <cuda/stream_ref>
#      define RMMGO_HAS_CCCL 1
#      if CCCL_VERSION < 3001000
/* CCCL 3.0: resource = allocate(bytes, alignment); async_resource adds
 * allocate_async(bytes, alignment, stream). */
#        define RMMGO_CCCL_LEGACY_NAMES 1
#      endif
#    endif
#  endif
#endif
#ifndef RMMGO_HAS_CCCL
#  define RMMGO_HAS_CCCL 0
#endif
#ifndef RMMGO_CCCL_LEGACY_NAMES
#  define RMMGO_CCCL_LEGACY_NAMES 0
#endif

namespace rmmgo {

/// The alignment every resource guarantees and the default argument (256).
inline constexpr std::size_t CUDA_ALLOCATION_ALIGNMENT = 256;  // RMM_DEFAULT_ALIGNMENT

/// As a size argument: "not given, use RMM's default" (see each constructor).
inline constexpr std::size_t size_default = static_cast<std::size_t>(-1);  // RMM_SIZE_DEFAULT

/* ------------------------------------------------------------ exceptions */

/// Misuse: a bad argument, a stale handle, the wrong device, a feature the
/// device lacks. RMM's rmm::logic_error.
class logic_error : public std::logic_error {
 public:
  explicit logic_error(const std::string& what, rmm_status status = RMM_ERROR_INVALID_ARGUMENT)
      : std::logic_error(what), status_(status) {}
  /// The library's status for this error.
  rmm_status status() const noexcept { return status_; }

 private:
  rmm_status status_;
};

/// A CUDA call or the backend failed. RMM's rmm::cuda_error.
class cuda_error : public std::runtime_error {
 public:
  explicit cuda_error(const std::string& what, rmm_status status = RMM_ERROR_CUDA)
      : std::runtime_error(what), status_(status) {}
  rmm_status status() const noexcept { return status_; }

 private:
  rmm_status status_;
};

/// An index or level out of range (e.g. popping the last statistics level).
class out_of_range : public std::out_of_range {
 public:
  explicit out_of_range(const std::string& what, rmm_status status = RMM_ERROR_OUT_OF_RANGE)
      : std::out_of_range(what), status_(status) {}
  rmm_status status() const noexcept { return status_; }

 private:
  rmm_status status_;
};

/// An allocation failed. what() is "std::bad_alloc: " followed by the
/// library's message, as RMM writes it.
class bad_alloc : public std::bad_alloc {
 public:
  explicit bad_alloc(const std::string& msg, rmm_status status = RMM_ERROR_BAD_ALLOC)
      : what_("std::bad_alloc: " + msg), status_(status) {}
  const char* what() const noexcept override { return what_.what(); }
  rmm_status status() const noexcept { return status_; }

 private:
  std::runtime_error what_;  // a string holder whose copy cannot throw
  rmm_status status_;
};

/// An allocation failed for want of memory. what() is
/// "std::bad_alloc: out_of_memory: " followed by the library's message.
class out_of_memory : public bad_alloc {
 public:
  explicit out_of_memory(const std::string& msg) : bad_alloc("out_of_memory: " + msg, RMM_ERROR_OUT_OF_MEMORY) {}
};

/// Called when a noexcept member (deallocate, a destructor, ...) meets a
/// failure it cannot throw. `operation` says what failed (for example
/// "deallocate(0x7f00, 256 bytes) on pool_memory_resource"), `message` is the
/// library's message. It must not throw.
using error_handler = void (*)(const char* operation, rmm_status status, const char* message) noexcept;

namespace detail {

inline void default_error_handler(const char* operation, rmm_status status, const char* message) noexcept {
  std::fprintf(stderr, "rmmgo: %s failed: %s: %s\n", operation, rmm_status_string(status), message);
}

inline std::atomic<error_handler>& error_handler_slot() noexcept {
  static std::atomic<error_handler> slot{&default_error_handler};
  return slot;
}

// Copies the thread's message at once (it lives only until the next call
// into the library) and throws the exception that matches the status.
[[noreturn]] inline void throw_status(rmm_status status, const char* message) {
  std::string msg = (message != nullptr && message[0] != '\0') ? std::string(message) : std::string();
  if (msg.empty()) { msg = rmm_status_string(status); }
  switch (status) {
    case RMM_ERROR_OUT_OF_MEMORY: throw out_of_memory(msg);
    case RMM_ERROR_BAD_ALLOC:
    case RMM_ERROR_BAD_ALIGNMENT: throw bad_alloc(msg, status);
    case RMM_ERROR_CUDA:
    case RMM_ERROR_BACKEND_UNAVAILABLE: throw cuda_error(msg, status);
    case RMM_ERROR_OUT_OF_RANGE: throw out_of_range(msg, status);
    default: throw logic_error(msg, status);
  }
}

inline void check(rmm_status status) {
  if (status != RMM_SUCCESS) { throw_status(status, rmm_last_error_message()); }
}

// Reports a failure met where nothing may throw.
inline void report(rmm_status status, const char* operation) noexcept {
  if (status == RMM_SUCCESS) { return; }
  const char* message = rmm_last_error_message();
  error_handler h = error_handler_slot().load(std::memory_order_acquire);
  (h != nullptr ? h : &default_error_handler)(operation, status, message);
}

}  // namespace detail

/// Installs h as the handler for failures in noexcept members and returns the
/// previous one; nullptr restores the default (a line on stderr).
inline error_handler set_error_handler(error_handler h) noexcept {
  return detail::error_handler_slot().exchange(h != nullptr ? h : &detail::default_error_handler,
                                               std::memory_order_acq_rel);
}

/* --------------------------------------------------------------- streams */

#if RMMGO_HAS_CCCL
/// A non-owning CUDA stream: cuda::stream_ref with CCCL.
using stream_ref = ::cuda::stream_ref;
#else
/// A non-owning CUDA stream (rmm_stream_t, the same type as cudaStream_t),
/// shaped like cuda::stream_ref, which takes its place when CCCL is on.
class stream_ref {
 public:
  using value_type = rmm_stream_t;
  /// Wraps a stream; a null rmm_stream_t is the default stream.
  constexpr stream_ref(rmm_stream_t stream) noexcept : stream_(stream) {}  // NOLINT: implicit, as CCCL's
  stream_ref(int) = delete;                                                 // as CCCL's: say rmm_stream_t{}
  stream_ref(std::nullptr_t) = delete;
  /// The wrapped stream.
  constexpr rmm_stream_t get() const noexcept { return stream_; }
  /// Waits until the work queued on the stream has finished.
  void sync() const { detail::check(rmm_stream_synchronize(stream_)); }
  friend constexpr bool operator==(stream_ref a, stream_ref b) noexcept { return a.stream_ == b.stream_; }
  friend constexpr bool operator!=(stream_ref a, stream_ref b) noexcept { return a.stream_ != b.stream_; }

 private:
  rmm_stream_t stream_;
};
#endif

/// The default stream.
inline const stream_ref cuda_stream_default{rmm_stream_t{}};

/// Waits until the work queued on stream has finished.
inline void synchronize(stream_ref stream) { detail::check(rmm_stream_synchronize(stream.get())); }

/// An owned CUDA stream (rmm_stream_create_with_flags), destroyed with the
/// object. As RMM's, it synchronizes with the legacy default stream unless
/// made with flags::non_blocking. Move-only; converts to stream_ref.
class cuda_stream {
 public:
  enum class flags : unsigned int {
    sync_default = RMM_STREAM_SYNC_DEFAULT,
    non_blocking = RMM_STREAM_NON_BLOCKING,
  };
  explicit cuda_stream(flags f = flags::sync_default) {
    detail::check(rmm_stream_create_with_flags(&stream_, static_cast<unsigned int>(f)));
  }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  cuda_stream(cuda_stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  cuda_stream& operator=(cuda_stream&& other) noexcept {
    if (this != &other) {
      destroy();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  ~cuda_stream() { destroy(); }

  /// The stream; null once moved from.
  rmm_stream_t value() const noexcept { return stream_; }
  stream_ref view() const noexcept { return stream_ref{stream_}; }
  operator stream_ref() const noexcept { return view(); }  // NOLINT: implicit by design
  void synchronize() const { detail::check(rmm_stream_synchronize(stream_)); }

 private:
  void destroy() noexcept {
    if (stream_ != nullptr) { detail::report(rmm_stream_destroy(stream_), "rmm_stream_destroy"); }
    stream_ = nullptr;
  }
  rmm_stream_t stream_ = nullptr;
};

/* --------------------------------------------------------------- devices */

/// A device ordinal, as RMM spells it.
class cuda_device_id {
 public:
  using value_type = int;
  constexpr explicit cuda_device_id(int id) noexcept : id_(id) {}
  constexpr int value() const noexcept { return id_; }
  friend constexpr bool operator==(cuda_device_id a, cuda_device_id b) noexcept { return a.id_ == b.id_; }
  friend constexpr bool operator!=(cuda_device_id a, cuda_device_id b) noexcept { return a.id_ != b.id_; }

 private:
  int id_;
};

/// The calling thread's current device.
inline cuda_device_id get_current_cuda_device() {
  int d = 0;
  detail::check(rmm_get_device(&d));
  return cuda_device_id{d};
}

/// The number of devices.
inline int get_num_cuda_devices() {
  int n = 0;
  detail::check(rmm_get_device_count(&n));
  return n;
}

/// Makes device current for the calling thread.
inline void set_current_cuda_device(cuda_device_id device) { detail::check(rmm_set_device(device.value())); }

/// Free and total bytes of the current device.
inline std::pair<std::size_t, std::size_t> available_device_memory() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  detail::check(rmm_mem_get_info(&free_bytes, &total_bytes));
  return {free_bytes, total_bytes};
}

/// Asks CUDA to migrate bytes of managed memory at ptr to device, in stream
/// order on stream (rmm::prefetch). A hint: memory that is not managed is
/// left alone without error. Throws rmmgo::logic_error for a device that does
/// not exist.
inline void prefetch(void const* ptr, std::size_t bytes, cuda_device_id device, stream_ref stream) {
  detail::check(rmm_prefetch(ptr, bytes, device.value(), stream.get()));
}

/// "cuda" or "simulated": the backend this process runs on.
inline std::string backend_name() {
  const char* name = nullptr;
  detail::check(rmm_backend_name(&name));
  return name;
}

/// Makes a device current for its lifetime and restores the previous one.
class cuda_set_device_raii {
 public:
  explicit cuda_set_device_raii(cuda_device_id device) : old_(get_current_cuda_device()), needed_(old_ != device) {
    if (needed_) { set_current_cuda_device(device); }
  }
  cuda_set_device_raii(const cuda_set_device_raii&) = delete;
  cuda_set_device_raii& operator=(const cuda_set_device_raii&) = delete;
  ~cuda_set_device_raii() {
    if (needed_) { detail::report(rmm_set_device(old_.value()), "restoring the current device"); }
  }

 private:
  cuda_device_id old_;
  bool needed_;
};

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

// Every class has, besides its RMM constructors:
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

/* -------------------------------------------------------- base resources */

/// cudaMalloc / cudaFree. Device accessible.
class cuda_memory_resource final : public detail::base_resource<RMM_RESOURCE_CUDA> {
 public:
  cuda_memory_resource() : base_resource(detail::create(RMM_RESOURCE_CUDA, nullptr)) {}
  RMMGO_DETAIL_BASE_HANDLE(cuda_memory_resource)
};

/// cudaMallocManaged. Device and host accessible.
class managed_memory_resource final : public detail::base_resource<RMM_RESOURCE_MANAGED>,
                                      public detail::host_accessible_if<true> {
 public:
  managed_memory_resource() : base_resource(detail::create(RMM_RESOURCE_MANAGED, nullptr)) {}
  RMMGO_DETAIL_BASE_HANDLE(managed_memory_resource)
};

/// cudaHostAlloc (pinned host memory). Device and host accessible.
class pinned_host_memory_resource final : public detail::base_resource<RMM_RESOURCE_PINNED_HOST>,
                                          public detail::host_accessible_if<true> {
 public:
  pinned_host_memory_resource() : base_resource(detail::create(RMM_RESOURCE_PINNED_HOST, nullptr)) {}
  RMMGO_DETAIL_BASE_HANDLE(pinned_host_memory_resource)
};

/// Host memory the device can use (HMM / ATS). Device and host accessible.
/// Throws logic_error on a device without pageable memory access.
class system_memory_resource final : public detail::base_resource<RMM_RESOURCE_SYSTEM>,
                                     public detail::host_accessible_if<true> {
 public:
  system_memory_resource() : base_resource(detail::create(RMM_RESOURCE_SYSTEM, nullptr)) {}
  RMMGO_DETAIL_BASE_HANDLE(system_memory_resource)
};

/// System memory, keeping headroom bytes of device memory free. Device and
/// host accessible.
class sam_headroom_memory_resource final : public detail::base_resource<RMM_RESOURCE_SAM_HEADROOM>,
                                           public detail::host_accessible_if<true> {
 public:
  explicit sam_headroom_memory_resource(std::size_t headroom) : base_resource(make(headroom)) {}
  RMMGO_DETAIL_BASE_HANDLE(sam_headroom_memory_resource)

 private:
  static rmm_resource_t make(std::size_t headroom) {
    rmm_resource_options o = detail::default_options();
    o.headroom = headroom;
    return detail::create(RMM_RESOURCE_SAM_HEADROOM, &o);
  }
};

/// cudaMallocFromPoolAsync on a CUDA memory pool of its own. Device accessible.
class cuda_async_memory_resource final : public detail::base_resource<RMM_RESOURCE_CUDA_ASYNC> {
 public:
  /// The handle types a pool can export (RMM's values).
  enum class allocation_handle_type : unsigned int {
    none = 0,
    posix_file_descriptor = 1,
    win32 = 2,
    win32_kmt = 4,
    fabric = 8,
  };

  /// initial_pool_size primes the pool; release_threshold is what the pool
  /// keeps when idle (default: everything); export_handle_type makes the
  /// pool exportable.
  explicit cuda_async_memory_resource(std::optional<std::size_t> initial_pool_size = {},
                                      std::optional<std::size_t> release_threshold = {},
                                      std::optional<allocation_handle_type> export_handle_type = {})
      : base_resource(make(initial_pool_size, release_threshold, export_handle_type)) {}
  RMMGO_DETAIL_BASE_HANDLE(cuda_async_memory_resource)

  /// The CUDA memory pool (a cudaMemPool_t).
  rmm_mem_pool_t pool_handle() const {
    rmm_mem_pool_t p = nullptr;
    rmmgo::detail::check(rmm_cuda_async_pool_handle(handle_, &p));
    return p;
  }

 private:
  static rmm_resource_t make(std::optional<std::size_t> initial, std::optional<std::size_t> threshold,
                             std::optional<allocation_handle_type> export_type) {
    rmm_resource_options o = detail::default_options();
    if (initial) { o.initial_pool_size = *initial; }
    if (threshold) { o.release_threshold = *threshold; }
    if (export_type) { o.export_handle_types = static_cast<unsigned int>(*export_type); }
    return detail::create(RMM_RESOURCE_CUDA_ASYNC, &o);
  }
};

/// cudaMallocFromPoolAsync on a pool it does not own. Device accessible.
class cuda_async_view_memory_resource final : public detail::base_resource<RMM_RESOURCE_CUDA_ASYNC_VIEW> {
 public:
  /// pool (a cudaMemPool_t) must outlive the resource; null throws logic_error.
  explicit cuda_async_view_memory_resource(rmm_mem_pool_t pool) : base_resource(make(pool)) {}
  RMMGO_DETAIL_BASE_HANDLE(cuda_async_view_memory_resource)

  rmm_mem_pool_t pool_handle() const {
    rmm_mem_pool_t p = nullptr;
    rmmgo::detail::check(rmm_cuda_async_pool_handle(handle_, &p));
    return p;
  }

 private:
  static rmm_resource_t make(rmm_mem_pool_t pool) {
    rmm_resource_options o = detail::default_options();
    o.pool_handle = pool;
    return detail::create(RMM_RESOURCE_CUDA_ASYNC_VIEW, &o);
  }
};

/// Stream-ordered managed memory from the device's default managed pool.
/// Device and host accessible. Throws logic_error where the driver, runtime
/// or device lacks it.
class cuda_async_managed_memory_resource final : public detail::base_resource<RMM_RESOURCE_CUDA_ASYNC_MANAGED>,
                                                 public detail::host_accessible_if<true> {
 public:
  cuda_async_managed_memory_resource() : base_resource(detail::create(RMM_RESOURCE_CUDA_ASYNC_MANAGED, nullptr)) {}
  RMMGO_DETAIL_BASE_HANDLE(cuda_async_managed_memory_resource)

  rmm_mem_pool_t pool_handle() const {
    rmm_mem_pool_t p = nullptr;
    rmmgo::detail::check(rmm_cuda_async_pool_handle(handle_, &p));
    return p;
  }
};

/// Callback types of callback_memory_resource (rmmgo.h's). They run inside
/// the library and must not throw: return nullptr when there is no memory.
using allocate_callback_t = rmm_allocate_callback;
using deallocate_callback_t = rmm_deallocate_callback;

/// Allocates and deallocates through user functions. Device accessible.
class callback_memory_resource final : public detail::base_resource<RMM_RESOURCE_CALLBACK> {
 public:
  callback_memory_resource(allocate_callback_t allocate_callback, deallocate_callback_t deallocate_callback,
                           void* allocate_callback_arg = nullptr, void* deallocate_callback_arg = nullptr)
      : base_resource(make(allocate_callback, deallocate_callback, allocate_callback_arg, deallocate_callback_arg)) {}
  RMMGO_DETAIL_BASE_HANDLE(callback_memory_resource)

 private:
  static rmm_resource_t make(allocate_callback_t a, deallocate_callback_t d, void* aa, void* da) {
    rmm_resource_options o = detail::default_options();
    o.allocate_callback = a;
    o.deallocate_callback = d;
    o.allocate_arg = aa;
    o.deallocate_arg = da;
    return detail::create(RMM_RESOURCE_CALLBACK, &o);
  }
};

/* -------------------------------------------------------- sub-allocators */

/// Coalescing best-fit pool over Upstream.
template <class Upstream = device_memory_resource>
class pool_memory_resource final : public detail::upstream_resource<RMM_RESOURCE_POOL, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_POOL;

 public:
  /// initial_pool_size bytes are taken from upstream at once (0: grow on first
  /// use; size_default: half the free device memory); the pool grows up to
  /// maximum_pool_size (default: no maximum). Both multiples of 256, else
  /// logic_error.
  pool_memory_resource(const Upstream& upstream, std::size_t initial_pool_size,
                       std::optional<std::size_t> maximum_pool_size = {})
      : detail::upstream_resource<RMM_RESOURCE_POOL, Upstream>(
            make(upstream, initial_pool_size, maximum_pool_size)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(pool_memory_resource)

  /// Bytes taken from the upstream.
  std::size_t pool_size() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_pool_size(this->handle_, &n));
    return n;
  }
  /// Bytes handed out.
  std::size_t used_bytes() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_pool_used_bytes(this->handle_, &n));
    return n;
  }
  /// Gives back to the upstream every upstream chunk that is wholly free.
  void release_unused() { rmmgo::detail::check(rmm_pool_release(this->handle_)); }

 private:
  static rmm_resource_t make(const Upstream& upstream, std::size_t initial, std::optional<std::size_t> maximum) {
    rmm_resource_options o = detail::default_options();
    o.initial_pool_size = initial;
    o.maximum_pool_size = maximum ? *maximum : size_default;
    return detail::create_over(RMM_RESOURCE_POOL, upstream, o);
  }
};

/// Arena allocator over Upstream: per-thread and per-stream arenas over one
/// global arena.
template <class Upstream = device_memory_resource>
class arena_memory_resource final : public detail::upstream_resource<RMM_RESOURCE_ARENA, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_ARENA;

 public:
  /// arena_size: the global arena (default: half the free device memory; at
  /// least 1 MiB). dump_log_on_failure writes rmm_arena_memory_dump.log when
  /// an allocation fails.
  explicit arena_memory_resource(const Upstream& upstream, std::optional<std::size_t> arena_size = {},
                                 bool dump_log_on_failure = false)
      : detail::upstream_resource<RMM_RESOURCE_ARENA, Upstream>(make(upstream, arena_size, dump_log_on_failure)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(arena_memory_resource)

 private:
  static rmm_resource_t make(const Upstream& upstream, std::optional<std::size_t> size, bool dump) {
    rmm_resource_options o = detail::default_options();
    o.arena_size = size ? *size : size_default;
    o.dump_log_on_failure = dump ? 1 : 0;
    return detail::create_over(RMM_RESOURCE_ARENA, upstream, o);
  }
};

/// Blocks of one size over Upstream; a request of up to block_size bytes
/// gets a whole block, a larger one throws out_of_memory.
template <class Upstream = device_memory_resource>
class fixed_size_memory_resource final : public detail::upstream_resource<RMM_RESOURCE_FIXED_SIZE, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_FIXED_SIZE;

 public:
  static constexpr std::size_t default_block_size = std::size_t{1} << 20;
  static constexpr std::size_t default_blocks_to_preallocate = 128;

  explicit fixed_size_memory_resource(const Upstream& upstream, std::size_t block_size = default_block_size,
                                      std::size_t blocks_to_preallocate = default_blocks_to_preallocate)
      : detail::upstream_resource<RMM_RESOURCE_FIXED_SIZE, Upstream>(
            make(upstream, block_size, blocks_to_preallocate)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(fixed_size_memory_resource)

  /// The block size (rounded up to 256).
  std::size_t get_block_size() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_fixed_size_block_size(this->handle_, &n));
    return n;
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, std::size_t block, std::size_t blocks) {
    rmm_resource_options o = detail::default_options();
    o.block_size = block;
    o.blocks_to_preallocate = blocks;
    return detail::create_over(RMM_RESOURCE_FIXED_SIZE, upstream, o);
  }
};

/// Routes each request to the smallest bin that fits it, else to Upstream.
template <class Upstream = device_memory_resource>
class binning_memory_resource final : public detail::upstream_resource<RMM_RESOURCE_BINNING, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_BINNING;

 public:
  /// No bins yet: add them with add_bin.
  explicit binning_memory_resource(const Upstream& upstream)
      : detail::upstream_resource<RMM_RESOURCE_BINNING, Upstream>(make(upstream, -1, -1)) {}
  /// Fixed-size bins of 2^min_size_exponent .. 2^max_size_exponent bytes.
  binning_memory_resource(const Upstream& upstream, std::int8_t min_size_exponent, std::int8_t max_size_exponent)
      : detail::upstream_resource<RMM_RESOURCE_BINNING, Upstream>(
            make(upstream, min_size_exponent, max_size_exponent)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(binning_memory_resource)

  /// Adds a fixed-size bin over the upstream for requests up to
  /// allocation_size bytes (none if one of that size exists). Not safe while
  /// other threads allocate from this resource.
  void add_bin(std::size_t allocation_size) {
    rmmgo::detail::check(rmm_binning_add_bin(this->handle_, allocation_size, nullptr));
  }
  /// Adds bin for requests up to allocation_size bytes (never replacing a
  /// bin). The bin must have every property this resource declares.
  template <class Bin>
  void add_bin(std::size_t allocation_size, const Bin& bin) {
    static_assert(std::is_base_of_v<device_memory_resource, Bin>, "a bin must be an rmmgo resource");
    static_assert(!has_property_v<binning_memory_resource, host_accessible> || has_property_v<Bin, host_accessible>,
                  "this binning resource is host accessible: its bins must be too");
    rmmgo::detail::check(rmm_binning_add_bin(this->handle_, allocation_size, bin.handle()));
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, int min_exp, int max_exp) {
    rmm_resource_options o = detail::default_options();
    o.min_size_exponent = min_exp;
    o.max_size_exponent = max_exp;
    return detail::create_over(RMM_RESOURCE_BINNING, upstream, o);
  }
};

/* -------------------------------------------------------------- adaptors */

/// Allocations of at least alignment_threshold bytes aligned to alignment.
template <class Upstream = device_memory_resource>
class aligned_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_ALIGNED, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_ALIGNED;

 public:
  static constexpr std::size_t default_alignment_threshold = 0;

  explicit aligned_resource_adaptor(const Upstream& upstream, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT,
                                    std::size_t alignment_threshold = default_alignment_threshold)
      : detail::upstream_resource<RMM_RESOURCE_ALIGNED, Upstream>(make(upstream, alignment, alignment_threshold)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(aligned_resource_adaptor)

 private:
  static rmm_resource_t make(const Upstream& upstream, std::size_t alignment, std::size_t threshold) {
    rmm_resource_options o = detail::default_options();
    o.alignment = alignment;
    o.alignment_threshold = threshold;
    return detail::create_over(RMM_RESOURCE_ALIGNED, upstream, o);
  }
};

/// The failure callback: called with the bytes of an allocation that ran out
/// of memory and its argument; nonzero retries, zero gives up (the
/// out_of_memory reaches the caller). rmmgo.h's type; it must not throw.
using failure_callback_t = rmm_failure_callback;

/// Calls a function when Upstream runs out of memory, and retries while it
/// says so. (RMM's is a template over the exception type; this one is over
/// the upstream and acts on out_of_memory.)
template <class Upstream = device_memory_resource>
class failure_callback_resource_adaptor final
    : public detail::upstream_resource<RMM_RESOURCE_FAILURE_CALLBACK, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_FAILURE_CALLBACK;

 public:
  failure_callback_resource_adaptor(const Upstream& upstream, failure_callback_t callback, void* callback_arg)
      : detail::upstream_resource<RMM_RESOURCE_FAILURE_CALLBACK, Upstream>(make(upstream, callback, callback_arg)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(failure_callback_resource_adaptor)

 private:
  static rmm_resource_t make(const Upstream& upstream, failure_callback_t cb, void* arg) {
    rmm_resource_options o = detail::default_options();
    o.failure_callback = cb;
    o.failure_arg = arg;
    return detail::create_over(RMM_RESOURCE_FAILURE_CALLBACK, upstream, o);
  }
};

/// At most allocation_limit bytes outstanding at once (sizes counted rounded
/// up to alignment); past it, out_of_memory.
template <class Upstream = device_memory_resource>
class limiting_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_LIMITING, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_LIMITING;

 public:
  limiting_resource_adaptor(const Upstream& upstream, std::size_t allocation_limit,
                            std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT)
      : detail::upstream_resource<RMM_RESOURCE_LIMITING, Upstream>(make(upstream, allocation_limit, alignment)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(limiting_resource_adaptor)

  std::size_t get_allocated_bytes() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_limiting_allocated_bytes(this->handle_, &n));
    return n;
  }
  std::size_t get_allocation_limit() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_limiting_allocation_limit(this->handle_, &n));
    return n;
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, std::size_t limit, std::size_t alignment) {
    rmm_resource_options o = detail::default_options();
    o.allocation_limit = limit;
    o.alignment = alignment;
    return detail::create_over(RMM_RESOURCE_LIMITING, upstream, o);
  }
};

/// Writes every allocation and free to a CSV file in RMM's format.
template <class Upstream = device_memory_resource>
class logging_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_LOGGING, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_LOGGING;

 public:
  /// Logs to filename (default: the RMM_LOG_FILE environment variable; if it
  /// is not set, logic_error), truncating it; auto_flush flushes every row.
  explicit logging_resource_adaptor(const Upstream& upstream, const std::string& filename = get_default_filename(),
                                    bool auto_flush = false)
      : detail::upstream_resource<RMM_RESOURCE_LOGGING, Upstream>(make(upstream, filename, auto_flush)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(logging_resource_adaptor)

  /// The file named by RMM_LOG_FILE; logic_error if it is not set.
  static std::string get_default_filename() {
    const char* name = std::getenv("RMM_LOG_FILE");
    if (name == nullptr || name[0] == '\0') {
      throw rmmgo::logic_error("rmmgo: logging_resource_adaptor: no file name given and RMM_LOG_FILE is not set");
    }
    return name;
  }
  /// The CSV header line.
  static std::string header() { return "Thread,Time,Action,Pointer,Size,Stream"; }
  /// Writes buffered rows to the file.
  void flush() { rmmgo::detail::check(rmm_logging_flush(this->handle_)); }
  /// The file being written.
  std::string file_name() const {
    std::size_t needed = 0;
    rmmgo::detail::check(rmm_logging_file_name(this->handle_, nullptr, 0, &needed));
    std::string s(needed, '\0');
    rmmgo::detail::check(rmm_logging_file_name(this->handle_, s.data(), s.size(), &needed));
    s.resize(needed > 0 ? needed - 1 : 0);
    return s;
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, const std::string& filename, bool auto_flush) {
    rmm_resource_options o = detail::default_options();
    o.log_file = filename.c_str();
    o.auto_flush = auto_flush ? 1 : 0;
    return detail::create_over(RMM_RESOURCE_LOGGING, upstream, o);
  }
};

/// Prefetches each allocation to the current device (managed memory).
template <class Upstream = device_memory_resource>
class prefetch_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_PREFETCH, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_PREFETCH;

 public:
  explicit prefetch_resource_adaptor(const Upstream& upstream)
      : detail::upstream_resource<RMM_RESOURCE_PREFETCH, Upstream>(
            detail::create_over(RMM_RESOURCE_PREFETCH, upstream, detail::default_options())) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(prefetch_resource_adaptor)
};

/// Counts bytes and allocations: current value, peak and total, on a stack
/// of levels.
template <class Upstream = device_memory_resource>
class statistics_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_STATISTICS, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_STATISTICS;

 public:
  /// One counter (RMM's statistics_resource_adaptor::counter).
  struct counter {
    std::int64_t value = 0;
    std::int64_t peak = 0;
    std::int64_t total = 0;
  };

  explicit statistics_resource_adaptor(const Upstream& upstream)
      : detail::upstream_resource<RMM_RESOURCE_STATISTICS, Upstream>(
            detail::create_over(RMM_RESOURCE_STATISTICS, upstream, detail::default_options())) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(statistics_resource_adaptor)

  /// Bytes counter of the innermost level.
  counter get_bytes_counter() const { return get().first; }
  /// Allocations counter of the innermost level.
  counter get_allocations_counter() const { return get().second; }
  /// Starts a new level at zero; returns the (bytes, allocations) counters of
  /// the level that was innermost.
  std::pair<counter, counter> push_counters() {
    rmm_statistics s = blank();
    rmmgo::detail::check(rmm_statistics_push(this->handle_, &s));
    return split(s);
  }
  /// Ends the innermost level, folds it into its parent and returns it;
  /// rmmgo::out_of_range when only one level is left.
  std::pair<counter, counter> pop_counters() {
    rmm_statistics s = blank();
    rmmgo::detail::check(rmm_statistics_pop(this->handle_, &s));
    return split(s);
  }

 private:
  static rmm_statistics blank() {
    rmm_statistics s{};
    s.struct_size = sizeof s;
    return s;
  }
  static std::pair<counter, counter> split(const rmm_statistics& s) {
    return {counter{s.bytes.value, s.bytes.peak, s.bytes.total}, counter{s.count.value, s.count.peak, s.count.total}};
  }
  std::pair<counter, counter> get() const {
    rmm_statistics s = blank();
    rmmgo::detail::check(rmm_statistics_get(this->handle_, &s));
    return split(s);
  }
};

/// One lock around every call to Upstream.
template <class Upstream = device_memory_resource>
class thread_safe_resource_adaptor final
    : public detail::upstream_resource<RMM_RESOURCE_THREAD_SAFE, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_THREAD_SAFE;

 public:
  explicit thread_safe_resource_adaptor(const Upstream& upstream)
      : detail::upstream_resource<RMM_RESOURCE_THREAD_SAFE, Upstream>(
            detail::create_over(RMM_RESOURCE_THREAD_SAFE, upstream, detail::default_options())) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(thread_safe_resource_adaptor)
};

/// Records every outstanding allocation (and, with capture_stacks, where it
/// was made).
template <class Upstream = device_memory_resource>
class tracking_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_TRACKING, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_TRACKING;

 public:
  explicit tracking_resource_adaptor(const Upstream& upstream, bool capture_stacks = false)
      : detail::upstream_resource<RMM_RESOURCE_TRACKING, Upstream>(make(upstream, capture_stacks)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(tracking_resource_adaptor)

  /// Bytes outstanding.
  std::size_t get_allocated_bytes() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_tracking_allocated_bytes(this->handle_, &n));
    return n;
  }
  /// Number of outstanding allocations.
  std::size_t get_outstanding_allocation_count() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_tracking_outstanding_count(this->handle_, &n));
    return n;
  }
  /// A readable report of the outstanding allocations.
  std::string get_outstanding_allocations_str() const {
    std::size_t needed = 0;
    rmmgo::detail::check(rmm_tracking_report(this->handle_, nullptr, 0, &needed));
    std::string s(needed, '\0');
    rmmgo::detail::check(rmm_tracking_report(this->handle_, s.data(), s.size(), &needed));
    s.resize(needed > 0 ? needed - 1 : 0);
    return s;
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, bool capture) {
    rmm_resource_options o = detail::default_options();
    o.capture_stacks = capture ? 1 : 0;
    return detail::create_over(RMM_RESOURCE_TRACKING, upstream, o);
  }
};

#undef RMMGO_DETAIL_BASE_HANDLE
#undef RMMGO_DETAIL_UPSTREAM_HANDLE

/* ------------------------------------------------------ CCCL conformance */

#if RMMGO_HAS_CCCL
#  if RMMGO_CCCL_LEGACY_NAMES
#    define RMMGO_DETAIL_RESOURCE_WITH ::cuda::mr::async_resource_with
#  else
#    define RMMGO_DETAIL_RESOURCE_WITH ::cuda::mr::resource_with
#  endif
#  define RMMGO_DETAIL_ASSERT_DEVICE(...)                                        \
    static_assert(RMMGO_DETAIL_RESOURCE_WITH<__VA_ARGS__, device_accessible>, \
                  #__VA_ARGS__ " must be a CCCL resource with device_accessible")
#  define RMMGO_DETAIL_ASSERT_HOST(...)                                                           \
    static_assert(RMMGO_DETAIL_RESOURCE_WITH<__VA_ARGS__, device_accessible, host_accessible>, \
                  #__VA_ARGS__ " must be a CCCL resource with device_accessible and host_accessible")
RMMGO_DETAIL_ASSERT_DEVICE(device_memory_resource);
RMMGO_DETAIL_ASSERT_DEVICE(cuda_memory_resource);
RMMGO_DETAIL_ASSERT_HOST(managed_memory_resource);
RMMGO_DETAIL_ASSERT_HOST(pinned_host_memory_resource);
RMMGO_DETAIL_ASSERT_HOST(system_memory_resource);
RMMGO_DETAIL_ASSERT_HOST(sam_headroom_memory_resource);
RMMGO_DETAIL_ASSERT_DEVICE(cuda_async_memory_resource);
RMMGO_DETAIL_ASSERT_DEVICE(cuda_async_view_memory_resource);
RMMGO_DETAIL_ASSERT_HOST(cuda_async_managed_memory_resource);
RMMGO_DETAIL_ASSERT_DEVICE(callback_memory_resource);
RMMGO_DETAIL_ASSERT_DEVICE(pool_memory_resource<>);
RMMGO_DETAIL_ASSERT_HOST(pool_memory_resource<managed_memory_resource>);
RMMGO_DETAIL_ASSERT_DEVICE(arena_memory_resource<>);
RMMGO_DETAIL_ASSERT_DEVICE(fixed_size_memory_resource<>);
RMMGO_DETAIL_ASSERT_DEVICE(binning_memory_resource<>);
RMMGO_DETAIL_ASSERT_DEVICE(aligned_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(failure_callback_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(limiting_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(logging_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(prefetch_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(statistics_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_HOST(statistics_resource_adaptor<pinned_host_memory_resource>);
RMMGO_DETAIL_ASSERT_DEVICE(thread_safe_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(tracking_resource_adaptor<>);
#  undef RMMGO_DETAIL_ASSERT_DEVICE
#  undef RMMGO_DETAIL_ASSERT_HOST
#  undef RMMGO_DETAIL_RESOURCE_WITH
#endif

/* ---------------------------------------------------- per-device resources */

/// The calling thread's current device's resource (a new reference); until
/// one is set, a cuda_memory_resource made on first use. Shared with every
/// language in the process.
inline device_memory_resource get_current_device_resource() {
  rmm_resource_t h = nullptr;
  rmmgo::detail::check(rmm_get_current_device_resource(&h));
  return device_memory_resource(adopt_handle, h);
}
/// RMM's name for get_current_device_resource (here an owning handle).
inline device_memory_resource get_current_device_resource_ref() { return get_current_device_resource(); }

/// Makes mr the current device's resource; returns the previous one.
inline device_memory_resource set_current_device_resource(const device_memory_resource& mr) {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_set_current_device_resource(mr.handle(), &prev));
  return device_memory_resource(adopt_handle, prev);
}
/// Restores the initial resource of the current device; returns the previous one.
inline device_memory_resource reset_current_device_resource() {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_reset_current_device_resource(&prev));
  return device_memory_resource(adopt_handle, prev);
}

/// The resource of a device (a new reference).
inline device_memory_resource get_per_device_resource(cuda_device_id device) {
  rmm_resource_t h = nullptr;
  rmmgo::detail::check(rmm_get_per_device_resource(device.value(), &h));
  return device_memory_resource(adopt_handle, h);
}
inline device_memory_resource get_per_device_resource_ref(cuda_device_id device) {
  return get_per_device_resource(device);
}
/// Makes mr the resource of device; returns the previous one.
inline device_memory_resource set_per_device_resource(cuda_device_id device, const device_memory_resource& mr) {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_set_per_device_resource(device.value(), mr.handle(), &prev));
  return device_memory_resource(adopt_handle, prev);
}
/// Restores the initial resource of device; returns the previous one.
inline device_memory_resource reset_per_device_resource(cuda_device_id device) {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_reset_per_device_resource(device.value(), &prev));
  return device_memory_resource(adopt_handle, prev);
}

}  // namespace mr

/* ---------------------------------------------------------------- buffers */

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

#endif /* RMMGO_HPP */
