/* rmm/mr/statistics_resource_adaptor.hpp -- counts bytes and allocations (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>
#include <algorithm>
#include <cstdint>

namespace RMM_NAMESPACE::mr {

class statistics_resource_adaptor : public detail::upstream_resource {
 public:
  struct counter {
    int64_t value{0};
    int64_t peak{0};
    int64_t total{0};
    counter& operator+=(int64_t val) {
      value += val;
      total += val;
      peak = std::max(value, peak);
      return *this;
    }
    counter& operator-=(int64_t val) {
      value -= val;
      return *this;
    }
    void add_counters_from_tracked_sub_block(const counter& val) {
      peak = std::max(value + val.peak, peak);
      value += val.value;
      total += val.total;
    }
  };
  explicit statistics_resource_adaptor(detail::upstream_arg upstream)
      : statistics_resource_adaptor{std::move(upstream), 0} {}
  RMMGO_RMM_EQUALITY(statistics_resource_adaptor)
  friend void get_property(statistics_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}
  [[nodiscard]] counter get_bytes_counter() const noexcept { return get().first; }
  [[nodiscard]] counter get_allocations_counter() const noexcept { return get().second; }
  std::pair<counter, counter> push_counters() {
    rmm_statistics s{};
    s.struct_size = sizeof s;
    detail::check(rmm_statistics_push(handle(), &s));
    return convert(s);
  }
  std::pair<counter, counter> pop_counters() {
    rmm_statistics s{};
    s.struct_size = sizeof s;
    rmm_status st = rmm_statistics_pop(handle(), &s);
    if (st == RMM_ERROR_OUT_OF_RANGE) { throw std::out_of_range("cannot pop the last counter pair"); }
    detail::check(st);
    return convert(s);
  }

 private:
  static std::pair<counter, counter> convert(rmm_statistics const& s) {
    return {counter{s.bytes.value, s.bytes.peak, s.bytes.total}, counter{s.count.value, s.count.peak, s.count.total}};
  }
  std::pair<counter, counter> get() const noexcept {
    rmm_statistics s{};
    s.struct_size = sizeof s;
    (void)rmm_statistics_get(handle(), &s);
    return convert(s);
  }

 public:

 private:
  statistics_resource_adaptor(detail::upstream_arg&& upstream, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_STATISTICS, [&](rmm_resource_options& o) {
                                      (void)o;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<statistics_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
