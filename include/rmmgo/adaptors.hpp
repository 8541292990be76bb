/*
 * rmmgo/adaptors.hpp -- every *_resource_adaptor class: aligned,
 * failure_callback, limiting, logging, prefetch, statistics, thread_safe and
 * tracking, each a class template over its upstream's type.
 */
#ifndef RMMGO_ADAPTORS_HPP
#define RMMGO_ADAPTORS_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"
#include "errors.hpp"
#include "memory_resource.hpp"
#include "resources.hpp"  // the upstreams an adaptor is checked over

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

namespace rmmgo {
namespace mr {

/// Allocations of at least alignment_threshold bytes aligned to alignment.
template <class Upstream = device_memory_resource>
class aligned_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_ALIGNED, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_ALIGNED;

 public:
  static constexpr std::size_t default_alignment_threshold = 0;

  explicit aligned_resource_adaptor(const Upstream& upstream, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT,
                                    std::size_t alignment_threshold = default_alignment_threshold)
      : detail::upstream_resource<RMM_RESOURCE_ALIGNED, Upstream>(make(upstream, alignment, alignment_threshold)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(aligned_resource_adaptor)

 private:
  static rmm_resource_t make(const Upstream& upstream, std::size_t alignment, std::size_t threshold) {
    rmm_resource_options o = detail::default_options();
    o.alignment = alignment;
    o.alignment_threshold = threshold;
    return detail::create_over(RMM_RESOURCE_ALIGNED, upstream, o);
  }
};

/// The failure callback: called with the bytes of an allocation that ran out
/// of memory and its argument; nonzero retries, zero gives up (the
/// out_of_memory reaches the caller). rmmgo.h's type; it must not throw.
using failure_callback_t = rmm_failure_callback;

/// Calls a function when Upstream runs out of memory, and retries while it
/// says so. (RMM's is a template over the exception type; this one is over
/// the upstream and acts on out_of_memory.)
template <class Upstream = device_memory_resource>
class failure_callback_resource_adaptor final
    : public detail::upstream_resource<RMM_RESOURCE_FAILURE_CALLBACK, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_FAILURE_CALLBACK;

 public:
  failure_callback_resource_adaptor(const Upstream& upstream, failure_callback_t callback, void* callback_arg)
      : detail::upstream_resource<RMM_RESOURCE_FAILURE_CALLBACK, Upstream>(make(upstream, callback, callback_arg)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(failure_callback_resource_adaptor)

 private:
  static rmm_resource_t make(const Upstream& upstream, failure_callback_t cb, void* arg) {
    rmm_resource_options o = detail::default_options();
    o.failure_callback = cb;
    o.failure_arg = arg;
    return detail::create_over(RMM_RESOURCE_FAILURE_CALLBACK, upstream, o);
  }
};

/// At most allocation_limit bytes outstanding at once (sizes counted rounded
/// up to alignment); past it, out_of_memory.
template <class Upstream = device_memory_resource>
class limiting_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_LIMITING, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_LIMITING;

 public:
  limiting_resource_adaptor(const Upstream& upstream, std::size_t allocation_limit,
                            std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT)
      : detail::upstream_resource<RMM_RESOURCE_LIMITING, Upstream>(make(upstream, allocation_limit, alignment)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(limiting_resource_adaptor)

  std::size_t get_allocated_bytes() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_limiting_allocated_bytes(this->handle_, &n));
    return n;
  }
  std::size_t get_allocation_limit() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_limiting_allocation_limit(this->handle_, &n));
    return n;
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, std::size_t limit, std::size_t alignment) {
    rmm_resource_options o = detail::default_options();
    o.allocation_limit = limit;
    o.alignment = alignment;
    return detail::create_over(RMM_RESOURCE_LIMITING, upstream, o);
  }
};

/// Writes every allocation and free to a CSV file in RMM's format.
template <class Upstream = device_memory_resource>
class logging_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_LOGGING, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_LOGGING;

 public:
  /// Logs to filename (default: the RMM_LOG_FILE environment variable; if it
  /// is not set, logic_error), truncating it; auto_flush flushes every row.
  explicit logging_resource_adaptor(const Upstream& upstream, const std::string& filename = get_default_filename(),
                                    bool auto_flush = false)
      : detail::upstream_resource<RMM_RESOURCE_LOGGING, Upstream>(make(upstream, filename, auto_flush)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(logging_resource_adaptor)

  /// The file named by RMM_LOG_FILE; logic_error if it is not set.
  static std::string get_default_filename() {
    const char* name = std::getenv("RMM_LOG_FILE");
    if (name == nullptr || name[0] == '\0') {
      throw rmmgo::logic_error("rmmgo: logging_resource_adaptor: no file name given and RMM_LOG_FILE is not set");
    }
    return name;
  }
  /// The CSV header line.
  static std::string header() { return "Thread,Time,Action,Pointer,Size,Stream"; }
  /// Writes buffered rows to the file.
  void flush() { rmmgo::detail::check(rmm_logging_flush(this->handle_)); }
  /// The file being written.
  std::string file_name() const {
    std::size_t needed = 0;
    rmmgo::detail::check(rmm_logging_file_name(this->handle_, nullptr, 0, &needed));
    std::string s(needed, '\0');
    rmmgo::detail::check(rmm_logging_file_name(this->handle_, s.data(), s.size(), &needed));
    s.resize(needed > 0 ? needed - 1 : 0);
    return s;
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, const std::string& filename, bool auto_flush) {
    rmm_resource_options o = detail::default_options();
    o.log_file = filename.c_str();
    o.auto_flush = auto_flush ? 1 : 0;
    return detail::create_over(RMM_RESOURCE_LOGGING, upstream, o);
  }
};

/// Prefetches each allocation to the current device (managed memory).
template <class Upstream = device_memory_resource>
class prefetch_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_PREFETCH, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_PREFETCH;

 public:
  explicit prefetch_resource_adaptor(const Upstream& upstream)
      : detail::upstream_resource<RMM_RESOURCE_PREFETCH, Upstream>(
            detail::create_over(RMM_RESOURCE_PREFETCH, upstream, detail::default_options())) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(prefetch_resource_adaptor)
};

/// Counts bytes and allocations: current value, peak and total, on a stack
/// of levels.
template <class Upstream = device_memory_resource>
class statistics_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_STATISTICS, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_STATISTICS;

 public:
  /// One counter (RMM's statistics_resource_adaptor::counter).
  struct counter {
    std::int64_t value = 0;
    std::int64_t peak = 0;
    std::int64_t total = 0;
  };

  explicit statistics_resource_adaptor(const Upstream& upstream)
      : detail::upstream_resource<RMM_RESOURCE_STATISTICS, Upstream>(
            detail::create_over(RMM_RESOURCE_STATISTICS, upstream, detail::default_options())) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(statistics_resource_adaptor)

  /// Bytes counter of the innermost level.
  counter get_bytes_counter() const { return get().first; }
  /// Allocations counter of the innermost level.
  counter get_allocations_counter() const { return get().second; }
  /// Starts a new level at zero; returns the (bytes, allocations) counters of
  /// the level that was innermost.
  std::pair<counter, counter> push_counters() {
    rmm_statistics s = blank();
    rmmgo::detail::check(rmm_statistics_push(this->handle_, &s));
    return split(s);
  }
  /// Ends the innermost level, folds it into its parent and returns it;
  /// rmmgo::out_of_range when only one level is left.
  std::pair<counter, counter> pop_counters() {
    rmm_statistics s = blank();
    rmmgo::detail::check(rmm_statistics_pop(this->handle_, &s));
    return split(s);
  }

 private:
  static rmm_statistics blank() {
    rmm_statistics s{};
    s.struct_size = sizeof s;
    return s;
  }
  static std::pair<counter, counter> split(const rmm_statistics& s) {
    return {counter{s.bytes.value, s.bytes.peak, s.bytes.total}, counter{s.count.value, s.count.peak, s.count.total}};
  }
  std::pair<counter, counter> get() const {
    rmm_statistics s = blank();
    rmmgo::detail::check(rmm_statistics_get(this->handle_, &s));
    return split(s);
  }
};

/// One lock around every call to Upstream.
template <class Upstream = device_memory_resource>
class thread_safe_resource_adaptor final
    : public detail::upstream_resource<RMM_RESOURCE_THREAD_SAFE, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_THREAD_SAFE;

 public:
  explicit thread_safe_resource_adaptor(const Upstream& upstream)
      : detail::upstream_resource<RMM_RESOURCE_THREAD_SAFE, Upstream>(
            detail::create_over(RMM_RESOURCE_THREAD_SAFE, upstream, detail::default_options())) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(thread_safe_resource_adaptor)
};

/// Records every outstanding allocation (and, with capture_stacks, where it
/// was made).
template <class Upstream = device_memory_resource>
class tracking_resource_adaptor final : public detail::upstream_resource<RMM_RESOURCE_TRACKING, Upstream> {
  static constexpr rmm_resource_kind resource_kind_v = RMM_RESOURCE_TRACKING;

 public:
  explicit tracking_resource_adaptor(const Upstream& upstream, bool capture_stacks = false)
      : detail::upstream_resource<RMM_RESOURCE_TRACKING, Upstream>(make(upstream, capture_stacks)) {}
  RMMGO_DETAIL_UPSTREAM_HANDLE(tracking_resource_adaptor)

  /// Bytes outstanding.
  std::size_t get_allocated_bytes() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_tracking_allocated_bytes(this->handle_, &n));
    return n;
  }
  /// Number of outstanding allocations.
  std::size_t get_outstanding_allocation_count() const {
    std::size_t n = 0;
    rmmgo::detail::check(rmm_tracking_outstanding_count(this->handle_, &n));
    return n;
  }
  /// A readable report of the outstanding allocations.
  std::string get_outstanding_allocations_str() const {
    std::size_t needed = 0;
    rmmgo::detail::check(rmm_tracking_report(this->handle_, nullptr, 0, &needed));
    std::string s(needed, '\0');
    rmmgo::detail::check(rmm_tracking_report(this->handle_, s.data(), s.size(), &needed));
    s.resize(needed > 0 ? needed - 1 : 0);
    return s;
  }

 private:
  static rmm_resource_t make(const Upstream& upstream, bool capture) {
    rmm_resource_options o = detail::default_options();
    o.capture_stacks = capture ? 1 : 0;
    return detail::create_over(RMM_RESOURCE_TRACKING, upstream, o);
  }
};

RMMGO_DETAIL_ASSERT_DEVICE(aligned_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(failure_callback_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(limiting_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(logging_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(prefetch_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(statistics_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_HOST(statistics_resource_adaptor<pinned_host_memory_resource>);
RMMGO_DETAIL_ASSERT_DEVICE(thread_safe_resource_adaptor<>);
RMMGO_DETAIL_ASSERT_DEVICE(tracking_resource_adaptor<>);

}  // namespace mr
}  // namespace rmmgo

#endif /* RMMGO_ADAPTORS_HPP */
