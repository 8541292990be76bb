/* rmm/mr/logging_resource_adaptor.hpp -- a CSV log of every allocation (rmmgo: a librmmgo handle; see rmm/mr/detail/rmmgo_handle.hpp). */
#pragma once
#include <rmm/mr/detail/rmmgo_handle.hpp>
#include <cstdlib>
#include <vector>

namespace RMM_NAMESPACE::mr {

class logging_resource_adaptor : public detail::upstream_resource {
 public:
  static std::string get_default_filename() {
    auto* filename = std::getenv("RMM_LOG_FILE");
    RMM_EXPECTS(filename != nullptr, "RMM logging requested without an explicit file name, but RMM_LOG_FILE is unset");
    return std::string{filename};
  }
  explicit logging_resource_adaptor(detail::upstream_arg upstream,
      std::string const& filename = get_default_filename(),
      bool auto_flush = false)
      : logging_resource_adaptor{std::move(upstream), filename, auto_flush, 0} {}
  RMMGO_RMM_EQUALITY(logging_resource_adaptor)
  friend void get_property(logging_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}
  void flush() { detail::check(rmm_logging_flush(handle())); }
  [[nodiscard]] std::string header() const { return "Thread,Time,Action,Pointer,Size,Stream"; }
  /// The file the log goes to (rmmgo).
  [[nodiscard]] std::string file_name() const {
    std::size_t needed = 0;
    detail::check(rmm_logging_file_name(handle(), nullptr, 0, &needed));
    std::vector<char> buf(needed + 1);
    detail::check(rmm_logging_file_name(handle(), buf.data(), buf.size(), &needed));
    return std::string{buf.data()};
  }

 private:
  logging_resource_adaptor(detail::upstream_arg&& upstream, std::string const& filename, bool auto_flush, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_LOGGING, [&](rmm_resource_options& o) {
                                      o.log_file = filename.c_str();
                                    o.auto_flush = auto_flush ? 1 : 0;
                                    }),
                                    std::move(upstream)} {}
};
static_assert(cuda::mr::resource_with<logging_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
