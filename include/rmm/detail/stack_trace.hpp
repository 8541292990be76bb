/* rmm/detail/stack_trace.hpp -- a captured call stack (rmmgo: the frames'
 * addresses, from glibc's backtrace(); printed as addresses). */
#pragma once
#include <rmm/detail/export.hpp>

#include <execinfo.h>

#include <array>
#include <cstddef>
#include <ostream>
#include <vector>

namespace RMM_NAMESPACE::detail {

class stack_trace {
 public:
  stack_trace() {
    std::array<void*, 64> frames{};
    int const depth = ::backtrace(frames.data(), static_cast<int>(frames.size()));
    frames_.assign(frames.begin(), frames.begin() + (depth > 0 ? depth : 0));
  }
  friend std::ostream& operator<<(std::ostream& os, stack_trace const& trace) {
    for (std::size_t i = 0; i < trace.frames_.size(); ++i) {
      os << "#" << i << " " << trace.frames_[i] << "\n";
    }
    return os;
  }

 private:
  std::vector<void*> frames_;
};

}  // namespace RMM_NAMESPACE::detail
