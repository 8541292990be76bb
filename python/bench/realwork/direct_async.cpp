/*
 * direct_async.cpp -- the realwork benchmark's control case "torch-pluggable-async":
 * a PyTorch pluggable allocator that calls cudaMallocAsync and cudaFreeAsync
 * and nothing else. Against torch's own cudaMallocAsync backend it measures
 * what PyTorch's pluggable-allocator path costs by itself, the floor under
 * rmmgo's allocators, which take the same path.
 *
 * run.py builds it on the GPU machine with the host's C++ compiler (no CUDA
 * headers: the two functions are looked up in the CUDA runtime that PyTorch
 * has loaded already). C++ for one reason: PyTorch does not check the
 * pointer an allocator returns, so a failure must throw (as rmmgo's
 * librmmgo_torch.so does), and PyTorch turns the exception into an error.
 *
 *   c++ -O2 -shared -fPIC -o direct_async.so direct_async.cpp -ldl
 */
#include <dlfcn.h>
#include <pthread.h>

#include <cstddef>
#include <new>
#include <stdexcept>

namespace {

typedef int (*malloc_async_fn)(void** p, size_t n, void* stream);
typedef int (*free_async_fn)(void* p, void* stream);

malloc_async_fn malloc_async;
free_async_fn free_async;
pthread_once_t once = PTHREAD_ONCE_INIT;

/* The runtime already in the process (PyTorch's), else the first that loads. */
void load(void) {
  static const char* names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  for (int pass = 0; pass < 2 && malloc_async == nullptr; pass++) {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && malloc_async == nullptr; i++) {
      void* h = dlopen(names[i], RTLD_NOW | (pass == 0 ? RTLD_NOLOAD : 0));
      if (h != nullptr) {
        malloc_async = reinterpret_cast<malloc_async_fn>(dlsym(h, "cudaMallocAsync"));
        free_async = reinterpret_cast<free_async_fn>(dlsym(h, "cudaFreeAsync"));
      }
    }
  }
}

class out_of_memory : public std::bad_alloc {
 public:
  const char* what() const noexcept override { return "direct_async: cudaMallocAsync: out of memory"; }
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* direct_async_allocate(size_t size, int device, void* stream) {
  (void)device;
  pthread_once(&once, load);
  void* p = nullptr;
  if (size == 0) {
    return nullptr;
  }
  if (malloc_async == nullptr || free_async == nullptr) {
    throw std::runtime_error("direct_async: no CUDA runtime with cudaMallocAsync in this process");
  }
  if (malloc_async(&p, size, stream) != 0) {
    throw out_of_memory();  // every failure: the benchmark's cases stay well inside the device
  }
  return p;
}

__attribute__((visibility("default"))) void direct_async_deallocate(void* p, size_t size, int device, void* stream) noexcept {
  (void)size;
  (void)device;
  pthread_once(&once, load);
  if (p != nullptr && free_async != nullptr) {  // never null here: the allocation found it
    (void)free_async(p, stream);
  }
}

}  // extern "C"
