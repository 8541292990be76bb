/*
 * rmmgo/errors.hpp -- the exceptions rmmgo's C++ classes throw, and the
 * handler for failures met where nothing may throw.
 *
 * rmmgo::out_of_memory (derived from rmmgo::bad_alloc, derived from
 * std::bad_alloc), rmmgo::logic_error, rmmgo::cuda_error and
 * rmmgo::out_of_range carry the library's message and its rmm_status.
 * rmmgo::set_error_handler chooses what happens to failures in noexcept
 * members (deallocate, destructors).
 */
#ifndef RMMGO_ERRORS_HPP
#define RMMGO_ERRORS_HPP

#include "cccl.hpp"  // first: see cccl.hpp
#include "../rmmgo.h"

#include <atomic>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

namespace rmmgo {

/// Misuse: a bad argument, a stale handle, the wrong device, a feature the
/// device lacks. RMM's rmm::logic_error.
class logic_error : public std::logic_error {
 public:
  explicit logic_error(const std::string& what, rmm_status status = RMM_ERROR_INVALID_ARGUMENT)
      : std::logic_error(what), status_(status) {}
  /// The library's status for this error.
  rmm_status status() const noexcept { return status_; }

 private:
  rmm_status status_;
};

/// A CUDA call or the backend failed. RMM's rmm::cuda_error.
class cuda_error : public std::runtime_error {
 public:
  explicit cuda_error(const std::string& what, rmm_status status = RMM_ERROR_CUDA)
      : std::runtime_error(what), status_(status) {}
  rmm_status status() const noexcept { return status_; }

 private:
  rmm_status status_;
};

/// An index or level out of range (e.g. popping the last statistics level).
class out_of_range : public std::out_of_range {
 public:
  explicit out_of_range(const std::string& what, rmm_status status = RMM_ERROR_OUT_OF_RANGE)
      : std::out_of_range(what), status_(status) {}
  rmm_status status() const noexcept { return status_; }

 private:
  rmm_status status_;
};

/// An allocation failed. what() is "std::bad_alloc: " followed by the
/// library's message, as RMM writes it.
class bad_alloc : public std::bad_alloc {
 public:
  explicit bad_alloc(const std::string& msg, rmm_status status = RMM_ERROR_BAD_ALLOC)
      : what_("std::bad_alloc: " + msg), status_(status) {}
  const char* what() const noexcept override { return what_.what(); }
  rmm_status status() const noexcept { return status_; }

 private:
  std::runtime_error what_;  // a string holder whose copy cannot throw
  rmm_status status_;
};

/// An allocation failed for want of memory. what() is
/// "std::bad_alloc: out_of_memory: " followed by the library's message.
class out_of_memory : public bad_alloc {
 public:
  explicit out_of_memory(const std::string& msg) : bad_alloc("out_of_memory: " + msg, RMM_ERROR_OUT_OF_MEMORY) {}
};

/// Called when a noexcept member (deallocate, a destructor, ...) meets a
/// failure it cannot throw. `operation` says what failed (for example
/// "deallocate(0x7f00, 256 bytes) on pool_memory_resource"), `message` is the
/// library's message. It must not throw.
using error_handler = void (*)(const char* operation, rmm_status status, const char* message) noexcept;

namespace detail {

inline void default_error_handler(const char* operation, rmm_status status, const char* message) noexcept {
  std::fprintf(stderr, "rmmgo: %s failed: %s: %s\n", operation, rmm_status_string(status), message);
}

inline std::atomic<error_handler>& error_handler_slot() noexcept {
  static std::atomic<error_handler> slot{&default_error_handler};
  return slot;
}

// Copies the thread's message at once (it lives only until the next call
// into the library) and throws the exception that matches the status.
[[noreturn]] inline void throw_status(rmm_status status, const char* message) {
  std::string msg = (message != nullptr && message[0] != '\0') ? std::string(message) : std::string();
  if (msg.empty()) { msg = rmm_status_string(status); }
  switch (status) {
    case RMM_ERROR_OUT_OF_MEMORY: throw out_of_memory(msg);
    case RMM_ERROR_BAD_ALLOC:
    case RMM_ERROR_BAD_ALIGNMENT: throw bad_alloc(msg, status);
    case RMM_ERROR_CUDA:
    case RMM_ERROR_BACKEND_UNAVAILABLE: throw cuda_error(msg, status);
    case RMM_ERROR_OUT_OF_RANGE: throw out_of_range(msg, status);
    default: throw logic_error(msg, status);
  }
}

inline void check(rmm_status status) {
  if (status != RMM_SUCCESS) { throw_status(status, rmm_last_error_message()); }
}

// Reports a failure met where nothing may throw.
inline void report(rmm_status status, const char* operation) noexcept {
  if (status == RMM_SUCCESS) { return; }
  const char* message = rmm_last_error_message();
  error_handler h = error_handler_slot().load(std::memory_order_acquire);
  (h != nullptr ? h : &default_error_handler)(operation, status, message);
}

}  // namespace detail

/// Installs h as the handler for failures in noexcept members and returns the
/// previous one; nullptr restores the default (a line on stderr).
inline error_handler set_error_handler(error_handler h) noexcept {
  return detail::error_handler_slot().exchange(h != nullptr ? h : &detail::default_error_handler,
                                               std::memory_order_acq_rel);
}

}  // namespace rmmgo

#endif /* RMMGO_ERRORS_HPP */
