/* rmm/mr/failure_callback_resource_adaptor.hpp -- calls a function when an
 * allocation fails with ExceptionType, and retries while it says so (rmmgo).
 *
 * As RMM 26.08: a class template over the exception type it catches
 * (rmm::out_of_memory by default). With rmm::out_of_memory the adaptor is
 * librmmgo's own failure-callback resource (what C, Python and Go see retries
 * the same way); with any other type the retry loop is C++ (catching that
 * type from the upstream object), registered with librmmgo as an external
 * resource, since librmmgo's callback fires on out-of-memory only. */
#pragma once
#include <rmm/error.hpp>
#include <rmm/mr/detail/rmmgo_handle.hpp>
#include <rmm/mr/failure_callback_t.hpp>

#include <memory>
#include <type_traits>

namespace RMM_NAMESPACE::mr {

namespace detail {

/// The retry loop for an exception type librmmgo does not know: a CCCL
/// resource over the upstream object (copies share one state).
template <typename ExceptionType>
class failure_callback_loop {
  struct state {
    any_device_resource upstream;
    failure_callback_t callback;
    void* arg;
  };
  std::shared_ptr<state> s_;

  template <class F>
  void* retry(std::size_t bytes, F&& f) {
    while (true) {
      try {
        return f();
      } catch (ExceptionType const&) {
        if (!s_->callback(bytes, s_->arg)) { throw; }
      }
    }
  }

 public:
  failure_callback_loop(any_device_resource upstream, failure_callback_t callback, void* arg)
      : s_{std::make_shared<state>(state{std::move(upstream), std::move(callback), arg})} {}

  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) {
    return retry(bytes, [&] { return s_->upstream.allocate(stream, bytes, alignment); });
  }
  void deallocate(cuda::stream_ref stream, void* ptr, std::size_t bytes,
                  std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept {
    s_->upstream.deallocate(stream, ptr, bytes, alignment);
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) {
    return retry(bytes, [&] { return s_->upstream.allocate_sync(bytes, alignment); });
  }
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept {
    s_->upstream.deallocate_sync(ptr, bytes, alignment);
  }
  bool operator==(failure_callback_loop const& o) const noexcept { return s_ == o.s_; }
  bool operator!=(failure_callback_loop const& o) const noexcept { return s_ != o.s_; }
  friend void get_property(failure_callback_loop const&, cuda::mr::device_accessible) noexcept {}
};

}  // namespace detail

template <typename ExceptionType = rmm::out_of_memory>
class failure_callback_resource_adaptor : public detail::upstream_resource {
  struct callback_box {
    failure_callback_t callback;
    void* arg;
  };
  static int call(std::size_t bytes, void* box) {
    auto* b = static_cast<callback_box*>(box);
    return b->callback(bytes, b->arg) ? 1 : 0;
  }
  static constexpr bool library_loop = std::is_same_v<ExceptionType, rmm::out_of_memory>;

 public:
  using exception_type = ExceptionType;  ///< The type of exception this object catches

  failure_callback_resource_adaptor(detail::upstream_arg upstream, failure_callback_t callback, void* callback_arg)
      : failure_callback_resource_adaptor{std::move(upstream),
                                          std::make_shared<callback_box>(callback_box{std::move(callback), callback_arg})} {}
  RMMGO_RMM_EQUALITY(failure_callback_resource_adaptor)
  friend void get_property(failure_callback_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}

 private:
  static rmm_resource_t make(detail::upstream_arg const& upstream, callback_box* box) {
    if constexpr (library_loop) {
      return make_over(upstream, RMM_RESOURCE_FAILURE_CALLBACK, [&](rmm_resource_options& o) {
        o.failure_callback = &call;
        o.failure_arg = box;
      });
    } else {
      return detail::register_external(detail::any_device_resource{
          detail::failure_callback_loop<ExceptionType>{*upstream.object, box->callback, box->arg}});
    }
  }
  // The box lives while any copy of this object does (the library calls it
  // through its pointer).
  failure_callback_resource_adaptor(detail::upstream_arg&& upstream, std::shared_ptr<callback_box> box)
      : detail::upstream_resource{make(upstream, box.get()), std::move(upstream)}, box_{std::move(box)} {}
  std::shared_ptr<callback_box> box_;
};
static_assert(cuda::mr::resource_with<failure_callback_resource_adaptor<>, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
