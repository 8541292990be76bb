/*
 * rmmgo/per_device.hpp -- each device's current resource, shared with every
 * language in the process: get_current_device_resource,
 * set_current_device_resource, reset_current_device_resource and their
 * per_device forms.
 */
#ifndef RMMGO_PER_DEVICE_HPP
#define RMMGO_PER_DEVICE_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"
#include "devices.hpp"
#include "errors.hpp"
#include "memory_resource.hpp"

namespace rmmgo {
namespace mr {

/// The calling thread's current device's resource (a new reference); until
/// one is set, a cuda_memory_resource made on first use. Shared with every
/// language in the process.
inline device_memory_resource get_current_device_resource() {
  rmm_resource_t h = nullptr;
  rmmgo::detail::check(rmm_get_current_device_resource(&h));
  return device_memory_resource(adopt_handle, h);
}
/// RMM's name for get_current_device_resource (here an owning handle).
inline device_memory_resource get_current_device_resource_ref() { return get_current_device_resource(); }

/// Makes mr the current device's resource; returns the previous one.
inline device_memory_resource set_current_device_resource(const device_memory_resource& mr) {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_set_current_device_resource(mr.handle(), &prev));
  return device_memory_resource(adopt_handle, prev);
}
/// Restores the initial resource of the current device; returns the previous one.
inline device_memory_resource reset_current_device_resource() {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_reset_current_device_resource(&prev));
  return device_memory_resource(adopt_handle, prev);
}

/// The resource of a device (a new reference).
inline device_memory_resource get_per_device_resource(cuda_device_id device) {
  rmm_resource_t h = nullptr;
  rmmgo::detail::check(rmm_get_per_device_resource(device.value(), &h));
  return device_memory_resource(adopt_handle, h);
}
inline device_memory_resource get_per_device_resource_ref(cuda_device_id device) {
  return get_per_device_resource(device);
}
/// Makes mr the resource of device; returns the previous one.
inline device_memory_resource set_per_device_resource(cuda_device_id device, const device_memory_resource& mr) {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_set_per_device_resource(device.value(), mr.handle(), &prev));
  return device_memory_resource(adopt_handle, prev);
}
/// Restores the initial resource of device; returns the previous one.
inline device_memory_resource reset_per_device_resource(cuda_device_id device) {
  rmm_resource_t prev = nullptr;
  rmmgo::detail::check(rmm_reset_per_device_resource(device.value(), &prev));
  return device_memory_resource(adopt_handle, prev);
}

}  // namespace mr
}  // namespace rmmgo

#endif /* RMMGO_PER_DEVICE_HPP */
