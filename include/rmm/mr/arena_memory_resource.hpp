/* rmm/mr/arena_memory_resource.hpp -- a per-thread arena sub-allocator (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

namespace RMM_NAMESPACE::mr {

class arena_memory_resource : public detail::upstream_resource {
 public:
  explicit arena_memory_resource(detail::upstream_arg upstream,
      std::optional<std::size_t> arena_size = std::nullopt,
      bool dump_log_on_failure = false)
      : arena_memory_resource{std::move(upstream), arena_size, dump_log_on_failure, 0} {}
  RMMGO_RMM_EQUALITY(arena_memory_resource)
  friend void get_property(arena_memory_resource const&, cuda::mr::device_accessible) noexcept {}

 private:
  arena_memory_resource(detail::upstream_arg&& upstream, std::optional<std::size_t> arena_size, bool dump_log_on_failure, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_ARENA, [&](rmm_resource_options& o) {
                                      if (arena_size) { o.arena_size = *arena_size; }
                                    o.dump_log_on_failure = dump_log_on_failure ? 1 : 0;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<arena_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
