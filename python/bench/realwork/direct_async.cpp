/*
 * direct_async.cpp -- the realwork benchmark's control case "torch-pluggable-async":
 * a PyTorch pluggable allocator that calls cudaMallocAsync and cudaFreeAsync
 * and nothing more. Against torch's own cudaMallocAsync backend it measures
 * what PyTorch's pluggable-allocator path costs by itself, the floor under
 * rmmgo's allocators, which take the same path. As rmmgo's cuda_async case
 * (rmm-async) does, it keeps what the device's default pool holds (release
 * threshold: the maximum), so that the pool does not give memory back at
 * every synchronization (with threshold 0 the control ran 1.31-1.58x torch's
 * step time on ResNet-50, Run 32).
 *
 * run.py builds it on the GPU machine with the host's C++ compiler (no CUDA
 * headers: the functions are looked up in the CUDA runtime that PyTorch
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
typedef int (*default_pool_fn)(void** pool, int device);
typedef int (*pool_set_fn)(void* pool, int attr, void* value);

malloc_async_fn malloc_async;
free_async_fn free_async;
default_pool_fn default_pool;
pool_set_fn pool_set;
pthread_once_t once = PTHREAD_ONCE_INIT;

const int release_threshold_attr = 4;  // cudaMemPoolAttrReleaseThreshold (a 64-bit value)
const int max_devices = 64;
bool kept[max_devices];  // the device's default pool keeps its memory; under keep_mu
pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;

// Sets the release threshold of device's default pool to the maximum, once.
void keep_pool(int device) {
  if (device < 0 || device >= max_devices || default_pool == nullptr || pool_set == nullptr) {
    return;
  }
  pthread_mutex_lock(&keep_mu);
  if (!kept[device]) {
    void* pool = nullptr;
    unsigned long long threshold = ~0ULL;
    if (default_pool(&pool, device) == 0 && pool_set(pool, release_threshold_attr, &threshold) == 0) {
      kept[device] = true;
    }
  }
  pthread_mutex_unlock(&keep_mu);
}

/* The runtime already in the process (PyTorch's), else the first that loads. */
void load(void) {
  static const char* names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  for (int pass = 0; pass < 2 && malloc_async == nullptr; pass++) {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && malloc_async == nullptr; i++) {
      void* h = dlopen(names[i], RTLD_NOW | (pass == 0 ? RTLD_NOLOAD : 0));
      if (h != nullptr) {
        malloc_async = reinterpret_cast<malloc_async_fn>(dlsym(h, "cudaMallocAsync"));
        free_async = reinterpret_cast<free_async_fn>(dlsym(h, "cudaFreeAsync"));
        default_pool = reinterpret_cast<default_pool_fn>(dlsym(h, "cudaDeviceGetDefaultMemPool"));
        pool_set = reinterpret_cast<pool_set_fn>(dlsym(h, "cudaMemPoolSetAttribute"));
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
  pthread_once(&once, load);
  void* p = nullptr;
  if (size == 0) {
    return nullptr;
  }
  if (malloc_async == nullptr || free_async == nullptr) {
    throw std::runtime_error("direct_async: no CUDA runtime with cudaMallocAsync in this process");
  }
  keep_pool(device);
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
