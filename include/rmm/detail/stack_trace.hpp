/* rmm/detail/stack_trace.hpp -- a call stack, printable (rmmgo: the frames
 * are captured with backtrace() where RMM_ENABLE_STACK_TRACES is defined, as
 * RMM; tracking_resource_adaptor's stacks are librmmgo's, shown by
 * get_outstanding_allocations_str()). */
#pragma once
#include <rmm/detail/export.hpp>

#include <cstddef>
#include <ostream>
#include <vector>

#if defined(RMM_ENABLE_STACK_TRACES)
#include <execinfo.h>

#include <cstdlib>
#endif

namespace RMM_NAMESPACE::detail {

class stack_trace {
 public:
  stack_trace() {
#if defined(RMM_ENABLE_STACK_TRACES)
    void* frames[64];
    int const depth = ::backtrace(frames, 64);
    frames_.assign(frames, frames + (depth > 0 ? depth : 0));
#endif
  }
  friend std::ostream& operator<<(std::ostream& os, stack_trace const& trace) {
#if defined(RMM_ENABLE_STACK_TRACES)
    char** names = ::backtrace_symbols(trace.frames_.data(), static_cast<int>(trace.frames_.size()));
    for (std::size_t i = 0; i < trace.frames_.size(); ++i) {
      os << "#" << i << " in " << (names != nullptr ? names[i] : "?") << '\n';
    }
    std::free(names);
#else
    (void)trace;
    os << "stack traces disabled" << '\n';
#endif
    return os;
  }

 private:
  std::vector<void*> frames_;
};

}  // namespace RMM_NAMESPACE::detail
