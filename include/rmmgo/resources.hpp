/*
 * rmmgo/resources.hpp -- every *_memory_resource class: the base resources
 * (cuda, managed, pinned_host, system, sam_headroom, cuda_async,
 * cuda_async_view, cuda_async_managed, callback), the sub-allocators over
 * an upstream (pool, arena, fixed_size, binning), and expandable, a
 * sub-allocator over device memory it maps itself.
 */
#ifndef RMMGO_RESOURCES_HPP
#define RMMGO_RESOURCES_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"
#include "errors.hpp"
#include "memory_resource.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace rmmgo {
namespace mr {

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
  /// The most bytes taken from the upstream at once.
  std::size_t peak_pool_size() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_pool_peak_size(this->handle_, &n));
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

/// A stream-ordered sub-allocator over one reserved range of device
/// addresses, which it backs with device memory in granules (2 MiB on
/// current GPUs) as it grows and gives back granule by granule, live memory
/// staying where it is: free memory never splits across separate chunks.
/// Needs CUDA 12.5 or later (else logic_error with RMM_ERROR_NOT_SUPPORTED). Device
/// accessible.
class expandable_memory_resource final : public detail::base_resource<RMM_RESOURCE_EXPANDABLE> {
 public:
  /// maximum_pool_size bounds the device memory mapped (default: the
  /// device's memory); above release_threshold bytes mapped it gives back
  /// wholly free granules before it maps more (default: only at the
  /// maximum). Multiples of 256, else logic_error.
  explicit expandable_memory_resource(std::optional<std::size_t> maximum_pool_size = {},
                                      std::optional<std::size_t> release_threshold = {})
      : base_resource(make(maximum_pool_size, release_threshold)) {}
  RMMGO_DETAIL_BASE_HANDLE(expandable_memory_resource)

  /// Bytes of device memory mapped.
  std::size_t pool_size() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_pool_size(handle_, &n));
    return n;
  }
  /// The most bytes of device memory mapped at once.
  std::size_t peak_pool_size() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_pool_peak_size(handle_, &n));
    return n;
  }
  /// Bytes handed out.
  std::size_t used_bytes() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_pool_used_bytes(handle_, &n));
    return n;
  }
  /// Gives back to the device every wholly free granule (synchronizes the
  /// device first).
  void release_unused() { rmmgo::detail::check(rmm_pool_release(handle_)); }

 private:
  static rmm_resource_t make(std::optional<std::size_t> maximum, std::optional<std::size_t> threshold) {
    rmm_resource_options o = detail::default_options();
    o.maximum_pool_size = maximum ? *maximum : size_default;
    o.release_threshold = threshold ? *threshold : size_default;
    return detail::create(RMM_RESOURCE_EXPANDABLE, &o);
  }
};

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
RMMGO_DETAIL_ASSERT_DEVICE(expandable_memory_resource);

}  // namespace mr
}  // namespace rmmgo

#endif /* RMMGO_RESOURCES_HPP */
