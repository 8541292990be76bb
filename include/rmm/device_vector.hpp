/* rmm/device_vector.hpp -- thrust::device_vector allocating through
 * rmm::mr::thrust_allocator. Needs Thrust's headers (CCCL). */
#pragma once
#include <rmm/detail/export.hpp>
#include <rmm/detail/thrust_namespace.h>
#include <rmm/mr/thrust_allocator_adaptor.hpp>

#include <thrust/device_vector.h>

namespace RMM_NAMESPACE {
template <typename T>
using device_vector = thrust::device_vector<T, rmm::mr::thrust_allocator<T>>;
}  // namespace RMM_NAMESPACE
