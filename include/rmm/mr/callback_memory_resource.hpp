/* rmm/mr/callback_memory_resource.hpp -- allocation through user functions
 * (rmmgo: registered as an external librmmgo resource). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

#include <functional>
#include <memory>

namespace RMM_NAMESPACE::mr {

using allocate_callback_t = std::function<void*(std::size_t, cuda_stream_view, void*)>;
using deallocate_callback_t = std::function<void(void*, std::size_t, cuda_stream_view, void*)>;

class callback_memory_resource : public detail::handle_resource {
  struct box {
    allocate_callback_t alloc;
    deallocate_callback_t dealloc;
    void* alloc_arg;
    void* dealloc_arg;
  };
  static rmm_status do_alloc(void* self, std::size_t bytes, std::size_t, rmm_stream_t s, void** p, char* msg,
                             std::size_t n) noexcept {
    try {
      auto* b = static_cast<box*>(self);
      *p = b->alloc(bytes, cuda_stream_view{reinterpret_cast<cudaStream_t>(s)}, b->alloc_arg);
      return RMM_SUCCESS;
    } catch (...) {
      return detail::current_exception_status(msg, n);
    }
  }
  static rmm_status do_dealloc(void* self, void* p, std::size_t bytes, std::size_t, rmm_stream_t s, char*,
                               std::size_t) noexcept {
    auto* b = static_cast<box*>(self);
    b->dealloc(p, bytes, cuda_stream_view{reinterpret_cast<cudaStream_t>(s)}, b->dealloc_arg);
    return RMM_SUCCESS;
  }
  static void do_release(void* self) noexcept { delete static_cast<box*>(self); }
  static rmm_resource_t make(box* b) {
    rmm_external_resource ops{};
    ops.struct_size = sizeof ops;
    ops.self = b;
    ops.allocate = &do_alloc;
    ops.deallocate = &do_dealloc;
    ops.release = &do_release;
    ops.properties = RMM_PROPERTY_DEVICE_ACCESSIBLE;
    ops.device = -1;
    rmm_resource_t h = nullptr;
    rmm_status st = rmm_resource_create_external(&ops, &h);
    if (st != RMM_SUCCESS) {
      delete b;
      detail::throw_status(st);
    }
    return h;
  }

 public:
  callback_memory_resource(allocate_callback_t allocate_callback, deallocate_callback_t deallocate_callback,
                           void* allocate_callback_arg = nullptr, void* deallocate_callback_arg = nullptr)
      : detail::handle_resource{make(new box{std::move(allocate_callback), std::move(deallocate_callback),
                                             allocate_callback_arg, deallocate_callback_arg})} {}
  callback_memory_resource() = delete;
  RMMGO_RMM_EQUALITY(callback_memory_resource)
  friend void get_property(callback_memory_resource const&, cuda::mr::device_accessible) noexcept {}
};
static_assert(cuda::mr::resource_with<callback_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
