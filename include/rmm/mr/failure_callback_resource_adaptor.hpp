/* rmm/mr/failure_callback_resource_adaptor.hpp -- calls a function when an
 * allocation runs out of memory, and retries while it says so (rmmgo). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>
#include <rmm/mr/failure_callback_t.hpp>

#include <memory>

namespace RMM_NAMESPACE::mr {

class failure_callback_resource_adaptor : public detail::upstream_resource {
  struct callback_box {
    failure_callback_t callback;
    void* arg;
  };
  static int call(std::size_t bytes, void* box) {
    auto* b = static_cast<callback_box*>(box);
    return b->callback(bytes, b->arg) ? 1 : 0;
  }

 public:
  failure_callback_resource_adaptor(detail::upstream_arg upstream, failure_callback_t callback, void* callback_arg)
      : failure_callback_resource_adaptor{std::move(upstream),
                                          std::make_shared<callback_box>(callback_box{std::move(callback), callback_arg})} {}
  RMMGO_RMM_EQUALITY(failure_callback_resource_adaptor)
  friend void get_property(failure_callback_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}

 private:
  // The box lives while any copy of this object does (the library calls it
  // through its pointer).
  failure_callback_resource_adaptor(detail::upstream_arg&& upstream, std::shared_ptr<callback_box> box)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_FAILURE_CALLBACK,
                                            [&](rmm_resource_options& o) {
                                              o.failure_callback = &call;
                                              o.failure_arg = box.get();
                                            }),
                                  std::move(upstream)},
        box_{std::move(box)} {}
  std::shared_ptr<callback_box> box_;
};
static_assert(cuda::mr::resource_with<failure_callback_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
