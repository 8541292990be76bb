/* rmm/mr/per_device_resource.hpp -- the current resource of each device
 * (rmmgo). The current resource is librmmgo's: what C++ sets here is what C,
 * Python and Go see, and what they set is what get_current_device_resource_ref
 * returns. C++ keeps, as RMM does, the object it was given (an any_resource)
 * so that the reference it hands out is to that object. */
#pragma once
#include <rmm/cuda_device.hpp>
#include <rmm/process_is_exiting.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/detail/rmmgo_handle.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <optional>
#include <map>
#include <mutex>
#include <utility>

namespace RMM_NAMESPACE::mr {

namespace detail {

/// Any librmmgo handle, as a C++ resource (what another language set current).
class foreign_resource : public handle_resource {
 public:
  explicit foreign_resource(rmm_resource_t adopted) : handle_resource{adopted} {}
  RMMGO_RMM_EQUALITY(foreign_resource)
  friend void get_property(foreign_resource const&, cuda::mr::device_accessible) noexcept {}
};

struct device_slot {
  rmm_resource_t handle{};  // the library's resource this object stands for (not owned)
  std::optional<any_device_resource> object;  // what C++ was given (or stands for the handle)
};

RMM_EXPORT inline std::mutex& ref_map_lock() {
  static std::mutex m;
  return m;
}
RMM_EXPORT inline std::map<int, device_slot>& get_ref_map() {
  static auto* m = new std::map<int, device_slot>();  // never destroyed: refs may outlive static destruction
  rmm::detail::register_process_exit_hook();          // as RMM: the flag is set before the map would go
  return *m;
}
inline cuda_memory_resource& initial_resource() {
  static cuda_memory_resource mr{};
  return mr;
}

/// A C++ object for a handle C++ was not given (adopted): a
/// cuda_memory_resource for a cuda handle (a device's initial resource, so
/// that it compares equal to initial_resource(), as RMM's), else a
/// foreign_resource.
inline any_device_resource stand_in(rmm_resource_t adopted) {
  rmm_resource_kind kind{};
  if (rmm_resource_kind_of(adopted, &kind) == RMM_SUCCESS && kind == RMM_RESOURCE_CUDA) {
    return any_device_resource{cuda_memory_resource{adopt_handle, adopted}};
  }
  return any_device_resource{foreign_resource{adopted}};
}

/// The previous resource of slot, given the library's previous handle
/// (adopted): the object C++ was given when it is still the one, else the
/// handle itself.
inline any_device_resource take_previous(device_slot& slot, rmm_resource_t prev) {
  if (slot.handle == prev && slot.object) {
    (void)rmm_resource_release(prev);
    return std::move(*slot.object);
  }
  return stand_in(prev);
}

}  // namespace detail

inline device_async_resource_ref get_per_device_resource_ref(cuda_device_id device_id) {
  rmm_resource_t h = nullptr;
  detail::check(rmm_get_per_device_resource(device_id.value(), &h));
  std::lock_guard<std::mutex> lock{detail::ref_map_lock()};
  auto& slot = detail::get_ref_map()[device_id.value()];
  if (slot.handle == h && slot.object) {
    (void)rmm_resource_release(h);
    return device_async_resource_ref{*slot.object};
  }
  // Set from another language (or never set): stand for the library's resource.
  slot.object.emplace(detail::stand_in(h));
  slot.handle = h;
  return device_async_resource_ref{*slot.object};
}

/// Makes new_resource device_id's resource; returns the previous one.
template <class Resource>
cuda::mr::any_resource<cuda::mr::device_accessible> set_per_device_resource(cuda_device_id device_id,
                                                                          Resource&& new_resource) {
  detail::upstream_arg arg{std::forward<Resource>(new_resource)};
  rmm_resource_t prev = nullptr;
  std::lock_guard<std::mutex> lock{detail::ref_map_lock()};
  detail::check(rmm_set_per_device_resource(device_id.value(), arg.handle, &prev));
  auto& slot = detail::get_ref_map()[device_id.value()];
  cuda::mr::any_resource<cuda::mr::device_accessible> old = take_previous(slot, prev);
  slot.object = std::move(arg.object);
  slot.handle = arg.handle;
  return old;
}

inline device_async_resource_ref get_current_device_resource_ref() {
  return get_per_device_resource_ref(rmm::get_current_cuda_device());
}

template <class Resource>
cuda::mr::any_resource<cuda::mr::device_accessible> set_current_device_resource(Resource&& new_resource) {
  return set_per_device_resource(rmm::get_current_cuda_device(), std::forward<Resource>(new_resource));
}

/// RMM's earlier spellings.
template <class Resource>
cuda::mr::any_resource<cuda::mr::device_accessible> set_per_device_resource_ref(cuda_device_id device_id,
                                                                              Resource&& new_resource) {
  return set_per_device_resource(device_id, std::forward<Resource>(new_resource));
}
template <class Resource>
cuda::mr::any_resource<cuda::mr::device_accessible> set_current_device_resource_ref(Resource&& new_resource) {
  return set_current_device_resource(std::forward<Resource>(new_resource));
}

inline cuda::mr::any_resource<cuda::mr::device_accessible> reset_per_device_resource(cuda_device_id device_id) {
  rmm_resource_t prev = nullptr;
  std::lock_guard<std::mutex> lock{detail::ref_map_lock()};
  detail::check(rmm_reset_per_device_resource(device_id.value(), &prev));
  auto& slot = detail::get_ref_map()[device_id.value()];
  cuda::mr::any_resource<cuda::mr::device_accessible> old = take_previous(slot, prev);
  slot.object.reset();
  slot.handle = nullptr;  // the next get wraps the library's new resource
  return old;
}
inline cuda::mr::any_resource<cuda::mr::device_accessible> reset_current_device_resource() {
  return reset_per_device_resource(rmm::get_current_cuda_device());
}
inline device_async_resource_ref reset_current_device_resource_ref() {
  (void)reset_current_device_resource();
  return get_current_device_resource_ref();
}

}  // namespace RMM_NAMESPACE::mr
