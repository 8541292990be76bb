/* rmm/device_vector.hpp -- thrust::device_vector over rmm's Thrust
 * allocator (needs Thrust: see rmm/mr/thrust_allocator_adaptor.hpp). */
#pragma once
#include <rmm/detail/export.hpp>
#include <rmm/detail/thrust_namespace.h>
#include <rmm/mr/thrust_allocator_adaptor.hpp>

#ifndef FAKE_CCCL_VERSION
#include <thrust/device_vector.h>

namespace RMM_NAMESPACE {
template <typename T>
using device_vector = thrust::device_vector<T, rmm::mr::thrust_allocator<T>>;
}  // namespace RMM_NAMESPACE
#endif
