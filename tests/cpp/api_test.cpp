// api_test.cpp -- tests of include/rmmgo.hpp against build/librmmgo.so.
//
// Runs on whichever backend the library opens (RMMGO_BACKEND): the simulated
// device here, the GPU on the GPU machine. Tests that need something the
// device lacks (pageable memory access, two devices, managed memory pools)
// say so and are skipped. Prints one line per test and then
// "N passed, M failed, K skipped"; exits 1 if any test failed.
//
// Build: g++ -std=c++17 -Wall -Wextra -Werror -Iinclude tests/cpp/api_test.cpp
//          -Lbuild -lrmmgo -Wl,-rpath,$PWD/build -pthread   (make test-cpp does it)
// Run:   RMMGO_BACKEND=simulated RMMGO_SIM_PAGEABLE=1 ./api_test [name-substring]

#include "rmmgo.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <unistd.h>
#include <vector>

namespace {

// ---------------------------------------------------------------- harness

struct test_failure {
  std::string message;
};
struct test_skipped {
  std::string reason;
};

struct test_case {
  const char* name;
  void (*fn)();
};

std::vector<test_case>& registry() {
  static std::vector<test_case> tests;
  return tests;
}

struct registrar {
  registrar(const char* name, void (*fn)()) { registry().push_back({name, fn}); }
};

#define TEST(name)                                  \
  void name();                                      \
  const registrar name##_registrar{#name, &name};   \
  void name()

[[noreturn]] void fail(const char* file, int line, const std::string& what) {
  std::ostringstream os;
  os << file << ":" << line << ": " << what;
  throw test_failure{os.str()};
}

#define CHECK(cond)                                          \
  do {                                                       \
    if (!(cond)) fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

#define CHECK_EQ(a, b)                                                                   \
  do {                                                                                   \
    auto va_ = (a);                                                                      \
    auto vb_ = (b);                                                                      \
    if (!(va_ == vb_)) {                                                                 \
      std::ostringstream os_;                                                            \
      os_ << "CHECK_EQ(" #a ", " #b "): " << +va_ << " != " << +vb_;                     \
      fail(__FILE__, __LINE__, os_.str());                                               \
    }                                                                                    \
  } while (0)

#define CHECK_STR_EQ(a, b)                                                           \
  do {                                                                               \
    std::string va_ = (a);                                                           \
    std::string vb_ = (b);                                                           \
    if (va_ != vb_) fail(__FILE__, __LINE__, "CHECK_STR_EQ: \"" + va_ + "\" != \"" + vb_ + "\""); \
  } while (0)

// Runs stmt, which must throw exactly type T (or a type derived from it);
// binds the exception to `e` for the checks in `then`.
#define CHECK_THROWS_AS(T, stmt, then)                                                   \
  do {                                                                                   \
    bool thrown_ = false;                                                                \
    try {                                                                                \
      stmt;                                                                              \
    } catch (const T& e) {                                                               \
      thrown_ = true;                                                                    \
      then;                                                                              \
    } catch (const test_failure&) {                                                      \
      throw;                                                                             \
    } catch (const std::exception& other_) {                                             \
      fail(__FILE__, __LINE__, std::string("expected " #T ", got another exception: ") + other_.what()); \
    }                                                                                    \
    if (!thrown_) fail(__FILE__, __LINE__, "expected " #T " from: " #stmt);              \
  } while (0)

#define SKIP(why) throw test_skipped{why}

// REQUIRE_DEVICES(n): skip without n devices; where RMMGO_TEST_MIN_DEVICES
// says the machine has them (make test on the simulated device, the GPU
// bundle on two GPUs), fewer fails the test instead.
#define REQUIRE_DEVICES(n)                                                                       \
  do {                                                                                           \
    int have_ = rmmgo::get_num_cuda_devices();                                                   \
    const char* min_ = std::getenv("RMMGO_TEST_MIN_DEVICES");                                    \
    if (have_ < (n) && min_ != nullptr && std::atoi(min_) >= (n))                                \
      fail(__FILE__, __LINE__, "needs " #n " devices: RMMGO_TEST_MIN_DEVICES=" + std::string(min_) + \
                                   ", but the library sees " + std::to_string(have_));          \
    if (have_ < (n)) SKIP("needs " #n " devices");                                               \
  } while (0)

// ---------------------------------------------------------------- helpers

namespace mr = rmmgo::mr;
using rmmgo::stream_ref;

bool aligned_to(const void* p, std::size_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

// Whether a handle no longer names a live resource (every reference was given back).
bool stale(rmm_resource_t h) {
  rmm_resource_kind k{};
  return rmm_resource_kind_of(h, &k) == RMM_ERROR_INVALID_HANDLE;
}

std::vector<unsigned char> to_host(const void* device_ptr, std::size_t n, stream_ref s) {
  std::vector<unsigned char> out(n);
  if (n > 0) {
    CHECK_EQ(rmm_memcpy(out.data(), device_ptr, n, s.get()), RMM_SUCCESS);
    CHECK_EQ(rmm_stream_synchronize(s.get()), RMM_SUCCESS);
  }
  return out;
}

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed) & 0xff);
  return v;
}

// Captures what reaches the error handler.
struct captured_errors {
  static inline std::atomic<int> count{0};
  static inline rmm_status last_status = RMM_SUCCESS;
  static inline std::string last_operation;
  static inline std::string last_message;
  static void handler(const char* operation, rmm_status status, const char* message) noexcept {
    count.fetch_add(1);
    last_status = status;
    last_operation = operation;
    last_message = message;
  }
};

// Installs captured_errors::handler for a scope.
struct capture_errors_scope {
  rmmgo::error_handler previous;
  capture_errors_scope() : previous(rmmgo::set_error_handler(&captured_errors::handler)) {
    captured_errors::count = 0;
    captured_errors::last_status = RMM_SUCCESS;
  }
  ~capture_errors_scope() { rmmgo::set_error_handler(previous); }
};

// Makes a device current for a scope.
struct device_scope {
  int previous;
  explicit device_scope(int d) : previous(rmmgo::get_current_cuda_device().value()) {
    rmmgo::set_current_cuda_device(rmmgo::cuda_device_id{d});
  }
  ~device_scope() { rmm_set_device(previous); }
};

// The allocation checks every class must pass.
template <class R>
void exercise(R& r, const char* expected_name) {
  static_assert(std::is_base_of_v<mr::device_memory_resource, R>);
  static_assert(mr::has_property_v<R, mr::device_accessible>);
  static_assert(std::is_nothrow_move_constructible_v<R> && std::is_copy_constructible_v<R>);
  static_assert(noexcept(r.deallocate(rmmgo::cuda_stream_default, nullptr, 0)));
  static_assert(noexcept(r.deallocate_sync(nullptr, 0)));
  static_assert(std::is_same_v<decltype(r.allocate(rmmgo::cuda_stream_default, 1)), void*>);

  CHECK_STR_EQ(r.name(), expected_name);
  CHECK_EQ(r.kind(), R::resource_kind);
  CHECK_EQ(r.device().value(), rmmgo::get_current_cuda_device().value());
  CHECK_EQ(r.has_property(RMM_PROPERTY_DEVICE_ACCESSIBLE), true);
  CHECK_EQ(r.has_property(RMM_PROPERTY_HOST_ACCESSIBLE), (mr::has_property_v<R, mr::host_accessible>));

  rmmgo::cuda_stream s;
  for (std::size_t bytes : {std::size_t{1}, std::size_t{1000}, std::size_t{4096}, std::size_t{65536}}) {
    void* p = r.allocate(s, bytes);
    CHECK(p != nullptr);
    CHECK(aligned_to(p, 256));
    auto want = pattern(bytes, 7);
    CHECK_EQ(rmm_memcpy(p, want.data(), bytes, s.value()), RMM_SUCCESS);
    CHECK(to_host(p, bytes, s) == want);
    r.deallocate(s, p, bytes);
  }
  void* q = r.allocate_sync(5000, 256);
  CHECK(q != nullptr);
  CHECK(aligned_to(q, 256));
  r.deallocate_sync(q, 5000, 256);
  CHECK(r.allocate(s, 0) == nullptr);
  r.deallocate(s, nullptr, 0);
  s.synchronize();

  // Through the untyped handle, as an upstream or a per-device slot sees it.
  mr::device_memory_resource any = r;
  CHECK(any == r);
  void* p = any.allocate(rmmgo::cuda_stream_default, 300);
  r.deallocate(rmmgo::cuda_stream_default, p, 300);
}

// Makes a resource the device may refuse; skips the test if it does.
template <class R, class... A>
R make_or_skip(const char* what, A&&... args) {
  try {
    return R(std::forward<A>(args)...);
  } catch (const rmmgo::logic_error& e) {
    if (e.status() == RMM_ERROR_NOT_SUPPORTED) SKIP(std::string(what) + ": " + e.what());
    throw;
  }
}

// Callback resource functions: host memory, counted.
struct callback_state {
  int allocations = 0;
  int deallocations = 0;
  int device_at_deallocation = -1;  // the device current when the last free came
};
void* host_allocate(std::size_t bytes, rmm_stream_t, void* arg) {
  static_cast<callback_state*>(arg)->allocations++;
  return std::aligned_alloc(256, (bytes + 255) / 256 * 256);
}
void host_deallocate(void* p, std::size_t, rmm_stream_t, void* arg) {
  auto* st = static_cast<callback_state*>(arg);
  st->deallocations++;
  rmm_get_device(&st->device_at_deallocation);
  std::free(p);
}

std::string temp_path(const char* stem) {
  const char* dir = std::getenv("TMPDIR");
  std::string d = dir != nullptr && dir[0] != '\0' ? dir : "/tmp";
  return d + "/" + stem + "." + std::to_string(::getpid()) + ".csv";
}

// ------------------------------------------------------- every class works

TEST(backend_and_devices) {
  const std::string name = rmmgo::backend_name();
  CHECK(name == "simulated" || name == "cuda");
  CHECK(rmmgo::get_num_cuda_devices() >= 1);
  auto [free_bytes, total_bytes] = rmmgo::available_device_memory();
  CHECK(total_bytes > 0);
  CHECK(free_bytes <= total_bytes);
  CHECK_STR_EQ(rmm_version(), RMMGO_VERSION_STRING);
}

TEST(stream_flags) {
  rmmgo::cuda_stream blocking;  // RMM's default: synchronizes with the legacy default stream
  rmmgo::cuda_stream free_running{rmmgo::cuda_stream::flags::non_blocking};
  CHECK(blocking.value() != nullptr && free_running.value() != nullptr);
  CHECK(blocking.value() != free_running.value());
  blocking.synchronize();
  free_running.synchronize();
  rmm_stream_t s = nullptr;
  CHECK_EQ(rmm_stream_create_with_flags(&s, 6u), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(s == nullptr);
}

TEST(prefetch_managed_memory) {
  mr::managed_memory_resource m;
  void* p = m.allocate_sync(1 << 20);
  rmmgo::prefetch(p, 1 << 20, rmmgo::get_current_cuda_device(), rmmgo::cuda_stream_default);
  rmmgo::prefetch(p, 1 << 20, rmmgo::cuda_device_id{RMM_PREFETCH_HOST}, rmmgo::cuda_stream_default);
  bool threw = false;
  try {
    rmmgo::prefetch(p, 1 << 20, rmmgo::cuda_device_id{9999}, rmmgo::cuda_stream_default);
  } catch (rmmgo::logic_error const& e) {
    threw = std::string(e.what()).find("device 9999") != std::string::npos;
  }
  CHECK(threw);
  rmmgo::synchronize(rmmgo::cuda_stream_default);
  m.deallocate_sync(p, 1 << 20);
}

TEST(cuda_memory_resource_allocates) {
  mr::cuda_memory_resource r;
  exercise(r, "cuda_memory_resource");
}

TEST(managed_memory_resource_allocates) {
  mr::managed_memory_resource r;
  exercise(r, "managed_memory_resource");
}

TEST(pinned_host_memory_resource_allocates) {
  mr::pinned_host_memory_resource r;
  exercise(r, "pinned_host_memory_resource");
  // Host accessible: the host writes it directly.
  void* p = r.allocate_sync(1024);
  std::memset(p, 0x5a, 1024);
  CHECK_EQ(static_cast<unsigned char*>(p)[1023], 0x5a);
  r.deallocate_sync(p, 1024);
}

TEST(system_memory_resource_allocates) {
  auto r = make_or_skip<mr::system_memory_resource>("no pageable memory access (RMMGO_SIM_PAGEABLE=1)");
  exercise(r, "system_memory_resource");
}

TEST(sam_headroom_memory_resource_allocates) {
  auto r = make_or_skip<mr::sam_headroom_memory_resource>("no pageable memory access", std::size_t{1} << 20);
  exercise(r, "sam_headroom_memory_resource");
}

TEST(cuda_async_memory_resource_allocates) {
  mr::cuda_async_memory_resource r;
  exercise(r, "cuda_async_memory_resource");
  CHECK(r.pool_handle() != nullptr);
  mr::cuda_async_memory_resource primed{std::size_t{1} << 20, std::size_t{0}};
  exercise(primed, "cuda_async_memory_resource");
  CHECK(primed != r);
}

TEST(cuda_async_view_memory_resource_allocates) {
  mr::cuda_async_memory_resource owner;
  mr::cuda_async_view_memory_resource r{owner.pool_handle()};
  exercise(r, "cuda_async_view_memory_resource");
  CHECK(r.pool_handle() == owner.pool_handle());
}

TEST(cuda_async_managed_memory_resource_allocates) {
  auto r = make_or_skip<mr::cuda_async_managed_memory_resource>("no managed memory pools");
  exercise(r, "cuda_async_managed_memory_resource");
}

TEST(callback_memory_resource_allocates) {
  callback_state st;
  {
    mr::callback_memory_resource r{&host_allocate, &host_deallocate, &st, &st};
    void* p = r.allocate(rmmgo::cuda_stream_default, 1000);
    CHECK(p != nullptr);
    std::memset(p, 1, 1000);
    r.deallocate(rmmgo::cuda_stream_default, p, 1000);
    CHECK_STR_EQ(r.name(), "callback_memory_resource");
  }
  CHECK_EQ(st.allocations, 1);
  CHECK_EQ(st.deallocations, 1);
}

TEST(pool_memory_resource_allocates) {
  mr::cuda_memory_resource cuda;
  mr::pool_memory_resource pool{cuda, std::size_t{4} << 20, std::size_t{64} << 20};
  static_assert(std::is_same_v<decltype(pool), mr::pool_memory_resource<mr::cuda_memory_resource>>);
  exercise(pool, "pool_memory_resource");
  CHECK(pool.pool_size() >= (std::size_t{4} << 20));
  CHECK_EQ(pool.used_bytes(), std::size_t{0});
  void* p = pool.allocate(rmmgo::cuda_stream_default, 1000);
  CHECK(pool.used_bytes() >= 1000);
  pool.deallocate(rmmgo::cuda_stream_default, p, 1000);
  pool.release_unused();
}

TEST(expandable_memory_resource_allocates) {
  mr::expandable_memory_resource e{std::size_t{64} << 20};
  exercise(e, "expandable_memory_resource");
  CHECK_EQ(e.used_bytes(), std::size_t{0});
  void* p = e.allocate(rmmgo::cuda_stream_default, std::size_t{3} << 20);
  CHECK(e.used_bytes() == (std::size_t{3} << 20));
  CHECK(e.pool_size() >= (std::size_t{3} << 20));
  e.deallocate(rmmgo::cuda_stream_default, p, std::size_t{3} << 20);
  e.release_unused();
  CHECK_EQ(e.pool_size(), std::size_t{0});
  bool threw = false;
  try {
    mr::expandable_memory_resource bad{std::size_t{1000}};
  } catch (const rmmgo::logic_error&) {
    threw = true;
  }
  CHECK(threw);
}

TEST(arena_memory_resource_allocates) {
  mr::cuda_memory_resource cuda;
  mr::arena_memory_resource arena{cuda, std::size_t{16} << 20};
  exercise(arena, "arena_memory_resource");
}

TEST(fixed_size_memory_resource_allocates) {
  mr::cuda_memory_resource cuda;
  mr::fixed_size_memory_resource fixed{cuda, std::size_t{65536}, 8};
  exercise(fixed, "fixed_size_memory_resource");
  CHECK_EQ(fixed.get_block_size(), std::size_t{65536});
  CHECK_THROWS_AS(rmmgo::out_of_memory, (void)fixed.allocate(rmmgo::cuda_stream_default, 65537),
                  CHECK_EQ(e.status(), RMM_ERROR_OUT_OF_MEMORY));
}

TEST(binning_memory_resource_allocates) {
  mr::cuda_memory_resource cuda;
  mr::binning_memory_resource binning{cuda, std::int8_t{8}, std::int8_t{14}};
  exercise(binning, "binning_memory_resource");
  mr::binning_memory_resource empty{cuda};
  empty.add_bin(1024);
  empty.add_bin(std::size_t{1} << 20, mr::fixed_size_memory_resource{cuda, std::size_t{1} << 20, 2});
  exercise(empty, "binning_memory_resource");
  void* big = empty.allocate(rmmgo::cuda_stream_default, std::size_t{3} << 20);  // past every bin: upstream
  empty.deallocate(rmmgo::cuda_stream_default, big, std::size_t{3} << 20);
}

TEST(aligned_resource_adaptor_allocates) {
  mr::cuda_memory_resource cuda;
  mr::aligned_resource_adaptor aligned{cuda, 4096};
  exercise(aligned, "aligned_resource_adaptor");
  for (std::size_t bytes : {std::size_t{1}, std::size_t{10000}, std::size_t{70000}}) {
    void* p = aligned.allocate(rmmgo::cuda_stream_default, bytes);
    CHECK(aligned_to(p, 4096));
    aligned.deallocate(rmmgo::cuda_stream_default, p, bytes);
  }
}

int count_and_give_up(std::size_t, void* arg) {
  auto* n = static_cast<int*>(arg);
  ++*n;
  return *n < 3 ? 1 : 0;  // retry twice, then give up
}

TEST(failure_callback_resource_adaptor_allocates) {
  mr::cuda_memory_resource cuda;
  int calls = 0;
  mr::failure_callback_resource_adaptor fc{cuda, &count_and_give_up, &calls};
  exercise(fc, "failure_callback_resource_adaptor");
  CHECK_EQ(calls, 0);

  mr::limiting_resource_adaptor limited{cuda, std::size_t{1} << 20};
  mr::failure_callback_resource_adaptor over_limit{limited, &count_and_give_up, &calls};
  CHECK_THROWS_AS(rmmgo::out_of_memory, (void)over_limit.allocate(rmmgo::cuda_stream_default, std::size_t{2} << 20),
                  CHECK_EQ(e.status(), RMM_ERROR_OUT_OF_MEMORY));
  CHECK_EQ(calls, 3);
}

TEST(limiting_resource_adaptor_allocates) {
  mr::cuda_memory_resource cuda;
  mr::limiting_resource_adaptor limited{cuda, std::size_t{8} << 20};
  exercise(limited, "limiting_resource_adaptor");
  CHECK_EQ(limited.get_allocation_limit(), std::size_t{8} << 20);
  CHECK_EQ(limited.get_allocated_bytes(), std::size_t{0});
  void* p = limited.allocate(rmmgo::cuda_stream_default, 1000);
  CHECK_EQ(limited.get_allocated_bytes(), std::size_t{1024});
  CHECK_THROWS_AS(rmmgo::out_of_memory, (void)limited.allocate(rmmgo::cuda_stream_default, std::size_t{8} << 20),
                  CHECK(std::string(e.what()).rfind("std::bad_alloc: out_of_memory: ", 0) == 0));
  limited.deallocate(rmmgo::cuda_stream_default, p, 1000);
  CHECK_EQ(limited.get_allocated_bytes(), std::size_t{0});
}

TEST(logging_resource_adaptor_allocates) {
  mr::cuda_memory_resource cuda;
  const std::string path = temp_path("rmmgo_api_test_log");
  std::string written;
  {
    mr::logging_resource_adaptor logged{cuda, path};
    exercise(logged, "logging_resource_adaptor");
    logged.flush();
    written = logged.file_name();
    CHECK(!written.empty());
  }
  std::ifstream in(written);
  CHECK(in.good());
  std::string header;
  std::getline(in, header);
  CHECK_STR_EQ(header, mr::logging_resource_adaptor<>::header());
  int allocs = 0;
  int frees = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find(",(nil),") != std::string::npos) continue;  // zero-byte requests, logged as RMM does
    if (line.find(",allocate,") != std::string::npos) ++allocs;
    if (line.find(",free,") != std::string::npos) ++frees;
  }
  CHECK(allocs >= 6);
  CHECK_EQ(allocs, frees);
  std::remove(written.c_str());
}

TEST(prefetch_resource_adaptor_allocates) {
  mr::managed_memory_resource managed;
  mr::prefetch_resource_adaptor prefetch{managed};
  static_assert(mr::has_property_v<decltype(prefetch), mr::host_accessible>);
  exercise(prefetch, "prefetch_resource_adaptor");
}

TEST(statistics_resource_adaptor_allocates) {
  mr::cuda_memory_resource cuda;
  mr::statistics_resource_adaptor stats{cuda};
  exercise(stats, "statistics_resource_adaptor");
  CHECK_EQ(stats.get_bytes_counter().value, 0);
  CHECK(stats.get_allocations_counter().total >= 6);
}

TEST(thread_safe_resource_adaptor_allocates) {
  mr::cuda_memory_resource cuda;
  mr::thread_safe_resource_adaptor safe{cuda};
  exercise(safe, "thread_safe_resource_adaptor");
}

TEST(tracking_resource_adaptor_allocates) {
  mr::cuda_memory_resource cuda;
  mr::tracking_resource_adaptor tracking{cuda};
  exercise(tracking, "tracking_resource_adaptor");
  std::vector<void*> ps;
  for (int i = 0; i < 3; ++i) ps.push_back(tracking.allocate(rmmgo::cuda_stream_default, 1000));
  CHECK_EQ(tracking.get_outstanding_allocation_count(), std::size_t{3});
  CHECK_EQ(tracking.get_allocated_bytes(), std::size_t{3000});
  CHECK(tracking.get_outstanding_allocations_str().find("1000") != std::string::npos);
  for (void* p : ps) tracking.deallocate(rmmgo::cuda_stream_default, p, 1000);
  CHECK_EQ(tracking.get_outstanding_allocation_count(), std::size_t{0});
}

// ------------------------------------------------------- handle semantics

TEST(copy_takes_a_reference_and_move_steals_it) {
  rmm_resource_t h = nullptr;
  {
    mr::cuda_memory_resource a;
    h = a.handle();
    mr::cuda_memory_resource b = a;  // copy: a second reference
    CHECK(b.handle() == h);
    mr::cuda_memory_resource c = std::move(b);  // move: the same reference
    CHECK(!b);
    CHECK(b.handle() == nullptr);
    CHECK(c.handle() == h);
    // a and c hold one reference each: giving a's back leaves c's.
    CHECK_EQ(rmm_resource_release(a.detach()), RMM_SUCCESS);
    CHECK(!stale(h));
    void* p = c.allocate(rmmgo::cuda_stream_default, 100);
    c.deallocate(rmmgo::cuda_stream_default, p, 100);
  }
  CHECK(stale(h));  // c's destructor gave back the last one
}

TEST(assignment_releases_the_old_resource) {
  mr::cuda_memory_resource cuda;
  mr::device_memory_resource x = cuda;
  mr::device_memory_resource y = mr::pool_memory_resource{cuda, 0};
  rmm_resource_t pool_handle = y.handle();
  CHECK(!stale(pool_handle));
  y = x;  // copy-assign: the pool's only reference goes
  CHECK(stale(pool_handle));
  CHECK(y.handle() == cuda.handle());
  y = y;  // self-assignment keeps it
  CHECK(!stale(cuda.handle()));
  mr::device_memory_resource z = mr::managed_memory_resource{};
  rmm_resource_t managed_handle = z.handle();
  z = std::move(y);  // move-assign: managed released, y emptied
  CHECK(stale(managed_handle));
  CHECK(!y);
  CHECK(z.handle() == cuda.handle());
  // Only cuda, x and z hold the cuda resource now: three references.
  rmm_resource_t h = cuda.handle();
  CHECK_EQ(rmm_resource_release(x.detach()), RMM_SUCCESS);
  CHECK_EQ(rmm_resource_release(z.detach()), RMM_SUCCESS);
  CHECK(!stale(h));
  CHECK_EQ(rmm_resource_release(cuda.detach()), RMM_SUCCESS);
  CHECK(stale(h));
}

TEST(retain_and_adopt_raw_handles) {
  rmm_resource_t raw = nullptr;
  CHECK_EQ(rmm_resource_create(RMM_RESOURCE_CUDA, nullptr, &raw), RMM_SUCCESS);
  {
    mr::device_memory_resource retained{mr::retain_handle, raw};  // +1
    mr::cuda_memory_resource adopted{mr::adopt_handle, raw};        // takes ours
    CHECK(retained == adopted);
  }
  CHECK(stale(raw));

  // Adopting a handle of another kind throws, and gives the handle back.
  CHECK_EQ(rmm_resource_create(RMM_RESOURCE_CUDA, nullptr, &raw), RMM_SUCCESS);
  CHECK_THROWS_AS(rmmgo::logic_error, (mr::pool_memory_resource<>{mr::adopt_handle, raw}),
                  CHECK(std::string(e.what()).find("pool_memory_resource") != std::string::npos));
  CHECK(stale(raw));

  // A typed upstream is checked too.
  mr::cuda_memory_resource cuda;
  mr::pool_memory_resource<> pool{cuda, 0};
  rmm_resource_t ph = pool.handle();
  CHECK_EQ(rmm_resource_retain(ph), RMM_SUCCESS);
  CHECK_THROWS_AS(rmmgo::logic_error, (mr::pool_memory_resource<mr::managed_memory_resource>{mr::adopt_handle, ph}),
                  (void)e);
  CHECK_EQ(rmm_resource_retain(ph), RMM_SUCCESS);
  mr::pool_memory_resource<mr::cuda_memory_resource> typed{mr::adopt_handle, ph};
  CHECK(typed == pool);
}

TEST(adaptor_keeps_its_upstream_alive) {
  rmm_resource_t cuda_handle = nullptr;
  std::optional<mr::statistics_resource_adaptor<mr::pool_memory_resource<mr::cuda_memory_resource>>> stats;
  {
    mr::cuda_memory_resource cuda;
    cuda_handle = cuda.handle();
    mr::pool_memory_resource pool{cuda, std::size_t{1} << 20};
    stats.emplace(pool);
  }  // the cuda and pool objects are gone; the adaptor still holds them
  CHECK(!stale(cuda_handle));
  void* p = stats->allocate(rmmgo::cuda_stream_default, 1000);
  CHECK(p != nullptr);
  stats->deallocate(rmmgo::cuda_stream_default, p, 1000);

  auto pool = stats->get_upstream_resource();
  static_assert(std::is_same_v<decltype(pool), mr::pool_memory_resource<mr::cuda_memory_resource>>);
  CHECK_EQ(pool.kind(), RMM_RESOURCE_POOL);
  auto cuda = pool.get_upstream_resource();
  CHECK(cuda.handle() == cuda_handle);
  stats.reset();
  CHECK(!stale(cuda_handle));  // pool and cuda still referenced here
  rmm_resource_t pool_handle = pool.handle();
  { auto gone = std::move(pool); }
  CHECK(stale(pool_handle));
  CHECK(!stale(cuda_handle));
  { auto gone = std::move(cuda); }
  CHECK(stale(cuda_handle));
}

// ------------------------------------------------------------- exceptions

TEST(exceptions_have_the_right_type_and_message) {
  mr::cuda_memory_resource cuda;
  rmmgo::stream_ref s = rmmgo::cuda_stream_default;

  // Running out of device memory: out_of_memory, a std::bad_alloc.
  auto [free_bytes, total_bytes] = rmmgo::available_device_memory();
  (void)free_bytes;
  CHECK_THROWS_AS(rmmgo::out_of_memory, (void)cuda.allocate(s, total_bytes * 2), {
    CHECK_EQ(e.status(), RMM_ERROR_OUT_OF_MEMORY);
    const std::string what = e.what();
    CHECK(what.rfind("std::bad_alloc: out_of_memory: ", 0) == 0);
    CHECK(what.size() > std::strlen("std::bad_alloc: out_of_memory: "));
  });
  CHECK_THROWS_AS(std::bad_alloc, (void)cuda.allocate(s, total_bytes * 2), (void)e);

  // A bad alignment: bad_alloc, not out_of_memory.
  CHECK_THROWS_AS(rmmgo::bad_alloc, (void)cuda.allocate(s, 100, 3), {
    CHECK(dynamic_cast<const rmmgo::out_of_memory*>(&e) == nullptr);
    CHECK_EQ(e.status(), RMM_ERROR_BAD_ALIGNMENT);
    CHECK(std::string(e.what()).rfind("std::bad_alloc: ", 0) == 0);
  });

  // Misuse: logic_error carrying the library's message and status.
  mr::device_memory_resource empty;
  CHECK_THROWS_AS(rmmgo::logic_error, (void)empty.allocate(s, 100), CHECK_EQ(e.status(), RMM_ERROR_INVALID_HANDLE));
  CHECK_THROWS_AS(rmmgo::logic_error, mr::cuda_async_view_memory_resource{nullptr},
                  CHECK(std::string(e.what()).size() > 0));
  CHECK_THROWS_AS(rmmgo::logic_error, (mr::pool_memory_resource{cuda, 1000}), CHECK(std::string(e.what()).size() > 0));
  CHECK_THROWS_AS(std::logic_error, (mr::pool_memory_resource{cuda, 2048, std::size_t{1024}}), (void)e);

  // Popping the last statistics level: out_of_range.
  mr::statistics_resource_adaptor stats{cuda};
  CHECK_THROWS_AS(rmmgo::out_of_range, stats.pop_counters(), CHECK_EQ(e.status(), RMM_ERROR_OUT_OF_RANGE));

  // No log file name and no RMM_LOG_FILE: logic_error.
  ::unsetenv("RMM_LOG_FILE");
  CHECK_THROWS_AS(rmmgo::logic_error, mr::logging_resource_adaptor{cuda},
                  CHECK(std::string(e.what()).find("RMM_LOG_FILE") != std::string::npos));
}

TEST(wrong_device_is_a_logic_error) {
  REQUIRE_DEVICES(2);
  device_scope d0{0};
  mr::cuda_memory_resource on0;
  rmmgo::set_current_cuda_device(rmmgo::cuda_device_id{1});
  CHECK_THROWS_AS(rmmgo::logic_error, (void)on0.allocate(rmmgo::cuda_stream_default, 100),
                  CHECK_EQ(e.status(), RMM_ERROR_WRONG_DEVICE));
}

TEST(deallocate_failures_go_to_the_error_handler) {
  mr::cuda_memory_resource cuda;
  mr::pool_memory_resource pool{cuda, std::size_t{1} << 20};
  void* p = pool.allocate(rmmgo::cuda_stream_default, 512);
  {
    capture_errors_scope capture;
    void* bogus = static_cast<char*>(p) + 256;  // inside the pool, never handed out
    pool.deallocate(rmmgo::cuda_stream_default, bogus, 256);  // noexcept: reported, not thrown
    CHECK_EQ(captured_errors::count.load(), 1);
    CHECK_EQ(captured_errors::last_status, RMM_ERROR_INVALID_POINTER);
    CHECK(captured_errors::last_operation.find("deallocate") != std::string::npos);
    CHECK(!captured_errors::last_message.empty());
    pool.deallocate_sync(bogus, 256);
    CHECK_EQ(captured_errors::count.load(), 2);
  }
  pool.deallocate(rmmgo::cuda_stream_default, p, 512);
  CHECK_EQ(pool.used_bytes(), std::size_t{0});
}

// ------------------------------------------------ equality and properties

TEST(equality) {
  mr::cuda_memory_resource a;
  mr::cuda_memory_resource b;
  CHECK(a == b);  // stateless: memory from one may go back to the other
  CHECK(!(a != b));
  mr::pool_memory_resource p1{a, 0};
  mr::pool_memory_resource p2{a, 0};
  CHECK(p1 != p2);
  auto p1_copy = p1;
  CHECK(p1 == p1_copy);
  mr::device_memory_resource untyped = p1;
  CHECK(untyped == p1);
  CHECK(untyped != p2);
}

TEST(properties_follow_the_upstream) {
  using namespace rmmgo::mr;
  static_assert(!has_property_v<cuda_memory_resource, host_accessible>);
  static_assert(has_property_v<managed_memory_resource, host_accessible>);
  static_assert(has_property_v<pinned_host_memory_resource, host_accessible>);
  static_assert(has_property_v<system_memory_resource, host_accessible>);
  static_assert(has_property_v<sam_headroom_memory_resource, host_accessible>);
  static_assert(!has_property_v<cuda_async_memory_resource, host_accessible>);
  static_assert(!has_property_v<cuda_async_view_memory_resource, host_accessible>);
  static_assert(has_property_v<cuda_async_managed_memory_resource, host_accessible>);
  static_assert(!has_property_v<callback_memory_resource, host_accessible>);
  static_assert(!has_property_v<device_memory_resource, host_accessible>);
  static_assert(has_property_v<device_memory_resource, device_accessible>);
  static_assert(!has_property_v<pool_memory_resource<>, host_accessible>);
  static_assert(!has_property_v<pool_memory_resource<cuda_memory_resource>, host_accessible>);
  static_assert(has_property_v<pool_memory_resource<managed_memory_resource>, host_accessible>);
  static_assert(has_property_v<arena_memory_resource<pinned_host_memory_resource>, host_accessible>);
  static_assert(has_property_v<statistics_resource_adaptor<pool_memory_resource<managed_memory_resource>>,
                               host_accessible>);
  static_assert(!has_property_v<statistics_resource_adaptor<pool_memory_resource<cuda_memory_resource>>,
                                host_accessible>);
  static_assert(has_property_v<tracking_resource_adaptor<system_memory_resource>, device_accessible>);

  managed_memory_resource managed;
  pool_memory_resource pool{managed, 0};
  statistics_resource_adaptor stats{pool};
  CHECK(stats.has_property(RMM_PROPERTY_HOST_ACCESSIBLE));
  void* p = stats.allocate_sync(64);
  static_cast<char*>(p)[63] = 'x';  // host accessible: the host may touch it
  stats.deallocate_sync(p, 64);
  cuda_memory_resource cuda;
  pool_memory_resource device_pool{cuda, 0};
  CHECK(!device_pool.has_property(RMM_PROPERTY_HOST_ACCESSIBLE));
}

// ---------------------------------------------------------------- buffers

TEST(device_buffer_basics) {
  mr::cuda_memory_resource cuda;
  mr::statistics_resource_adaptor stats{cuda};
  rmmgo::cuda_stream s;
  {
    rmmgo::device_buffer empty;
    CHECK(empty.is_empty());
    CHECK(empty.data() == nullptr);

    rmmgo::device_buffer b(1000, s, stats);
    CHECK_EQ(b.size(), std::size_t{1000});
    CHECK_EQ(b.capacity(), std::size_t{1000});
    CHECK(b.data() != nullptr);
    CHECK(b.stream() == s.view());
    CHECK(b.memory_resource() == stats);
    CHECK_EQ(stats.get_allocations_counter().value, 1);

    const auto src = pattern(1000, 3);
    rmmgo::device_buffer c(src.data(), src.size(), s, stats);
    CHECK(to_host(c.data(), c.size(), s) == src);

    rmmgo::device_buffer d(c, s, stats);  // deep copy
    CHECK(d.data() != c.data());
    CHECK(to_host(d.data(), d.size(), s) == src);

    d.resize(3000, s);  // grows, keeps the contents
    CHECK_EQ(d.size(), std::size_t{3000});
    CHECK(d.capacity() >= 3000);
    auto grown = to_host(d.data(), 1000, s);
    CHECK(grown == src);
    d.resize(10, s);  // shrinking changes the size only
    CHECK_EQ(d.size(), std::size_t{10});
    CHECK(d.capacity() >= 3000);
    d.shrink_to_fit(s);
    CHECK_EQ(d.capacity(), std::size_t{10});
    CHECK(to_host(d.data(), 10, s) == std::vector<unsigned char>(src.begin(), src.begin() + 10));
    d.reserve(5000, s);
    CHECK_EQ(d.size(), std::size_t{10});
    CHECK_EQ(d.capacity(), std::size_t{5000});

    rmmgo::device_buffer e = std::move(d);
    CHECK(d.data() == nullptr);
    CHECK_EQ(d.size(), std::size_t{0});
    CHECK_EQ(e.size(), std::size_t{10});
    b = std::move(e);  // frees b's old memory
    CHECK_EQ(b.size(), std::size_t{10});
    CHECK_EQ(stats.get_allocations_counter().value, 2);  // c and b

    rmmgo::device_buffer zero(0, s, stats);
    CHECK(zero.data() == nullptr);
    CHECK_EQ(stats.get_allocations_counter().value, 2);
  }
  s.synchronize();
  CHECK_EQ(stats.get_bytes_counter().value, 0);
  CHECK_EQ(stats.get_allocations_counter().value, 0);
}

TEST(device_buffer_keeps_its_resource_alive) {
  mr::cuda_memory_resource cuda;
  mr::statistics_resource_adaptor upstream{cuda};
  std::optional<rmmgo::device_buffer> buffer;
  rmm_resource_t pool_handle = nullptr;
  {
    mr::pool_memory_resource pool{upstream, std::size_t{1} << 20};
    pool_handle = pool.handle();
    buffer.emplace(4096, rmmgo::cuda_stream_default, pool);
  }  // the pool object is gone; the buffer still holds the pool
  CHECK(!stale(pool_handle));
  CHECK(upstream.get_bytes_counter().value >= (1 << 20));
  buffer.reset();  // frees into the pool, then the pool's last reference goes
  CHECK(stale(pool_handle));
  CHECK_EQ(upstream.get_bytes_counter().value, 0);  // the pool gave its memory back
}

TEST(device_buffer_frees_on_its_own_device) {
  REQUIRE_DEVICES(2);
  capture_errors_scope capture;
  device_scope d1{1};
  mr::cuda_memory_resource cuda1;  // a resource of device 1
  mr::statistics_resource_adaptor stats1{cuda1};
  std::optional<rmmgo::device_buffer> b;
  b.emplace(1000, rmmgo::cuda_stream_default, stats1);
  CHECK_EQ(b->device().value(), 1);
  rmmgo::set_current_cuda_device(rmmgo::cuda_device_id{0});
  b.reset();  // frees on device 1 although device 0 is current
  CHECK_EQ(captured_errors::count.load(), 0);
  CHECK_EQ(rmmgo::get_current_cuda_device().value(), 0);
  rmmgo::set_current_cuda_device(rmmgo::cuda_device_id{1});
  CHECK_EQ(stats1.get_bytes_counter().value, 0);

  // The free itself runs with device 1 current: a callback resource sees it.
  callback_state st;
  mr::callback_memory_resource seen{&host_allocate, &host_deallocate, &st, &st};
  b.emplace(1000, rmmgo::cuda_stream_default, seen);
  rmmgo::set_current_cuda_device(rmmgo::cuda_device_id{0});
  b.reset();
  CHECK_EQ(st.deallocations, 1);
  CHECK_EQ(st.device_at_deallocation, 1);
  CHECK_EQ(rmmgo::get_current_cuda_device().value(), 0);
  CHECK_EQ(captured_errors::count.load(), 0);
}

struct point {
  double x;
  std::int32_t id;
};

TEST(device_uvector_basics) {
  mr::cuda_memory_resource cuda;
  mr::statistics_resource_adaptor stats{cuda};
  rmmgo::cuda_stream s;
  {
    rmmgo::device_uvector<int> v(100, s, stats);
    CHECK_EQ(v.size(), std::size_t{100});
    CHECK(!v.is_empty());
    CHECK(v.end() - v.begin() == 100);
    std::vector<int> values(100);
    for (int i = 0; i < 100; ++i) values[static_cast<std::size_t>(i)] = i * 3;
    // set_element_async reads its value in stream order: the values must
    // live until the stream has done (a temporary does not compile).
    for (std::size_t i = 0; i < 100; ++i) v.set_element_async(i, values[i], s);
    s.synchronize();
    CHECK_EQ(v.element(42, s), 126);
    CHECK_EQ(v.front_element(s), 0);
    CHECK_EQ(v.back_element(s), 297);
    v.set_element(5, -7, s);
    CHECK_EQ(v.element(5, s), -7);
    v.set_element_to_zero_async(6, s);
    CHECK_EQ(v.element(6, s), 0);

    v.resize(200, s);
    CHECK_EQ(v.size(), std::size_t{200});
    CHECK_EQ(v.element(99, s), 297);
    CHECK_THROWS_AS(rmmgo::out_of_range, (void)v.element(200, s), CHECK(std::string(e.what()).find("200") != std::string::npos));
    CHECK_THROWS_AS(std::out_of_range, v.set_element(1000, 1, s), (void)e);

    rmmgo::device_uvector<int> copy(v, s, stats);
    CHECK_EQ(copy.element(42, s), 126);

    rmmgo::device_buffer storage = v.release();
    CHECK_EQ(storage.size(), 200 * sizeof(int));
    CHECK(v.is_empty());

    rmmgo::device_uvector<point> points(3, s, stats);
    points.set_element(2, point{2.5, 9}, s);
    point got = points.element(2, s);
    CHECK_EQ(got.x, 2.5);
    CHECK_EQ(got.id, 9);
    CHECK(points.memory_resource() == stats);
  }
  s.synchronize();
  CHECK_EQ(stats.get_bytes_counter().value, 0);
}

// ------------------------------------------------------------- per device

TEST(per_device_resources) {
  mr::reset_current_device_resource();
  auto initial = mr::get_current_device_resource();
  CHECK_EQ(initial.kind(), RMM_RESOURCE_CUDA);

  rmm_resource_t pool_handle = nullptr;
  {
    mr::cuda_memory_resource cuda;
    mr::pool_memory_resource pool{cuda, std::size_t{1} << 20};
    pool_handle = pool.handle();
    auto previous = mr::set_current_device_resource(pool);
    CHECK(previous == initial);
    CHECK(mr::get_current_device_resource() == pool);
    CHECK(mr::get_per_device_resource(rmmgo::get_current_cuda_device()) == pool);
  }  // the slot keeps the pool alive
  CHECK(!stale(pool_handle));
  {
    rmmgo::device_buffer b(100, rmmgo::cuda_stream_default);  // from the current resource
    CHECK(b.memory_resource().handle() == pool_handle);
  }
  auto previous = mr::reset_current_device_resource();
  CHECK(previous.handle() == pool_handle);
  { auto gone = std::move(previous); }
  CHECK(stale(pool_handle));
  CHECK_EQ(mr::get_current_device_resource().kind(), RMM_RESOURCE_CUDA);

  if (rmmgo::get_num_cuda_devices() >= 2) {
    const rmmgo::cuda_device_id one{1};
    std::optional<mr::managed_memory_resource> on1;
    {
      device_scope d1{1};
      on1.emplace();
    }
    auto prev1 = mr::set_per_device_resource(one, *on1);
    CHECK_EQ(prev1.kind(), RMM_RESOURCE_CUDA);
    CHECK(mr::get_per_device_resource_ref(one) == *on1);
    CHECK(mr::get_current_device_resource().kind() == RMM_RESOURCE_CUDA);  // device 0 unchanged
    auto back = mr::reset_per_device_resource(one);
    CHECK(back == *on1);
  }
}

// ---------------------------------------------------------------- threads

TEST(threads_share_one_resource) {
  mr::cuda_memory_resource cuda;
  mr::pool_memory_resource pool{cuda, std::size_t{8} << 20};
  const int device = rmmgo::get_current_cuda_device().value();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      try {
        rmmgo::set_current_cuda_device(rmmgo::cuda_device_id{device});
        rmmgo::cuda_stream s;
        std::mt19937 rng(t);
        std::vector<std::pair<void*, std::size_t>> live;
        for (int i = 0; i < 2000; ++i) {
          if (live.empty() || rng() % 100 < 60) {
            std::size_t bytes = 1 + rng() % 8192;
            live.emplace_back(pool.allocate(s, bytes), bytes);
          } else {
            std::size_t k = rng() % live.size();
            pool.deallocate(s, live[k].first, live[k].second);
            live[k] = live.back();
            live.pop_back();
          }
        }
        for (auto& [p, n] : live) pool.deallocate(s, p, n);
        s.synchronize();
      } catch (...) {
        failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK_EQ(failures.load(), 0);
  CHECK_EQ(pool.used_bytes(), std::size_t{0});
}

TEST(streams) {
  rmmgo::cuda_stream s;
  CHECK(s.value() != nullptr);
  CHECK(s.view().get() == s.value());
  rmmgo::stream_ref r = s;
  CHECK(r.get() == s.value());
  rmmgo::cuda_stream t = std::move(s);
  CHECK(s.value() == nullptr);
  CHECK(t.value() == r.get());
  rmmgo::synchronize(t);
  CHECK(rmmgo::cuda_stream_default.get() == nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : nullptr;
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  try {
    std::printf("rmmgo %s on the %s backend, %d device(s)\n", rmm_version(), rmmgo::backend_name().c_str(),
                rmmgo::get_num_cuda_devices());
  } catch (const std::exception& e) {
    std::printf("cannot open the backend: %s\n0 passed, 1 failed\n", e.what());
    return 1;
  }
  for (const auto& t : registry()) {
    if (filter != nullptr && std::strstr(t.name, filter) == nullptr) continue;
    try {
      rmm_set_device(0);
      t.fn();
      ++passed;
      std::printf("PASS %s\n", t.name);
    } catch (const test_skipped& s) {
      ++skipped;
      std::printf("SKIP %s: %s\n", t.name, s.reason.c_str());
    } catch (const test_failure& f) {
      ++failed;
      std::printf("FAIL %s: %s\n", t.name, f.message.c_str());
    } catch (const std::exception& e) {
      ++failed;
      std::printf("FAIL %s: unexpected exception: %s\n", t.name, e.what());
    }
    std::fflush(stdout);
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed == 0 ? 0 : 1;
}
