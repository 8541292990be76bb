/* rmm/mr/logging_resource_adaptor.hpp -- a CSV log of every allocation and
 * free (Thread,Time,Action,Pointer,Size,Stream), as RMM's (rmmgo):
 *  - to a file name: librmmgo's logging resource (RMM_RESOURCE_LOGGING), the
 *    same log C, Python and Go write;
 *  - to a std::ostream or to rapids_logger sinks: written here in C++ by an
 *    external librmmgo resource (rmm_resource_create_external) over the
 *    upstream, so C and Python allocating through it are logged too. */
#pragma once
#include <rmm/logger.hpp>
#include <rmm/mr/detail/rmmgo_handle.hpp>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace RMM_NAMESPACE::mr {

namespace detail {

/// The external resource behind a logging_resource_adaptor that writes to a logger.
struct logging_box {
  rmm_resource_t upstream{};  // a reference this box owns
  std::shared_ptr<rapids_logger::logger> logger;

  static std::string stream_text(rmm_stream_t s) {
    std::ostringstream out;
    out << std::hex << static_cast<void*>(s);
    return out.str();
  }
  void logged(char const* action, void const* ptr, std::size_t bytes, rmm_stream_t s) noexcept {
    try {
      logger->info("%s,%p,%zu,%s", action, ptr, bytes, stream_text(s));
    } catch (...) {
    }
  }
  static rmm_status fail(char* msg, std::size_t size, rmm_status st) noexcept {
    if (msg != nullptr && size > 0) { std::snprintf(msg, size, "%s", rmm_last_error_message()); }
    return st;
  }
  static rmm_status allocate(void* self, std::size_t bytes, std::size_t alignment, rmm_stream_t stream, void** ptr,
                             char* msg, std::size_t size) noexcept {
    auto* box = static_cast<logging_box*>(self);
    rmm_status st = rmm_allocate(box->upstream, stream, bytes, alignment, ptr);
    if (st != RMM_SUCCESS) {
      box->logged("allocate failure", nullptr, bytes, stream);
      return fail(msg, size, st);
    }
    box->logged("allocate", *ptr, bytes, stream);
    return RMM_SUCCESS;
  }
  static rmm_status deallocate(void* self, void* ptr, std::size_t bytes, std::size_t alignment, rmm_stream_t stream,
                               char* msg, std::size_t size) noexcept {
    auto* box = static_cast<logging_box*>(self);
    box->logged("free", ptr, bytes, stream);
    rmm_status st = rmm_deallocate(box->upstream, stream, ptr, bytes, alignment);
    return st == RMM_SUCCESS ? st : fail(msg, size, st);
  }
  static rmm_status allocate_sync(void* self, std::size_t bytes, std::size_t alignment, void** ptr, char* msg,
                                  std::size_t size) noexcept {
    auto* box = static_cast<logging_box*>(self);
    rmm_status st = rmm_allocate_sync(box->upstream, bytes, alignment, ptr);
    if (st != RMM_SUCCESS) {
      box->logged("allocate failure", nullptr, bytes, nullptr);
      return fail(msg, size, st);
    }
    box->logged("allocate", *ptr, bytes, nullptr);
    return RMM_SUCCESS;
  }
  static rmm_status deallocate_sync(void* self, void* ptr, std::size_t bytes, std::size_t alignment, char* msg,
                                    std::size_t size) noexcept {
    auto* box = static_cast<logging_box*>(self);
    box->logged("free", ptr, bytes, nullptr);
    rmm_status st = rmm_deallocate_sync(box->upstream, ptr, bytes, alignment);
    return st == RMM_SUCCESS ? st : fail(msg, size, st);
  }
  static int is_equal(void* a, void* b) noexcept { return a == b ? 1 : 0; }
  static void release(void* self) noexcept {
    auto* box = static_cast<logging_box*>(self);
    (void)rmm_resource_release(box->upstream);
    delete box;
  }
};

/// A new external handle logging to logger over upstream.
inline rmm_resource_t make_logging_handle(upstream_arg const& up, std::shared_ptr<rapids_logger::logger> logger,
                                          bool auto_flush) {
  if (auto_flush) { logger->flush_on(rapids_logger::level_enum::info); }
  logger->set_pattern("%v");
  logger->info("Thread,Time,Action,Pointer,Size,Stream");
  logger->set_pattern("%t,%H:%M:%S.%f,%v");
  check(rmm_resource_retain(up.handle));
  bool host = up.object && try_get_property(*up.object, cuda::mr::host_accessible{});
  return create_external<logging_box>(new logging_box{up.handle, std::move(logger)}, host);
}

}  // namespace detail

class logging_resource_adaptor : public detail::upstream_resource {
 public:
  /// RMM_LOG_FILE; throws rmm::logic_error when it is unset.
  static std::string get_default_filename() {
    auto* filename = std::getenv("RMM_LOG_FILE");
    RMM_EXPECTS(filename != nullptr, "RMM logging requested without an explicit file name, but RMM_LOG_FILE is unset");
    return std::string{filename};
  }
  /// Logs to the file filename (emptied first), through librmmgo.
  logging_resource_adaptor(detail::upstream_arg upstream, std::string const& filename = get_default_filename(),
                           bool auto_flush = false)
      : logging_resource_adaptor{std::move(upstream), filename, auto_flush, 0} {}
  /// Logs to stream (which must outlive the adaptor and its copies).
  logging_resource_adaptor(detail::upstream_arg upstream, std::ostream& stream, bool auto_flush = false)
      : logging_resource_adaptor{
            std::move(upstream),
            std::make_shared<rapids_logger::logger>(
                "RMM", std::vector<rapids_logger::sink_ptr>{std::make_shared<rapids_logger::ostream_sink_mt>(stream)}),
            auto_flush} {}
  /// Logs to every one of sinks.
  logging_resource_adaptor(detail::upstream_arg upstream, std::initializer_list<rapids_logger::sink_ptr> sinks,
                           bool auto_flush = false)
      : logging_resource_adaptor{std::move(upstream), std::make_shared<rapids_logger::logger>("RMM", sinks),
                                 auto_flush} {}

  RMMGO_RMM_EQUALITY(logging_resource_adaptor)
  friend void get_property(logging_resource_adaptor const&, cuda::mr::device_accessible) noexcept {}

  /// Writes out what the log holds.
  void flush() {
    if (logger_) {
      logger_->flush();
    } else {
      detail::check(rmm_logging_flush(handle()));
    }
  }
  [[nodiscard]] std::string header() const { return "Thread,Time,Action,Pointer,Size,Stream"; }
  /// The file the log goes to (rmmgo; empty for a stream or sinks).
  [[nodiscard]] std::string file_name() const {
    if (logger_) { return {}; }
    std::size_t needed = 0;
    detail::check(rmm_logging_file_name(handle(), nullptr, 0, &needed));
    std::vector<char> buf(needed + 1);
    detail::check(rmm_logging_file_name(handle(), buf.data(), buf.size(), &needed));
    return std::string{buf.data()};
  }

 private:
  logging_resource_adaptor(detail::upstream_arg&& upstream, std::string const& filename, bool auto_flush, int)
      : detail::upstream_resource{make_over(upstream, RMM_RESOURCE_LOGGING,
                                            [&](rmm_resource_options& o) {
                                              o.log_file = filename.c_str();
                                              o.auto_flush = auto_flush ? 1 : 0;
                                            }),
                                  std::move(upstream)} {}
  logging_resource_adaptor(detail::upstream_arg&& upstream, std::shared_ptr<rapids_logger::logger> logger,
                           bool auto_flush)
      : detail::upstream_resource{detail::make_logging_handle(upstream, logger, auto_flush), std::move(upstream)},
        logger_{std::move(logger)} {}

  std::shared_ptr<rapids_logger::logger> logger_;
};
static_assert(cuda::mr::resource_with<logging_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace RMM_NAMESPACE::mr
