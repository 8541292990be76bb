// rmm_api_test.cpp -- a program written for RMM's C++ API (rmm/ headers,
// RMM 26.08's names), built against rmmgo's rmm/ headers, librmmgo and
// tests/cpp/fake_cccl (CCCL 3.3's spelling) and run on the backend `make
// test` chose. It checks that RMM code compiles unchanged and that what it
// makes is librmmgo's: the pool C++ sets current is the handle C sees.
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/cuda_stream_pool.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/logger.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/polymorphic_allocator.hpp>
#include <rmm/prefetch.hpp>
#include <rmm/process_is_exiting.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/polymorphic_allocator.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/thread_safe_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#include <rmm/prefetch.hpp>
#include <rmm/process_is_exiting.hpp>
#include <rmm/resource_ref.hpp>

#include <rmmgo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <thread>
#include <vector>

// The CUDA runtime functions the fake header declares and rmm/detail/error.hpp names.
extern "C" const char* cudaGetErrorName(cudaError_t) { return "cudaErrorFake"; }
extern "C" const char* cudaGetErrorString(cudaError_t) { return "fake CUDA error"; }
extern "C" cudaError_t cudaGetLastError(void) { return cudaSuccess; }

static int passed = 0, failed = 0;
#define CHECK(cond)                                                    \
  do {                                                                 \
    if (cond) {                                                        \
      ++passed;                                                        \
    } else {                                                           \
      ++failed;                                                        \
      std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                  \
  } while (0)
#define CHECK_THROWS(expr, type)   \
  do {                             \
    bool threw_ = false;           \
    try {                          \
      (void)(expr);                \
    } catch (type const&) {        \
      threw_ = true;               \
    }                              \
    CHECK(threw_);                 \
  } while (0)

// A user-defined CCCL resource over an any_resource upstream, as RMM's users write them.
class counting_resource {
 public:
  // Two parameters: a one-parameter constructor from an any_resource makes
  // CCCL's __basic_any ask, while checking this class, whether it converts
  // from itself (a recursive constraint; fake_cccl reproduces it).
  counting_resource(std::in_place_t, cuda::mr::any_resource<cuda::mr::device_accessible> upstream)
      : upstream_{std::move(upstream)} {}
  void* allocate(cuda::stream_ref s, std::size_t bytes, std::size_t alignment = 256) {
    ++*count_;
    return upstream_.allocate(s, bytes, alignment);
  }
  void deallocate(cuda::stream_ref s, void* p, std::size_t bytes, std::size_t alignment = 256) noexcept {
    --*count_;
    upstream_.deallocate(s, p, bytes, alignment);
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment = 256) {
    ++*count_;
    return upstream_.allocate_sync(bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment = 256) noexcept {
    --*count_;
    upstream_.deallocate_sync(p, bytes, alignment);
  }
  bool operator==(counting_resource const& o) const noexcept { return count_ == o.count_; }
  bool operator!=(counting_resource const& o) const noexcept { return count_ != o.count_; }
  friend void get_property(counting_resource const&, cuda::mr::device_accessible) noexcept {}
  int live() const { return *count_; }

 private:
  cuda::mr::any_resource<cuda::mr::device_accessible> upstream_;
  std::shared_ptr<int> count_ = std::make_shared<int>(0);
};

// Never set, and after a reset, the current resource is the device's initial
// cuda resource, equal to RMM's initial_resource() (DEFAULT_MR_REF_TEST).
static void test_initial_resource_is_current() {
  auto const initial = rmm::device_async_resource_ref{rmm::mr::detail::initial_resource()};
  CHECK(rmm::mr::get_current_device_resource_ref() == initial);
  rmm::mr::set_current_device_resource(rmm::mr::cuda_memory_resource{});
  rmm::mr::reset_current_device_resource();
  CHECK(rmm::mr::get_current_device_resource_ref() == initial);
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 1 << 20};
  auto old = rmm::mr::set_current_device_resource(pool);
  CHECK(old == rmm::mr::cuda_memory_resource{} && rmm::mr::get_current_device_resource_ref() != initial);
  rmm::mr::reset_current_device_resource();
}

static void test_pool_is_current_everywhere() {
  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::pool_memory_resource pool{cuda, 1 << 20};
  CHECK(pool.pool_size() >= (1u << 20));
  auto old = rmm::mr::set_current_device_resource(pool);
  // C sees the pool.
  rmm_resource_t h = nullptr;
  CHECK(rmm_get_current_device_resource(&h) == RMM_SUCCESS && h == pool.handle());
  rmm_resource_release(h);
  // C++ gets it back as the pool.
  rmm::device_async_resource_ref ref = rmm::mr::get_current_device_resource_ref();
  CHECK(ref == rmm::device_async_resource_ref{pool});
  {
    rmm::cuda_stream stream;
    rmm::device_buffer buf{1000, stream.view()};
    CHECK(buf.size() == 1000 && buf.data() != nullptr);
    std::vector<char> host(1000, 'x'), back(1000, 0);
    rmm::device_buffer src{host.data(), host.size(), stream.view()};
    rmm::device_buffer copy{src, stream.view()};
    rmm_memcpy(back.data(), copy.data(), back.size(), stream.value());
    stream.synchronize();
    CHECK(std::memcmp(host.data(), back.data(), host.size()) == 0);
    copy.resize(5000, stream.view());
    CHECK(copy.size() == 5000 && copy.capacity() >= 5000);
    copy.shrink_to_fit(stream.view());
    CHECK(copy.capacity() == 5000);
    CHECK(copy.memory_resource() == rmm::device_async_resource_ref{pool});
  }
  rmm::mr::set_current_device_resource(old);
  rmm::mr::reset_current_device_resource();
}

static void test_user_resource_over_any_resource() {
  rmm::mr::cuda_memory_resource cuda;
  counting_resource counting{std::in_place, cuda};
  {
    // A pool over a user-defined resource: the resource is registered with
    // librmmgo as an external resource.
    rmm::mr::pool_memory_resource pool{counting, 0};
    void* p = pool.allocate_sync(4096);
    CHECK(p != nullptr);
    CHECK(counting.live() >= 1);
    pool.deallocate_sync(p, 4096);
    CHECK(pool.get_upstream_resource() == rmm::device_async_resource_ref{counting});
  }
  CHECK(counting.live() == 0);  // the pool gave everything back
  // The user resource as the current resource: C allocates through it.
  rmm::mr::set_current_device_resource(counting);
  void* p = nullptr;
  rmm_resource_t h = nullptr;
  CHECK(rmm_get_current_device_resource(&h) == RMM_SUCCESS);
  CHECK(rmm_allocate(h, nullptr, 512, 256, &p) == RMM_SUCCESS && p != nullptr);
  CHECK(counting.live() == 1);
  rmm_deallocate(h, nullptr, p, 512, 256);
  rmm_resource_release(h);
  CHECK(counting.live() == 0);
  rmm::mr::reset_current_device_resource();
}

static void test_adaptors_and_errors() {
  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::statistics_resource_adaptor stats{cuda};
  void* p = stats.allocate_sync(1000);
  CHECK(stats.get_bytes_counter().value == 1000 && stats.get_allocations_counter().value == 1);
  stats.deallocate_sync(p, 1000);
  rmm::mr::limiting_resource_adaptor limit{stats, 1 << 20};
  CHECK_THROWS(limit.allocate_sync(2 << 20), rmm::out_of_memory);
  try {
    (void)limit.allocate_sync(2 << 20);
  } catch (rmm::out_of_memory const& e) {
    CHECK(std::string{e.what()}.find("out_of_memory") != std::string::npos);
  }
  CHECK(limit.get_allocation_limit() == (1u << 20));
  CHECK_THROWS((rmm::mr::pool_memory_resource{cuda, 1000}), rmm::logic_error);
  rmm::mr::tracking_resource_adaptor tracking{cuda};
  void* q = tracking.allocate_sync(300);
  CHECK(tracking.get_allocated_bytes() == 300);
  tracking.deallocate_sync(q, 300);
  rmm::mr::aligned_resource_adaptor aligned{cuda, 4096};
  void* a = aligned.allocate_sync(100, 4096);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 4096 == 0);
  aligned.deallocate_sync(a, 100, 4096);
  rmm::mr::fixed_size_memory_resource fixed{cuda, 8 << 20, 4};
  CHECK(fixed.get_block_size() == (8u << 20));
  rmm::mr::binning_memory_resource binning{cuda, 18, 20};
  binning.add_bin(8 << 20, fixed);
  void* b = binning.allocate_sync(6 << 20);
  binning.deallocate_sync(b, 6 << 20);
  rmm::mr::arena_memory_resource arena{cuda, 64 << 20};
  rmm::mr::thread_safe_resource_adaptor ts{arena};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ts] {
      for (int i = 0; i < 100; ++i) {
        void* x = ts.allocate_sync(1000 + i);
        ts.deallocate_sync(x, 1000 + i);
      }
    });
  }
  for (auto& t : threads) { t.join(); }
  int calls = 0;
  rmm::mr::failure_callback_resource_adaptor fc{limit,
                                                [](std::size_t, void* arg) {
                                                  ++*static_cast<int*>(arg);
                                                  return false;
                                                },
                                                &calls};
  CHECK_THROWS(fc.allocate_sync(4 << 20), rmm::out_of_memory);
  CHECK(calls == 1);
  rmm::mr::callback_memory_resource cb{
      [&cuda](std::size_t n, rmm::cuda_stream_view s, void*) { return cuda.allocate(s, n); },
      [&cuda](void* ptr, std::size_t n, rmm::cuda_stream_view s, void*) { cuda.deallocate(s, ptr, n); }};
  void* c = cb.allocate_sync(64);
  CHECK(c != nullptr);
  cb.deallocate_sync(c, 64);
  // Equality: copies share one resource; two cuda resources are equal.
  rmm::mr::cuda_memory_resource cuda2;
  CHECK(cuda == cuda2);
  rmm::mr::pool_memory_resource pool1{cuda, 0}, pool2{cuda, 0};
  auto pool1_copy = pool1;
  CHECK(pool1 == pool1_copy && pool1 != pool2);
  rmm::cuda_stream_pool streams{4};
  CHECK(streams.get_pool_size() == 4 && streams.get_stream(1) == streams.get_stream(5));
  CHECK(rmm::get_current_cuda_device().value() >= 0);
}

// What RMM 26.08's tests use beyond the resources: containers over simulated
// memory, a cuda_stream where CCCL takes a stream_ref, the failure adaptor
// over another exception type, the tracking adaptor's pointer map.
static void test_containers_and_26_08_names() {
  rmm::mr::cuda_memory_resource cuda;
  rmm::cuda_stream stream;
  cuda::stream_ref ref = stream;  // RMM: cuda_stream converts to stream_ref
  void* p = cuda.allocate(stream, 256);
  cuda.deallocate(ref, p, 256);

  rmm::device_uvector<int> v(100, stream, cuda);
  CHECK(v.size() == 100 && v.capacity() == 100 && !v.is_empty());
  for (int i = 0; i < 100; ++i) {
    int const x = i * 3;
    v.set_element(static_cast<std::size_t>(i), x, stream);
  }
  CHECK(v.element(7, stream) == 21 && v.front_element(stream) == 0 && v.back_element(stream) == 297);
  v.set_element_to_zero_async(7, stream);
  CHECK(v.element(7, stream) == 0);
  CHECK_THROWS(v.element(100, stream), rmm::out_of_range);
  v.resize(200, stream);
  CHECK(v.size() == 200 && v.element(99, stream) == 297);
  rmm::device_uvector<int> w(v, stream, cuda);
  CHECK(w.size() == 200 && w.element(50, stream) == 150);
  cuda::std::span<int const> sp = w;
  CHECK(sp.size() == 200 && sp.data() == w.data());
  rmm::device_buffer released = w.release();
  CHECK(released.size() == 200 * sizeof(int) && w.size() == 0);

  int const init = 42;
  rmm::device_scalar<int> sc{init, stream, cuda};
  CHECK(sc.value(stream) == 42 && sc.size() == 1);
  sc.set_value_to_zero_async(stream);
  CHECK(sc.value(stream) == 0);

  rmm::mr::managed_memory_resource managed;
  rmm::device_buffer mb{4096, stream, managed};
  rmm::prefetch(mb.data(), mb.size(), rmm::get_current_cuda_device(), stream);
  CHECK(!rmm::process_is_exiting());

  rmm::mr::polymorphic_allocator<int> pa{cuda};
  int* q = pa.allocate(10, stream);
  CHECK(q != nullptr);
  pa.deallocate(q, 10, stream);
  rmm::mr::polymorphic_allocator<double> pb{pa};
  CHECK(pa == pb);
  rmm::mr::stream_allocator_adaptor<rmm::mr::polymorphic_allocator<int>> sa{pa, stream};
  int* r = sa.allocate(4);
  sa.deallocate(r, 4);

  // failure_callback_resource_adaptor<bad_alloc> catches a bad_alloc the
  // upstream throws (librmmgo's own loop catches out_of_memory only).
  rmm::mr::limiting_resource_adaptor limit{cuda, 1 << 20};
  int calls = 0;
  rmm::mr::failure_callback_resource_adaptor<rmm::bad_alloc> fc{limit,
                                                                [](std::size_t, void* arg) {
                                                                  return ++*static_cast<int*>(arg) < 3;
                                                                },
                                                                &calls};
  CHECK_THROWS(fc.allocate_sync(4 << 20), rmm::bad_alloc);
  CHECK(calls == 3);
  void* f = fc.allocate_sync(1024);
  fc.deallocate_sync(f, 1024);
  CHECK(fc.get_upstream_resource() == rmm::device_async_resource_ref{limit});

  rmm::mr::tracking_resource_adaptor tr{cuda, true};
  void* t1 = tr.allocate_sync(1000);
  void* t2 = tr.allocate(stream, 2000);
  CHECK(tr.get_outstanding_allocations().size() == 2 && tr.get_allocated_bytes() == 3000);
  CHECK(tr.get_outstanding_allocations().at(t2).allocation_size == 2000 &&
        tr.get_outstanding_allocations().at(t1).strace != nullptr);
  tr.deallocate_sync(t1, 1000);
  tr.deallocate(stream, t2, 2000);
  CHECK(tr.get_outstanding_allocations().empty() && tr.get_allocated_bytes() == 0);
  stream.synchronize();
}

// device_uvector / device_scalar / device_buffer (RMM 26.08's semantics):
// the element copies go through librmmgo, so the simulated device runs them.
static void test_containers() {
  rmm::cuda_stream stream;
  rmm::device_uvector<std::int32_t> v(100, stream.view());
  CHECK(v.size() == 100 && v.capacity() == 100 && !v.is_empty() && v.ssize() == 100);
  CHECK(v.end() == v.begin() + 100 && v.rbegin().base() == v.end());
  for (std::size_t i = 0; i < v.size(); ++i) { v.set_element(i, static_cast<std::int32_t>(i * 3), stream.view()); }
  CHECK(v.element(7, stream.view()) == 21 && v.front_element(stream.view()) == 0 && v.back_element(stream.view()) == 297);
  v.set_element_to_zero_async(7, stream.view());
  CHECK(v.element(7, stream.view()) == 0);
  CHECK_THROWS(v.element(100, stream.view()), rmm::out_of_range);
  CHECK_THROWS(v.set_element(101, 1, stream.view()), rmm::out_of_range);
  // resize within capacity keeps the storage; reserve past it moves and keeps the elements.
  auto* before = v.data();
  v.resize(50, stream.view());
  CHECK(v.data() == before && v.size() == 50 && v.capacity() == 100);
  v.reserve(200, stream.view());
  CHECK(v.data() != before && v.size() == 50 && v.capacity() == 200 && v.element(49, stream.view()) == 147);
  v.shrink_to_fit(stream.view());
  CHECK(v.capacity() == 50 && v.element(10, stream.view()) == 30);
  rmm::device_uvector<std::int32_t> copy(v, stream.view());
  CHECK(copy.data() != v.data() && copy.size() == 50 && copy.element(10, stream.view()) == 30);
  cuda::std::span<std::int32_t const> span = std::as_const(copy);
  CHECK(span.data() == copy.data() && span.size() == 50);
  auto* data = copy.data();
  rmm::device_buffer storage = copy.release();
  CHECK(copy.is_empty() && storage.data() == data && storage.size() == 50 * sizeof(std::int32_t));
  constexpr auto too_many = std::numeric_limits<std::size_t>::max() / sizeof(std::uint64_t) + 1;
  CHECK_THROWS(rmm::device_uvector<std::uint64_t>(too_many, stream.view()), rmm::invalid_argument);
  rmm::device_uvector<double> d(1, stream.view());
  double const neg_zero = -0.0;
  d.set_element(0, neg_zero, stream.view());
  CHECK(std::signbit(d.element(0, stream.view())));

  rmm::device_scalar<float> scalar{2.5F, stream.view()};
  CHECK(scalar.value(stream.view()) == 2.5F && scalar.size() == 1);
  scalar.set_value_to_zero_async(stream.view());
  CHECK(scalar.value(stream.view()) == 0.0F);
  rmm::device_scalar<float> scalar2{scalar, stream.view()};
  CHECK(scalar2.data() != scalar.data() && scalar2.value(stream.view()) == 0.0F);

  // A buffer owns a copy of its resource and keeps its alignment.
  rmm::device_buffer aligned{1000, 128, stream.view()};
  CHECK(aligned.alignment() == 128 && rmm::is_pointer_aligned(aligned.data(), 128));
  // Past the resource's 256 bytes: bad_alloc, as RMM's over-aligned device_uvector test expects.
  CHECK_THROWS(rmm::device_buffer(1000, 512, stream.view()), rmm::bad_alloc);
  CHECK_THROWS(rmm::device_buffer(10, 3, stream.view()), rmm::invalid_argument);
  rmm::device_buffer from_pool = [&] {
    rmm::mr::cuda_memory_resource cuda;
    rmm::mr::pool_memory_resource pool{cuda, 1 << 20};
    return rmm::device_buffer{4096, stream.view(), pool};  // the pool object dies here
  }();
  from_pool.resize(8192, stream.view());  // still allocates from the pool the buffer keeps
  CHECK(from_pool.size() == 8192);
  stream.synchronize();
}

// polymorphic_allocator and stream_allocator_adaptor (std::vector-compatible).
static void test_allocators() {
  rmm::cuda_stream stream;
  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::polymorphic_allocator<int> alloc{cuda};
  int* p = alloc.allocate(10, stream.view());
  CHECK(p != nullptr);
  alloc.deallocate(p, 10, stream.view());
  rmm::mr::polymorphic_allocator<double> rebound{alloc};
  CHECK(rebound == alloc);
  // A copy of the same type: with CCCL (and fake_cccl's any_resource) this
  // must not consider the any_resource constructor (a recursive constraint).
  rmm::mr::polymorphic_allocator<int> same{alloc};
  auto assigned = same;
  CHECK(same == alloc && assigned == alloc);
  rmm::mr::polymorphic_allocator<int> other{rmm::mr::pool_memory_resource{cuda, 0}};
  CHECK(other != alloc);
  rmm::mr::stream_allocator_adaptor<rmm::mr::polymorphic_allocator<int>> adapted{alloc, stream.view()};
  CHECK(adapted.stream() == stream.view());
  int* q = adapted.allocate(4);
  adapted.deallocate(q, 4);
  using rebound_t = std::allocator_traits<decltype(adapted)>::rebind_alloc<double>;
  rebound_t as_double{adapted};
  CHECK(as_double == adapted);
  rmm::prefetch(q, 0, rmm::get_current_cuda_device(), stream.view());  // a hint: no effect here
  CHECK(!rmm::process_is_exiting());
}

// tracking's map and log, the logging adaptor to a stream.
static void test_tracking_and_logging() {
  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::tracking_resource_adaptor tracking{cuda, true};
  CHECK(tracking.get_outstanding_allocations().empty());
  void* a = tracking.allocate_sync(1000);
  void* b = tracking.allocate_sync(24);
  auto const& map = tracking.get_outstanding_allocations();
  CHECK(map.size() == 2 && map.count(a) == 1 && map.at(a).allocation_size == 1000 && map.at(b).allocation_size == 24);
  CHECK(map.begin()->second.strace != nullptr);
  std::ostringstream debug_log;
  auto sink = std::make_shared<rapids_logger::ostream_sink_mt>(debug_log);
  auto const old_level = rmm::default_logger().level();
  rmm::default_logger().sinks().push_back(sink);
  rmm::default_logger().set_level(rapids_logger::level_enum::debug);
  tracking.log_outstanding_allocations();
  rmm::default_logger().set_level(old_level);
  rmm::default_logger().sinks().pop_back();
  CHECK(debug_log.str().find("Outstanding Allocations") != std::string::npos);
  tracking.deallocate_sync(a, 1000);
  tracking.deallocate_sync(b, 24);
  CHECK(tracking.get_outstanding_allocations().empty());

  std::ostringstream csv;
  {
    rmm::mr::logging_resource_adaptor log_mr{cuda, csv, true};
    void* p = log_mr.allocate_sync(100);
    log_mr.deallocate_sync(p, 100);
    CHECK_THROWS(log_mr.allocate_sync(std::size_t{1} << 50), rmm::out_of_memory);
    std::istringstream lines{csv.str()};
    std::string header, first, second, third;
    std::getline(lines, header);
    std::getline(lines, first);
    std::getline(lines, second);
    std::getline(lines, third);
    CHECK(header == log_mr.header());
    char ptr_text[32];
    std::snprintf(ptr_text, sizeof ptr_text, "%p", p);
    CHECK(first.find(std::string{",allocate,"} + ptr_text + ",100,") != std::string::npos);
    CHECK(second.find(std::string{",free,"} + ptr_text + ",100,") != std::string::npos);
    CHECK(third.find(",allocate failure,(nil),1125899906842624,") != std::string::npos);
    CHECK(std::count(first.begin(), first.end(), ',') == 5);
  }
}

int main() {
  test_initial_resource_is_current();
  test_pool_is_current_everywhere();
  test_containers_and_26_08_names();
  test_user_resource_over_any_resource();
  test_adaptors_and_errors();
  test_containers();
  test_allocators();
  test_tracking_and_logging();
  std::printf("rmm_api_test: %d checks passed, %d failed\n", passed, failed);
  std::printf("%d passed, %d failed\n", failed == 0 ? 1 : 0, failed == 0 ? 0 : 1);
  return failed == 0 ? 0 : 1;
}
