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
 * Requirements: C++17; rmmgo.h and the rmmgo/ folder beside this file; link
 * with -lrmmgo. No CUDA header is needed.
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
 *
 * Headers. This header includes all of these; each also compiles alone:
 *
 *     rmmgo/errors.hpp           exceptions and set_error_handler
 *     rmmgo/streams.hpp          stream_ref, cuda_stream
 *     rmmgo/devices.hpp          cuda_device_id, the current device, memory
 *                                info, prefetch
 *     rmmgo/memory_resource.hpp  device_memory_resource (the handle every
 *                                class derives from), properties
 *     rmmgo/resources.hpp        every *_memory_resource class
 *     rmmgo/adaptors.hpp         every *_resource_adaptor class
 *     rmmgo/per_device.hpp       get/set/reset_current_device_resource
 *     rmmgo/buffers.hpp          device_buffer, device_uvector
 *     rmmgo/cccl.hpp             the CCCL switch (RMMGO_HAS_CCCL), included
 *                                first by every other one
 */
#ifndef RMMGO_HPP
#define RMMGO_HPP

#include "rmmgo/cccl.hpp"  // first: with CCCL < 3.2 it enables CCCL's memory resources
#include "rmmgo.h"
#include "rmmgo/errors.hpp"
#include "rmmgo/streams.hpp"
#include "rmmgo/devices.hpp"
#include "rmmgo/memory_resource.hpp"
#include "rmmgo/resources.hpp"
#include "rmmgo/adaptors.hpp"
#include "rmmgo/per_device.hpp"
#include "rmmgo/buffers.hpp"

#endif /* RMMGO_HPP */
