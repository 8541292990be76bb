/* rmm/resource_ref.hpp -- RMM's names for CCCL's resource references. */
#pragma once
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>

#include <cuda/memory_resource>

namespace RMM_NAMESPACE {

using device_resource_ref = cuda::mr::synchronous_resource_ref<cuda::mr::device_accessible>;
using device_async_resource_ref = cuda::mr::resource_ref<cuda::mr::device_accessible>;
using host_resource_ref = cuda::mr::synchronous_resource_ref<cuda::mr::host_accessible>;
using host_async_resource_ref = cuda::mr::resource_ref<cuda::mr::host_accessible>;
using host_device_resource_ref =
    cuda::mr::synchronous_resource_ref<cuda::mr::host_accessible, cuda::mr::device_accessible>;
using host_device_async_resource_ref = cuda::mr::resource_ref<cuda::mr::host_accessible, cuda::mr::device_accessible>;

template <class Resource>
device_async_resource_ref to_device_async_resource_ref_checked(Resource* res) {
  RMM_EXPECTS(res, "Unexpected null resource pointer.");
  return device_async_resource_ref{*res};
}

}  // namespace RMM_NAMESPACE
