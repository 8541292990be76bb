/* rmm/detail/runtime_capabilities.hpp -- what the device and runtime
 * support, asked through librmmgo (rmmgo's own). The attribute numbers are
 * CUDA's cudaDeviceAttr values. */
#pragma once
#include <rmm/cuda_device.hpp>
#include <rmm/detail/export.hpp>

#include <rmmgo.h>

namespace RMM_NAMESPACE {
namespace detail {

inline bool device_attribute(int attribute) {
  int device = 0, value = 0;
  if (rmm_get_device(&device) != RMM_SUCCESS) { return false; }
  return rmm_device_get_attribute(&value, attribute, device) == RMM_SUCCESS && value != 0;
}
inline int runtime_version() {
  int v = 0;
  return rmm_runtime_version(&v) == RMM_SUCCESS ? v : 0;
}

struct runtime_async_alloc {
  static bool is_supported() { return device_attribute(115 /* cudaDevAttrMemoryPoolsSupported */); }
};
struct export_handle_type {
  template <class HandleType>
  static bool is_supported(HandleType handle_type) {
    int device = 0, value = 0;
    if (rmm_get_device(&device) != RMM_SUCCESS) { return false; }
    if (rmm_device_get_attribute(&value, 119 /* cudaDevAttrMemoryPoolSupportedHandleTypes */, device) != RMM_SUCCESS) {
      return false;
    }
    return (static_cast<int>(handle_type) & value) == static_cast<int>(handle_type);
  }
};
/// rmmgo offers no hardware-decompression pools.
struct hwdecompress {
  static bool is_supported() { return false; }
};
struct concurrent_managed_access {
  static bool is_supported() { return device_attribute(89 /* cudaDevAttrConcurrentManagedAccess */); }
};
struct runtime_async_managed_alloc {
  static bool is_supported() { return runtime_version() >= 13000 && concurrent_managed_access::is_supported(); }
};
struct device_integrated_memory {
  static bool is_supported() { return device_attribute(18 /* cudaDevAttrIntegrated */); }
};

}  // namespace detail

namespace mr::detail {
/// Whether the device can use pageable host memory (HMM or ATS).
inline bool is_system_memory_supported(cuda_device_id device_id) {
  int value = 0;
  return rmm_device_get_attribute(&value, 88 /* cudaDevAttrPageableMemoryAccess */, device_id.value()) == RMM_SUCCESS &&
         value != 0;
}
}  // namespace mr::detail

}  // namespace RMM_NAMESPACE
