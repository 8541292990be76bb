/* rmm/error.hpp -- RMM's exception types (rmmgo). */
#pragma once
#include <rmm/detail/export.hpp>

#include <new>
#include <stdexcept>
#include <string>

namespace RMM_NAMESPACE {

/// A broken precondition (RMM_EXPECTS, RMM_FAIL).
struct logic_error : public std::logic_error {
  using std::logic_error::logic_error;
};

/// A CUDA call failed.
struct cuda_error : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An allocation failed.
class bad_alloc : public std::bad_alloc {
 public:
  bad_alloc(const char* msg) : what_{std::string{std::bad_alloc::what()} + ": " + msg} {}
  bad_alloc(std::string const& msg) : bad_alloc{msg.c_str()} {}
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

/// An allocation failed for lack of memory.
class out_of_memory : public bad_alloc {
 public:
  out_of_memory(const char* msg) : bad_alloc{std::string{"out_of_memory: "} + msg} {}
  out_of_memory(std::string const& msg) : out_of_memory{msg.c_str()} {}
};

/// An argument was out of range.
class out_of_range : public std::out_of_range {
  using std::out_of_range::out_of_range;
};

/// An argument was invalid (a size that overflows, an alignment that is not a power of 2).
class invalid_argument : public std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace RMM_NAMESPACE
