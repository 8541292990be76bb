/*
 * rmmgo/cccl.hpp -- whether rmmgo's C++ classes take CCCL's types.
 *
 * When <cuda/memory_resource>, <cuda/stream_ref> and the CUDA runtime headers
 * are on the include path (CCCL 3.0 or newer) and RMMGO_DISABLE_CCCL is not
 * defined, RMMGO_HAS_CCCL is 1: rmmgo::stream_ref is cuda::stream_ref, the
 * property tags are CCCL's, and every class is checked against CCCL's
 * resource concept where it is defined. RMMGO_CCCL_LEGACY_NAMES is 1 with
 * CCCL 3.0, whose concepts spell the interface allocate(bytes, alignment) and
 * allocate_async(bytes, alignment, stream).
 *
 * Every rmmgo header includes this one first. With CCCL older than 3.2 it
 * defines LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE, so include an rmmgo
 * header before any CCCL header (or define that macro yourself).
 */
#ifndef RMMGO_CCCL_HPP
#define RMMGO_CCCL_HPP

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

/* RMMGO_DETAIL_ASSERT_DEVICE(T): T satisfies CCCL's resource concept with
 * device_accessible; RMMGO_DETAIL_ASSERT_HOST(T): with host_accessible too.
 * Each header checks its own classes; without CCCL these check nothing. */
#if RMMGO_HAS_CCCL
#  if RMMGO_CCCL_LEGACY_NAMES
#    define RMMGO_DETAIL_RESOURCE_WITH ::cuda::mr::async_resource_with
#  else
#    define RMMGO_DETAIL_RESOURCE_WITH ::cuda::mr::resource_with
#  endif
#  define RMMGO_DETAIL_ASSERT_DEVICE(...)                                                     \
    static_assert(RMMGO_DETAIL_RESOURCE_WITH<__VA_ARGS__, ::cuda::mr::device_accessible>, \
                  #__VA_ARGS__ " must be a CCCL resource with device_accessible")
#  define RMMGO_DETAIL_ASSERT_HOST(...)                                                        \
    static_assert(RMMGO_DETAIL_RESOURCE_WITH<__VA_ARGS__, ::cuda::mr::device_accessible,   \
                                             ::cuda::mr::host_accessible>,                 \
                  #__VA_ARGS__ " must be a CCCL resource with device_accessible and host_accessible")
#else
#  define RMMGO_DETAIL_ASSERT_DEVICE(...) static_assert(true, "CCCL is off")
#  define RMMGO_DETAIL_ASSERT_HOST(...) static_assert(true, "CCCL is off")
#endif

#endif /* RMMGO_CCCL_HPP */
