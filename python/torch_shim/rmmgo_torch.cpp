// librmmgo_torch.so: the functions PyTorch's CUDAPluggableAllocator loads.
//
//   torch.cuda.memory.CUDAPluggableAllocator(
//       "librmmgo_torch.so", "rmmgo_torch_allocate", "rmmgo_torch_deallocate")
//
// PyTorch calls `void* alloc(size_t, int device, cudaStream_t)` and
// `void free(void*, size_t, int device, cudaStream_t)` and never checks the
// pointer alloc returns. It does let a C++ exception from alloc travel up
// (CUDAPluggableAllocator::malloc has no try/catch) to its Python binding
// layer, which turns any std::exception into a Python RuntimeError carrying
// what(). So a failed allocation must throw here: returning NULL would give
// PyTorch a tensor at address 0.
//
// rmm_torch_allocate (librmmgo.so, written in Go) cannot throw: exceptions
// must not unwind through Go frames. It returns NULL and leaves the status in
// rmm_last_error_status() and the reason in rmm_last_error_message(); this
// layer turns that into an exception, entirely in C++ frames. The successful
// call is the library call and one test, nothing else. c10::OutOfMemoryError (which PyTorch maps to
// torch.OutOfMemoryError) needs PyTorch's headers and libc10, which this
// layer does without on purpose; out of memory is thrown as a std::bad_alloc
// subclass and everything else as std::runtime_error, both with the library's
// message.
//
// Deallocation must not throw: PyTorch calls it from deleters, where an
// exception would terminate the process. rmm_torch_deallocate returns
// nothing and cannot fail loudly; it is passed straight through.

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "rmmgo.h"

namespace {

// Out of memory, with the library's message (std::bad_alloc's own what() is fixed).
class out_of_memory : public std::bad_alloc {
 public:
  explicit out_of_memory(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  std::string msg_;
};

bool mentions_out_of_memory(const char* msg) {
  return std::strstr(msg, "out of memory") != nullptr || std::strstr(msg, "out_of_memory") != nullptr ||
         std::strstr(msg, "OUT_OF_MEMORY") != nullptr || std::strstr(msg, "Out of memory") != nullptr;
}

}  // namespace

extern "C" {

// PyTorch's alloc function. size 0 gives NULL without an error, as PyTorch expects.
__attribute__((visibility("default"))) void* rmmgo_torch_allocate(size_t size, int device, rmm_stream_t stream) {
  void* p = rmm_torch_allocate(size, device, stream);
  if (p != nullptr || size == 0) {
    return p;
  }
  const char* why = rmm_last_error_message();
  if (why == nullptr || *why == '\0') {
    why = "no message from the library";
  }
  std::string msg = "rmmgo: cannot allocate " + std::to_string(size) + " bytes on device " + std::to_string(device) +
                    ": " + why;
  if (rmm_last_error_status() == RMM_ERROR_OUT_OF_MEMORY || mentions_out_of_memory(why)) {
    throw out_of_memory(msg);
  }
  throw std::runtime_error(msg);
}

// PyTorch's free function. Never throws.
__attribute__((visibility("default"))) void rmmgo_torch_deallocate(void* ptr, size_t size, int device,
                                                                    rmm_stream_t stream) noexcept {
  if (ptr == nullptr) {
    return;
  }
  rmm_torch_deallocate(ptr, size, device, stream);
}

}  // extern "C"
