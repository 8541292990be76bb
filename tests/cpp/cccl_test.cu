// cccl_test.cu -- rmmgo's C++ classes as CCCL memory resources, on a GPU.
//
// Compiled with nvcc (CCCL ships with the CUDA toolkit), so rmmgo.hpp turns
// its CCCL integration on. Checks, for every resource and adaptor class:
//   - at compile time: the CCCL concept (cuda::mr::resource_with on CCCL >=
//     3.1, cuda::mr::async_resource_with on CCCL 3.0) with device_accessible,
//     and host_accessible exactly where the class has it;
//   - at run time: allocation through CCCL's type-erased reference
//     (cuda::mr::resource_ref / async_resource_ref), a kernel writing the
//     memory, the host reading it back (and reading it directly where the
//     memory is host accessible); through cuda::mr::any_resource where this
//     CCCL has it (libcu++ >= 3.2; with -DRMMGO_TEST_CUDAX, cudax's owning
//     wrapper on older CCCL); through thrust::device_vector and thrust::reduce
//     (temporary storage too) with an allocator over the type-erased
//     reference; and through a small container of our own that holds only a
//     resource reference.
// Prints one line per test, then "N passed, M failed, K skipped".
//
// Build and run: tests/cpp/run_gpu.sh

#include "rmmgo.hpp"  // first: with CCCL < 3.2 it enables CCCL's memory resources

#if !RMMGO_HAS_CCCL
#  error "rmmgo.hpp did not switch its CCCL integration on: <cuda/memory_resource> or <cuda_runtime_api.h> not found"
#endif

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <thrust/device_malloc_allocator.h>
#include <thrust/device_ptr.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>

#if defined(RMMGO_TEST_CUDAX)
#  include <cuda/experimental/memory_resource.cuh>
#endif

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace mr = rmmgo::mr;
using cuda::mr::device_accessible;
using cuda::mr::host_accessible;

// ------------------------------------------------- CCCL's spelling, per version

#if RMMGO_CCCL_LEGACY_NAMES  // CCCL 3.0
template <class... P>
using device_ref = cuda::mr::async_resource_ref<P...>;
#  define RESOURCE_WITH cuda::mr::async_resource_with
template <class R>
void* mr_allocate(R& r, cudaStream_t s, std::size_t n) {
  return r.allocate_async(n, 256, cuda::stream_ref{s});
}
template <class R>
void mr_deallocate(R& r, cudaStream_t s, void* p, std::size_t n) {
  r.deallocate_async(p, n, 256, cuda::stream_ref{s});
}
#else  // CCCL >= 3.1
template <class... P>
using device_ref = cuda::mr::resource_ref<P...>;
#  define RESOURCE_WITH cuda::mr::resource_with
template <class R>
void* mr_allocate(R& r, cudaStream_t s, std::size_t n) {
  return r.allocate(cuda::stream_ref{s}, n, 256);
}
template <class R>
void mr_deallocate(R& r, cudaStream_t s, void* p, std::size_t n) {
  r.deallocate(cuda::stream_ref{s}, p, n, 256);
}
#endif

#if CCCL_VERSION >= 3002000
#  define HAVE_ANY_RESOURCE 1
template <class... P>
using owning_any = cuda::mr::any_resource<P...>;
#elif defined(RMMGO_TEST_CUDAX)
#  define HAVE_ANY_RESOURCE 1
#  if RMMGO_CCCL_LEGACY_NAMES
template <class... P>
using owning_any = cuda::experimental::any_async_resource<P...>;
#  else
template <class... P>
using owning_any = cuda::experimental::any_resource<P...>;
#  endif
#else
#  define HAVE_ANY_RESOURCE 0
#endif

// --------------------------------------------------------- compile-time checks

template <class R>
constexpr bool device_only = RESOURCE_WITH<R, device_accessible> && !RESOURCE_WITH<R, device_accessible, host_accessible>;
template <class R>
constexpr bool device_and_host = RESOURCE_WITH<R, device_accessible, host_accessible>;

static_assert(device_only<mr::device_memory_resource>);
static_assert(device_only<mr::cuda_memory_resource>);
static_assert(device_and_host<mr::managed_memory_resource>);
static_assert(device_and_host<mr::pinned_host_memory_resource>);
static_assert(device_and_host<mr::system_memory_resource>);
static_assert(device_and_host<mr::sam_headroom_memory_resource>);
static_assert(device_only<mr::cuda_async_memory_resource>);
static_assert(device_only<mr::cuda_async_view_memory_resource>);
static_assert(device_and_host<mr::cuda_async_managed_memory_resource>);
static_assert(device_only<mr::callback_memory_resource>);
static_assert(device_only<mr::pool_memory_resource<>>);
static_assert(device_only<mr::pool_memory_resource<mr::cuda_memory_resource>>);
static_assert(device_and_host<mr::pool_memory_resource<mr::managed_memory_resource>>);
static_assert(device_only<mr::arena_memory_resource<mr::cuda_memory_resource>>);
static_assert(device_and_host<mr::arena_memory_resource<mr::pinned_host_memory_resource>>);
static_assert(device_only<mr::fixed_size_memory_resource<mr::cuda_memory_resource>>);
static_assert(device_only<mr::binning_memory_resource<mr::cuda_memory_resource>>);
static_assert(device_only<mr::aligned_resource_adaptor<mr::cuda_memory_resource>>);
static_assert(device_only<mr::failure_callback_resource_adaptor<mr::cuda_memory_resource>>);
static_assert(device_only<mr::limiting_resource_adaptor<mr::cuda_memory_resource>>);
static_assert(device_only<mr::logging_resource_adaptor<mr::cuda_memory_resource>>);
static_assert(device_and_host<mr::prefetch_resource_adaptor<mr::managed_memory_resource>>);
static_assert(device_only<mr::statistics_resource_adaptor<mr::cuda_memory_resource>>);
static_assert(
    device_and_host<mr::statistics_resource_adaptor<mr::pool_memory_resource<mr::managed_memory_resource>>>);
static_assert(device_only<mr::thread_safe_resource_adaptor<mr::cuda_memory_resource>>);
static_assert(device_only<mr::tracking_resource_adaptor<mr::cuda_memory_resource>>);
static_assert(std::is_constructible_v<device_ref<device_accessible, host_accessible>, mr::managed_memory_resource&>);
static_assert(std::is_constructible_v<device_ref<device_accessible>, mr::pool_memory_resource<>&>);

// ------------------------------------------------------------------- harness

int g_passed = 0, g_failed = 0, g_skipped = 0;
std::string g_failure;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      char buf_[512];                                                          \
      std::snprintf(buf_, sizeof buf_, "%s:%d: CHECK(%s)", __FILE__, __LINE__, #cond); \
      throw std::runtime_error(buf_);                                          \
    }                                                                          \
  } while (0)

#define CUDA_CHECK(call)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(e_));              \
    }                                                                                            \
  } while (0)

struct skipped {
  std::string why;
};

template <class F>
void run(const char* name, F&& f) {
  try {
    cudaSetDevice(0);
    f();
    ++g_passed;
    std::printf("PASS %s\n", name);
  } catch (const skipped& s) {
    ++g_skipped;
    std::printf("SKIP %s: %s\n", name, s.why.c_str());
  } catch (const std::exception& e) {
    ++g_failed;
    std::printf("FAIL %s: %s\n", name, e.what());
  }
  std::fflush(stdout);
}

template <class R, class... A>
R make_or_skip(A&&... args) {
  try {
    return R(std::forward<A>(args)...);
  } catch (const rmmgo::logic_error& e) {
    if (e.status() == RMM_ERROR_NOT_SUPPORTED) throw skipped{e.what()};
    throw;
  }
}

// ------------------------------------------------------------ device code

__global__ void iota_kernel(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = i;
}

// --------------------------------------- a thrust allocator over a resource_ref

// Allocates through a CCCL type-erased resource reference, in stream order.
template <class T>
class resource_allocator : public thrust::device_malloc_allocator<T> {
 public:
  using value_type = T;
  using pointer = thrust::device_ptr<T>;
  using size_type = std::size_t;
  template <class U>
  struct rebind {
    using other = resource_allocator<U>;
  };

  resource_allocator(device_ref<device_accessible> mr, cudaStream_t stream) : mr_(mr), stream_(stream) {}
  template <class U>
  resource_allocator(const resource_allocator<U>& other) : mr_(other.mr_), stream_(other.stream_) {}

  pointer allocate(size_type n) { return thrust::device_pointer_cast(static_cast<T*>(mr_allocate(mr_, stream_, n * sizeof(T)))); }
  void deallocate(pointer p, size_type n) noexcept { mr_deallocate(mr_, stream_, thrust::raw_pointer_cast(p), n * sizeof(T)); }

  bool operator==(const resource_allocator& o) const { return mr_ == o.mr_ && stream_ == o.stream_; }
  bool operator!=(const resource_allocator& o) const { return !(*this == o); }

  device_ref<device_accessible> mr_;
  cudaStream_t stream_;
};

// A container of our own that knows its memory only through a resource_ref.
template <class T>
class ref_vector {
 public:
  ref_vector(std::size_t n, device_ref<device_accessible> mr, cudaStream_t s)
      : mr_(mr), stream_(s), n_(n), p_(static_cast<T*>(mr_allocate(mr_, s, n * sizeof(T)))) {}
  ref_vector(const ref_vector&) = delete;
  ref_vector& operator=(const ref_vector&) = delete;
  ~ref_vector() { mr_deallocate(mr_, stream_, p_, n_ * sizeof(T)); }
  T* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  device_ref<device_accessible> mr_;
  cudaStream_t stream_;
  std::size_t n_;
  T* p_;
};

// ----------------------------------------------------------------- the check

// Every path a CCCL user takes with resource r.
template <class R>
void check_resource(R& r) {
  static_assert(RESOURCE_WITH<R, device_accessible>);
  constexpr bool host = rmmgo::mr::has_property_v<R, host_accessible>;
  static_assert(host == RESOURCE_WITH<R, device_accessible, host_accessible>);

  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int n = 1 << 16;

  // 1. Through the type-erased reference: a kernel fills, the host checks.
  {
    device_ref<device_accessible> ref{r};
    int* p = static_cast<int*>(mr_allocate(ref, s, n * sizeof(int)));
    CHECK(p != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
    iota_kernel<<<(n + 255) / 256, 256, 0, s>>>(p, n);
    CUDA_CHECK(cudaGetLastError());
    std::vector<int> host_copy(n);
    CUDA_CHECK(cudaMemcpyAsync(host_copy.data(), p, n * sizeof(int), cudaMemcpyDefault, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CHECK(host_copy[0] == 0 && host_copy[12345] == 12345 && host_copy[n - 1] == n - 1);
    if constexpr (host) {
      CHECK(p[777] == 777);  // host accessible: the host reads it directly
      device_ref<device_accessible, host_accessible> href{r};
      char* h = static_cast<char*>(mr_allocate(href, s, 64));
      CUDA_CHECK(cudaStreamSynchronize(s));
      h[63] = 'x';
      mr_deallocate(href, s, h, 64);
    }
    mr_deallocate(ref, s, p, n * sizeof(int));
  }

  // 2. Directly, with CCCL's calling convention on the concrete type.
  {
    void* p = mr_allocate(r, s, 1000);
    CHECK(p != nullptr);
    mr_deallocate(r, s, p, 1000);
  }

  // 3. Through the owning type-erased wrapper, where this CCCL has one.
#if HAVE_ANY_RESOURCE
  {
    owning_any<device_accessible> any{r};
    owning_any<device_accessible> copy = any;
    int* p = static_cast<int*>(mr_allocate(copy, s, n * sizeof(int)));
    iota_kernel<<<(n + 255) / 256, 256, 0, s>>>(p, n);
    int last = -1;
    CUDA_CHECK(cudaMemcpyAsync(&last, p + n - 1, sizeof last, cudaMemcpyDefault, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CHECK(last == n - 1);
    mr_deallocate(any, s, p, n * sizeof(int));  // a copy deallocates what another allocated
  }
#endif

  // 4. A thrust container and algorithm (its temporary storage included),
  //    allocating through the reference on the legacy default stream.
  {
    device_ref<device_accessible> ref{r};
    resource_allocator<int> alloc{ref, cudaStream_t{}};
    thrust::device_vector<int, resource_allocator<int>> v(n, alloc);
    thrust::sequence(thrust::cuda::par.on(cudaStream_t{}), v.begin(), v.end());
    resource_allocator<char> temp{ref, cudaStream_t{}};
    long long sum = thrust::reduce(thrust::cuda::par(temp).on(cudaStream_t{}), v.begin(), v.end(), 0LL);
    CHECK(sum == static_cast<long long>(n) * (n - 1) / 2);
  }

  // 5. A container of our own holding only a reference.
  {
    ref_vector<int> v(n, device_ref<device_accessible>{r}, s);
    iota_kernel<<<(n + 255) / 256, 256, 0, s>>>(v.data(), n);
    long long sum = thrust::reduce(thrust::cuda::par.on(s), thrust::device_pointer_cast(v.data()),
                                   thrust::device_pointer_cast(v.data() + n), 0LL);
    CHECK(sum == static_cast<long long>(n) * (n - 1) / 2);
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaStreamDestroy(s));
}

void* host_allocate(std::size_t bytes, rmm_stream_t, void*) {
  void* p = nullptr;
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : nullptr;
}
void host_deallocate(void* p, std::size_t, rmm_stream_t, void*) { cudaFree(p); }
int give_up(std::size_t, void*) { return 0; }

int main() {
  std::printf("rmmgo %s, CCCL %d.%d.%d (%s names), backend %s\n", rmm_version(), CCCL_MAJOR_VERSION,
              CCCL_MINOR_VERSION, CCCL_PATCH_VERSION, RMMGO_CCCL_LEGACY_NAMES ? "3.0" : ">= 3.1",
              rmmgo::backend_name().c_str());
  std::printf("owning wrapper: %s\n",
              HAVE_ANY_RESOURCE ? "tested" : "not in this CCCL's libcu++ (cuda::mr::any_resource arrived in 3.2)");
  if (rmmgo::backend_name() != "cuda") {
    std::printf("not on the cuda backend: nothing to run\n0 passed, 1 failed\n");
    return 1;
  }
  mr::cuda_memory_resource cuda;

  run("cuda_memory_resource", [&] { check_resource(cuda); });
  run("managed_memory_resource", [&] { mr::managed_memory_resource r; check_resource(r); });
  run("pinned_host_memory_resource", [&] { mr::pinned_host_memory_resource r; check_resource(r); });
  run("system_memory_resource", [&] { auto r = make_or_skip<mr::system_memory_resource>(); check_resource(r); });
  run("sam_headroom_memory_resource", [&] {
    auto r = make_or_skip<mr::sam_headroom_memory_resource>(std::size_t{1} << 30);
    check_resource(r);
  });
  run("cuda_async_memory_resource", [&] { mr::cuda_async_memory_resource r; check_resource(r); });
  run("cuda_async_view_memory_resource", [&] {
    mr::cuda_async_memory_resource owner;
    mr::cuda_async_view_memory_resource r{owner.pool_handle()};
    check_resource(r);
  });
  run("cuda_async_managed_memory_resource", [&] {
    auto r = make_or_skip<mr::cuda_async_managed_memory_resource>();
    check_resource(r);
  });
  run("callback_memory_resource", [&] {
    mr::callback_memory_resource r{&host_allocate, &host_deallocate};
    check_resource(r);
  });
  run("pool_memory_resource", [&] { mr::pool_memory_resource r{cuda, std::size_t{64} << 20}; check_resource(r); });
  run("pool_memory_resource<managed>", [&] {
    mr::managed_memory_resource managed;
    mr::pool_memory_resource r{managed, std::size_t{64} << 20};
    check_resource(r);
  });
  run("arena_memory_resource", [&] { mr::arena_memory_resource r{cuda, std::size_t{256} << 20}; check_resource(r); });
  run("fixed_size_memory_resource", [&] {
    mr::fixed_size_memory_resource r{cuda, std::size_t{1} << 20, 8};
    check_resource(r);
  });
  run("binning_memory_resource", [&] {
    mr::binning_memory_resource r{cuda, std::int8_t{8}, std::int8_t{16}};
    check_resource(r);
  });
  run("aligned_resource_adaptor", [&] { mr::aligned_resource_adaptor r{cuda, 4096}; check_resource(r); });
  run("failure_callback_resource_adaptor", [&] {
    mr::failure_callback_resource_adaptor r{cuda, &give_up, nullptr};
    check_resource(r);
  });
  run("limiting_resource_adaptor", [&] {
    mr::limiting_resource_adaptor r{cuda, std::size_t{1} << 30};
    check_resource(r);
  });
  run("logging_resource_adaptor", [&] {
    std::string path = "/tmp/rmmgo_cccl_test_log.csv";
    {
      mr::logging_resource_adaptor r{cuda, path};
      check_resource(r);
    }
    std::remove(path.c_str());
  });
  run("prefetch_resource_adaptor", [&] {
    mr::managed_memory_resource managed;
    mr::prefetch_resource_adaptor r{managed};
    check_resource(r);
  });
  run("statistics_resource_adaptor", [&] {
    mr::statistics_resource_adaptor r{cuda};
    check_resource(r);
    CHECK(r.get_bytes_counter().value == 0);
    CHECK(r.get_allocations_counter().total >= 4);
  });
  run("thread_safe_resource_adaptor", [&] { mr::thread_safe_resource_adaptor r{cuda}; check_resource(r); });
  run("tracking_resource_adaptor", [&] {
    mr::tracking_resource_adaptor r{cuda};
    check_resource(r);
    CHECK(r.get_outstanding_allocation_count() == 0);
  });
  run("device_memory_resource (untyped per-device resource)", [&] {
    auto current = mr::get_current_device_resource();
    check_resource(current);
  });
  run("device_uvector with thrust", [&] {
    mr::pool_memory_resource pool{cuda, std::size_t{16} << 20};
    rmmgo::cuda_stream s;
    rmmgo::device_uvector<int> v(1000, s, pool);
    thrust::sequence(thrust::cuda::par.on(s.value()), thrust::device_pointer_cast(v.begin()),
                     thrust::device_pointer_cast(v.end()));
    CHECK(v.element(999, s) == 999);
    long long sum = thrust::reduce(thrust::cuda::par.on(s.value()), thrust::device_pointer_cast(v.begin()),
                                   thrust::device_pointer_cast(v.end()), 0LL);
    CHECK(sum == 999LL * 1000 / 2);
  });

  std::printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
  return g_failed == 0 ? 0 : 1;
}
