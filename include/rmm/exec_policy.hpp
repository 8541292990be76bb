/* rmm/exec_policy.hpp -- Thrust execution policies that run on a stream and
 * take their temporary memory from a device resource (the current device
 * resource by default) through rmm::mr::thrust_allocator; exec_policy_nosync
 * does not synchronize the stream after an algorithm when Thrust need not.
 * Needs Thrust's headers (CCCL): not compiled by rmmgo's shim builds. */
#pragma once
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/export.hpp>
#include <rmm/detail/thrust_namespace.h>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/thrust_allocator_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <thrust/system/cuda/execution_policy.h>
#include <thrust/version.h>

#include <utility>

namespace RMM_NAMESPACE {

using thrust_exec_policy_t =
    thrust::detail::execute_with_allocator<mr::thrust_allocator<char>, thrust::cuda_cub::execute_on_stream_base>;

class exec_policy : public thrust_exec_policy_t {
 public:
  explicit exec_policy(cuda_stream_view stream = cuda_stream_default,
                       cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : thrust_exec_policy_t(thrust::cuda::par(mr::thrust_allocator<char>(stream, std::move(mr))).on(stream.value())) {}
};

using thrust_exec_policy_nosync_t =
    thrust::detail::execute_with_allocator<mr::thrust_allocator<char>, thrust::cuda_cub::execute_on_stream_nosync_base>;

class exec_policy_nosync : public thrust_exec_policy_nosync_t {
 public:
  explicit exec_policy_nosync(cuda_stream_view stream = cuda_stream_default,
                              cuda::mr::any_resource<cuda::mr::device_accessible> mr =
                                  mr::get_current_device_resource_ref())
      : thrust_exec_policy_nosync_t(
            thrust::cuda::par_nosync(mr::thrust_allocator<char>(stream, std::move(mr))).on(stream.value())) {}
};

}  // namespace RMM_NAMESPACE
