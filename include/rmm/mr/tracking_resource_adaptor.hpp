/* rmm/mr/tracking_resource_adaptor.hpp -- records every outstanding allocation (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>
#include <rmm/detail/stack_trace.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace RMM_NAMESPACE::mr {

class tracking_resource_adaptor : public detail::upstream_resource {
 public:
  /// What get_outstanding_allocations() holds per pointer (RMM's).
  struct allocation_info {
    std::unique_ptr<rmm::detail::stack_trace> strace;
    std::size_t allocation_size;
    allocation_info() = delete;
    allocation_info(std::size_t size, bool capture_stack)
        : strace{capture_stack ? std::make_unique<rmm::detail::stack_trace>() : nullptr}, allocation_size{size} {}
  };

  explicit tracking_resource_adaptor(detail::upstream_arg upstream,
      bool capture_stacks = false)
      : tracking_resource_adaptor{std::move(upstream), capture_stacks, 0} {}
  RMMGO_RMM_EQUALITY(tracking_resource_adaptor)
  friend void get_property(tracking_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}
  // The library keeps the byte and allocation counts (for every language);
  // the pointer map RMM offers is kept here, for allocations made through
  // C++ objects (this one, its copies, references to them).
  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) {
    return record(upstream_resource::allocate(stream, bytes, alignment), bytes);
  }
  void deallocate(cuda::stream_ref stream, void* ptr, std::size_t bytes,
                  std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept {
    forget(ptr);
    upstream_resource::deallocate(stream, ptr, bytes, alignment);
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) {
    return record(upstream_resource::allocate_sync(bytes, alignment), bytes);
  }
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept {
    forget(ptr);
    upstream_resource::deallocate_sync(ptr, bytes, alignment);
  }
  /// The outstanding allocations made through C++ (pointer -> size and, when
  /// the adaptor captures stacks, the allocating call stack).
  [[nodiscard]] std::map<void*, allocation_info> const& get_outstanding_allocations() const noexcept {
    return map_->allocations;
  }
  [[nodiscard]] std::size_t get_allocated_bytes() const noexcept {
    std::size_t n = 0;
    (void)rmm_tracking_allocated_bytes(handle(), &n);
    return n;
  }
  /// The number of outstanding allocations (rmmgo keeps them in the library:
  /// RMM's get_outstanding_allocations() map is not offered).
  [[nodiscard]] std::size_t get_outstanding_allocation_count() const noexcept {
    std::size_t n = 0;
    (void)rmm_tracking_outstanding_count(handle(), &n);
    return n;
  }
  [[nodiscard]] std::string get_outstanding_allocations_str() const {
    std::size_t needed = 0;
    detail::check(rmm_tracking_report(handle(), nullptr, 0, &needed));
    std::vector<char> buf(needed + 1);
    detail::check(rmm_tracking_report(handle(), buf.data(), buf.size(), &needed));
    return std::string{buf.data()};
  }
  void log_outstanding_allocations() const { std::clog << get_outstanding_allocations_str() << std::endl; }

 private:
  struct pointer_map {
    std::shared_mutex lock;
    std::map<void*, allocation_info> allocations;
    bool capture_stacks{};
  };
  void* record(void* p, std::size_t bytes) {
    if (p != nullptr) {
      std::unique_lock<std::shared_mutex> l{map_->lock};
      map_->allocations.insert_or_assign(p, allocation_info{bytes, map_->capture_stacks});
    }
    return p;
  }
  void forget(void* p) noexcept {
    std::unique_lock<std::shared_mutex> l{map_->lock};
    map_->allocations.erase(p);
  }

  tracking_resource_adaptor(detail::upstream_arg&& upstream, bool capture_stacks, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_TRACKING, [&](rmm_resource_options& o) {
                                      o.capture_stacks = capture_stacks ? 1 : 0;
                                    }),
                                    std::move(upstream)},
        map_{std::make_shared<pointer_map>()} {
    map_->capture_stacks = capture_stacks;
  }
  std::shared_ptr<pointer_map> map_;
};
static_assert(cuda::mr::resource_with<tracking_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
