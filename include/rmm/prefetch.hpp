/* rmm/prefetch.hpp -- migrates managed memory to a device in stream order
 * (rmmgo: librmmgo's rmm_prefetch, which, as RMM's, does nothing for memory
 * that is not managed). */
#pragma once
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>
#include <rmm/error.hpp>

#include <rmmgo.h>

#include <cuda/std/span>

#include <cstddef>

namespace RMM_NAMESPACE {

inline void prefetch(void const* ptr, std::size_t size, rmm::cuda_device_id device, rmm::cuda_stream_view stream) {
  detail::check_rmmgo(rmm_prefetch(ptr, size, device.value(), reinterpret_cast<rmm_stream_t>(stream.value())),
                      "cudaMemPrefetchAsync");
}

template <typename T>
void prefetch(cuda::std::span<T const> data, rmm::cuda_device_id device, rmm::cuda_stream_view stream) {
  prefetch(data.data(), data.size_bytes(), device, stream);
}

}  // namespace RMM_NAMESPACE
