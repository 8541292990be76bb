/* rmm/mr/binning_memory_resource.hpp -- size bins over an upstream (rmmgo). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>

#include <optional>
#include <vector>

namespace RMM_NAMESPACE::mr {

class binning_memory_resource : public detail::upstream_resource {
 public:
  explicit binning_memory_resource(detail::upstream_arg upstream) : binning_memory_resource{std::move(upstream), -1, -1, 0} {}
  binning_memory_resource(detail::upstream_arg upstream, int8_t min_size_exponent, int8_t max_size_exponent)
      : binning_memory_resource{std::move(upstream), min_size_exponent, max_size_exponent, 0} {}
  RMMGO_RMM_EQUALITY(binning_memory_resource)
  friend void get_property(binning_memory_resource const&, cuda::mr::device_accessible) noexcept {}

  /// Adds a bin for allocations up to allocation_size, served by
  /// bin_resource (a new fixed-size resource when none is given).
  void add_bin(std::size_t allocation_size, std::optional<device_async_resource_ref> bin_resource = std::nullopt) {
    if (!bin_resource) {
      detail::check(rmm_binning_add_bin(handle(), allocation_size, nullptr));
      return;
    }
    detail::upstream_arg bin{*bin_resource};
    detail::check(rmm_binning_add_bin(handle(), allocation_size, bin.handle));
    bins_->push_back(std::move(*bin.object));
  }

 private:
  binning_memory_resource(detail::upstream_arg&& upstream, int min_exp, int max_exp, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_BINNING,
                                            [&](rmm_resource_options& o) {
                                              o.min_size_exponent = min_exp;
                                              o.max_size_exponent = max_exp;
                                            }),
                                  std::move(upstream)} {}
  std::shared_ptr<std::vector<detail::any_device_resource>> bins_ =
      std::make_shared<std::vector<detail::any_device_resource>>();
};
static_assert(cuda::mr::resource_with<binning_memory_resource, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
