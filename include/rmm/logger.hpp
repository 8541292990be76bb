/* rmm/logger.hpp -- RMM's logger (rmmgo): rmm::default_logger() and the
 * RMM_LOG_* macros, over a small header-only stand-in for the parts of
 * rapids_logger that RMM's API shows (logger, sinks, level_enum), written for
 * rmmgo. Messages are printf-style, as rapids_logger's; patterns take %v
 * (message), %t (thread), %H %M %S %f (time, UTC), %Y %m %d, %l (level),
 * %n (logger name), %% and an optional width/alignment (%6t, %-6l). The
 * default logger writes to RMM_DEBUG_LOG_FILE if set, else to stderr. */
#pragma once
#include <rmm/detail/export.hpp>

#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#define RAPIDS_LOGGER_LOG_LEVEL_TRACE 0
#define RAPIDS_LOGGER_LOG_LEVEL_DEBUG 1
#define RAPIDS_LOGGER_LOG_LEVEL_INFO 2
#define RAPIDS_LOGGER_LOG_LEVEL_WARN 3
#define RAPIDS_LOGGER_LOG_LEVEL_ERROR 4
#define RAPIDS_LOGGER_LOG_LEVEL_CRITICAL 5
#define RAPIDS_LOGGER_LOG_LEVEL_OFF 6

#define RMM_LOG_LEVEL_TRACE RAPIDS_LOGGER_LOG_LEVEL_TRACE
#define RMM_LOG_LEVEL_DEBUG RAPIDS_LOGGER_LOG_LEVEL_DEBUG
#define RMM_LOG_LEVEL_INFO RAPIDS_LOGGER_LOG_LEVEL_INFO
#define RMM_LOG_LEVEL_WARN RAPIDS_LOGGER_LOG_LEVEL_WARN
#define RMM_LOG_LEVEL_ERROR RAPIDS_LOGGER_LOG_LEVEL_ERROR
#define RMM_LOG_LEVEL_CRITICAL RAPIDS_LOGGER_LOG_LEVEL_CRITICAL
#define RMM_LOG_LEVEL_OFF RAPIDS_LOGGER_LOG_LEVEL_OFF

/* The lowest level compiled in (RMM's build sets it; RMM's default is info). */
#ifndef RMM_LOG_ACTIVE_LEVEL
#define RMM_LOG_ACTIVE_LEVEL RMM_LOG_LEVEL_INFO
#endif

namespace rapids_logger {

enum class level_enum : std::int32_t { trace = 0, debug, info, warn, error, critical, off, n_levels };

namespace detail {
inline char const* level_name(level_enum l) noexcept {
  switch (l) {
    case level_enum::trace: return "trace";
    case level_enum::debug: return "debug";
    case level_enum::info: return "info";
    case level_enum::warn: return "warning";
    case level_enum::error: return "error";
    case level_enum::critical: return "critical";
    default: return "off";
  }
}
inline std::size_t thread_number() noexcept { return std::hash<std::thread::id>{}(std::this_thread::get_id()); }

/// One line: pattern with its fields replaced.
inline std::string render(std::string const& pattern, std::string const& name, level_enum lvl, std::string const& msg) {
  auto const now = std::chrono::system_clock::now();
  auto const secs = std::chrono::system_clock::to_time_t(now);
  auto const micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::ostringstream out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out << pattern[i];
      continue;
    }
    ++i;
    bool left = false;
    if (pattern[i] == '-') {
      left = true;
      ++i;
    }
    int width = 0;
    while (i < pattern.size() && pattern[i] >= '0' && pattern[i] <= '9') { width = width * 10 + (pattern[i++] - '0'); }
    if (i == pattern.size()) { break; }
    std::string field;
    char buf[32];
    switch (pattern[i]) {
      case 'v': field = msg; break;
      case 't': field = std::to_string(thread_number()); break;
      case 'l': field = level_name(lvl); break;
      case 'n': field = name; break;
      case 'H': std::snprintf(buf, sizeof buf, "%02d", tm.tm_hour); field = buf; break;
      case 'M': std::snprintf(buf, sizeof buf, "%02d", tm.tm_min); field = buf; break;
      case 'S': std::snprintf(buf, sizeof buf, "%02d", tm.tm_sec); field = buf; break;
      case 'f': std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(micros)); field = buf; break;
      case 'Y': field = std::to_string(tm.tm_year + 1900); break;
      case 'm': std::snprintf(buf, sizeof buf, "%02d", tm.tm_mon + 1); field = buf; break;
      case 'd': std::snprintf(buf, sizeof buf, "%02d", tm.tm_mday); field = buf; break;
      case '%': field = "%"; break;
      default: field = std::string{'%'} + pattern[i]; break;
    }
    if (static_cast<int>(field.size()) < width) {
      auto pad = std::string(static_cast<std::size_t>(width) - field.size(), ' ');
      field = left ? field + pad : pad + field;
    }
    out << field;
  }
  return out.str();
}

template <class T>
decltype(auto) printf_arg(T const& v) {
  if constexpr (std::is_convertible_v<T const&, std::string const&> && !std::is_pointer_v<T> && !std::is_array_v<T>) {
    return static_cast<std::string const&>(v).c_str();
  } else {
    return v;
  }
}
inline std::string vformat(char const* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string vformat(char const* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) { std::vsnprintf(s.data(), s.size() + 1, fmt, ap2); }
  va_end(ap2);
  return s;
}
}  // namespace detail

/// Where log lines go. log() gets the line already formatted by the logger's pattern.
class sink {
 public:
  virtual ~sink() = default;
  virtual void log(level_enum lvl, std::string const& line) = 0;
  virtual void flush() = 0;
  void set_level(level_enum l) noexcept { level_ = l; }
  [[nodiscard]] level_enum level() const noexcept { return level_; }
  [[nodiscard]] bool should_log(level_enum l) const noexcept { return l >= level_; }

 private:
  level_enum level_{level_enum::trace};
};
using sink_ptr = std::shared_ptr<sink>;

/// A sink writing to a std::ostream it does not own (thread-safe).
class ostream_sink_mt : public sink {
 public:
  explicit ostream_sink_mt(std::ostream& os, bool force_flush = false) : os_{os}, force_flush_{force_flush} {}
  void log(level_enum, std::string const& line) override {
    std::lock_guard<std::mutex> lock{mutex_};
    os_ << line << '\n';
    if (force_flush_) { os_.flush(); }
  }
  void flush() override {
    std::lock_guard<std::mutex> lock{mutex_};
    os_.flush();
  }

 private:
  std::ostream& os_;
  bool force_flush_;
  std::mutex mutex_;
};

/// A sink writing to a file (thread-safe); truncate empties it first.
class basic_file_sink_mt : public sink {
 public:
  explicit basic_file_sink_mt(std::string const& filename, bool truncate = false)
      : file_{filename, truncate ? std::ios::out | std::ios::trunc : std::ios::out | std::ios::app} {
    if (!file_) { throw std::ios_base::failure{"rapids_logger: cannot open " + filename}; }
  }
  void log(level_enum, std::string const& line) override {
    std::lock_guard<std::mutex> lock{mutex_};
    file_ << line << '\n';
  }
  void flush() override {
    std::lock_guard<std::mutex> lock{mutex_};
    file_.flush();
  }

 private:
  std::ofstream file_;
  std::mutex mutex_;
};

/// Standard error and standard output, through std::cerr / std::cout (so
/// that what redirects them sees the lines).
class stderr_sink_mt : public sink {
 public:
  void log(level_enum, std::string const& line) override {
    std::lock_guard<std::mutex> lock{mutex_};
    std::cerr << line << '\n';
  }
  void flush() override { std::cerr.flush(); }

 private:
  std::mutex mutex_;
};
class stdout_sink_mt : public sink {
 public:
  void log(level_enum, std::string const& line) override {
    std::lock_guard<std::mutex> lock{mutex_};
    std::cout << line << '\n';
  }
  void flush() override { std::cout.flush(); }

 private:
  std::mutex mutex_;
};
class null_sink_mt : public sink {
 public:
  void log(level_enum, std::string const&) override {}
  void flush() override {}
};

class logger {
 public:
  logger(std::string name, std::vector<sink_ptr> sinks) : name_{std::move(name)}, sinks_{std::move(sinks)} {}
  logger(std::string name, std::initializer_list<sink_ptr> sinks)
      : logger{std::move(name), std::vector<sink_ptr>{sinks}} {}
  logger(std::string name, std::ostream& os) : logger{std::move(name), {std::make_shared<ostream_sink_mt>(os)}} {}
  logger(std::string name, std::string const& filename)
      : logger{std::move(name), {std::make_shared<basic_file_sink_mt>(filename, true)}} {}
  logger(logger const&) = delete;
  logger& operator=(logger const&) = delete;
  logger(logger&& o) noexcept
      : name_{std::move(o.name_)},
        sinks_{std::move(o.sinks_)},
        pattern_{std::move(o.pattern_)},
        level_{o.level_},
        flush_level_{o.flush_level_} {}
  logger& operator=(logger&&) = delete;

  [[nodiscard]] std::vector<sink_ptr>& sinks() noexcept { return sinks_; }
  [[nodiscard]] std::vector<sink_ptr> const& sinks() const noexcept { return sinks_; }
  [[nodiscard]] level_enum level() const noexcept { return level_; }
  void set_level(level_enum l) noexcept { level_ = l; }
  [[nodiscard]] bool should_log(level_enum l) const noexcept { return l >= level_ && l != level_enum::off; }
  void set_pattern(std::string pattern) {
    std::lock_guard<std::mutex> lock{mutex_};
    pattern_ = std::move(pattern);
  }
  void flush_on(level_enum l) noexcept { flush_level_ = l; }
  [[nodiscard]] level_enum flush_level() const noexcept { return flush_level_; }
  void flush() {
    std::lock_guard<std::mutex> lock{mutex_};
    for (auto& s : sinks_) { s->flush(); }
  }
  [[nodiscard]] std::string const& name() const noexcept { return name_; }

  /// Logs a message already formatted.
  void log_message(level_enum lvl, std::string const& msg) {
    if (!should_log(lvl)) { return; }
    std::lock_guard<std::mutex> lock{mutex_};
    auto const line = detail::render(pattern_, name_, lvl, msg);
    for (auto& s : sinks_) {
      if (s->should_log(lvl)) {
        s->log(lvl, line);
        if (lvl >= flush_level_) { s->flush(); }
      }
    }
  }
  /// Logs a printf-style message (std::string arguments are passed as C strings).
  template <class... Args>
  void log(level_enum lvl, char const* fmt, Args const&... args) {
    if (!should_log(lvl)) { return; }
    if constexpr (sizeof...(Args) == 0) {
      log_message(lvl, fmt);
    } else {
      log_message(lvl, detail::vformat(fmt, detail::printf_arg(args)...));
    }
  }
  template <class... Args>
  void log(level_enum lvl, std::string const& fmt, Args const&... args) {
    log(lvl, fmt.c_str(), args...);
  }
  template <class F, class... Args>
  void trace(F const& fmt, Args const&... args) { log(level_enum::trace, fmt, args...); }
  template <class F, class... Args>
  void debug(F const& fmt, Args const&... args) { log(level_enum::debug, fmt, args...); }
  template <class F, class... Args>
  void info(F const& fmt, Args const&... args) { log(level_enum::info, fmt, args...); }
  template <class F, class... Args>
  void warn(F const& fmt, Args const&... args) { log(level_enum::warn, fmt, args...); }
  template <class F, class... Args>
  void error(F const& fmt, Args const&... args) { log(level_enum::error, fmt, args...); }
  template <class F, class... Args>
  void critical(F const& fmt, Args const&... args) { log(level_enum::critical, fmt, args...); }

 private:
  std::string name_;
  std::vector<sink_ptr> sinks_;
  std::string pattern_{"%v"};
  level_enum level_{level_enum::info};
  level_enum flush_level_{level_enum::off};
  std::mutex mutex_;
};

}  // namespace rapids_logger

namespace RMM_NAMESPACE {

/// RMM_DEBUG_LOG_FILE's file if set, else standard error.
inline rapids_logger::sink_ptr default_sink() {
  if (auto const* filename = std::getenv("RMM_DEBUG_LOG_FILE"); filename != nullptr) {
    return std::make_shared<rapids_logger::basic_file_sink_mt>(filename, true);
  }
  return std::make_shared<rapids_logger::stderr_sink_mt>();
}
inline std::string default_pattern() { return "[%6t][%H:%M:%S:%f][%-6l] %v"; }

/// The logger RMM's debug messages go to (one per process).
RMM_EXPORT inline rapids_logger::logger& default_logger() {
  static rapids_logger::logger the_logger = [] {
    rapids_logger::logger made{"RMM", {default_sink()}};
    made.set_pattern(default_pattern());
    return made;
  }();
  return the_logger;
}

}  // namespace RMM_NAMESPACE

#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_TRACE
#define RMM_LOG_TRACE(...) ::RMM_NAMESPACE::default_logger().log(rapids_logger::level_enum::trace, __VA_ARGS__)
#else
#define RMM_LOG_TRACE(...) (void)0
#endif
#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_DEBUG
#define RMM_LOG_DEBUG(...) ::RMM_NAMESPACE::default_logger().log(rapids_logger::level_enum::debug, __VA_ARGS__)
#else
#define RMM_LOG_DEBUG(...) (void)0
#endif
#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_INFO
#define RMM_LOG_INFO(...) ::RMM_NAMESPACE::default_logger().log(rapids_logger::level_enum::info, __VA_ARGS__)
#else
#define RMM_LOG_INFO(...) (void)0
#endif
#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_WARN
#define RMM_LOG_WARN(...) ::RMM_NAMESPACE::default_logger().log(rapids_logger::level_enum::warn, __VA_ARGS__)
#else
#define RMM_LOG_WARN(...) (void)0
#endif
#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_ERROR
#define RMM_LOG_ERROR(...) ::RMM_NAMESPACE::default_logger().log(rapids_logger::level_enum::error, __VA_ARGS__)
#else
#define RMM_LOG_ERROR(...) (void)0
#endif
#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_CRITICAL
#define RMM_LOG_CRITICAL(...) ::RMM_NAMESPACE::default_logger().log(rapids_logger::level_enum::critical, __VA_ARGS__)
#else
#define RMM_LOG_CRITICAL(...) (void)0
#endif
