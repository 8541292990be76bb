/* rmm/prefetch.hpp -- migrate managed memory to a device (or the host,
 * cudaCpuDeviceId) in stream order (rmmgo: through librmmgo's rmm_prefetch,
 * which ignores memory that is not managed and devices without concurrent
 * managed access, as RMM does). */
#pragma once
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>

#include <rmmgo.h>

#include <cuda/std/span>

#include <cstddef>

namespace RMM_NAMESPACE {

/// Prefetches size bytes at ptr to device on stream; throws rmm::cuda_error on failure.
inline void prefetch(void const* ptr, std::size_t size, rmm::cuda_device_id device, rmm::cuda_stream_view stream) {
  detail::check_rmmgo(rmm_prefetch(ptr, size, device.value(), reinterpret_cast<rmm_stream_t>(stream.value())),
                      "cudaMemPrefetchAsync");
}

/// Prefetches the memory a span covers.
template <typename T>
void prefetch(cuda::std::span<T const> data, rmm::cuda_device_id device, rmm::cuda_stream_view stream) {
  prefetch(data.data(), data.size_bytes(), device, stream);
}

}  // namespace RMM_NAMESPACE
