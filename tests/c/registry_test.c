/*
 * registry_test.c -- handles and their reference counts: adaptors keep their
 * upstream alive, per-device slots keep their resource alive, one resource
 * has one handle, and what C sets current is what every getter sees.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmmgo.h"
#include "test_util.h"

/* A callback resource over the cuda resource, counting its calls. */
struct counting {
  rmm_resource_t upstream;
  int allocs;
  int frees;
};

static void* counting_alloc(size_t bytes, rmm_stream_t stream, void* arg) {
  struct counting* c = (struct counting*)arg;
  void* p = NULL;
  if (rmm_allocate(c->upstream, stream, bytes, 256, &p) != RMM_SUCCESS) {
    return NULL;
  }
  c->allocs++;
  return p;
}

static void counting_free(void* ptr, size_t bytes, rmm_stream_t stream, void* arg) {
  struct counting* c = (struct counting*)arg;
  if (rmm_deallocate(c->upstream, stream, ptr, bytes, 256) == RMM_SUCCESS) {
    c->frees++;
  }
}

/* A failure callback that frees a held allocation to make room once. */
struct reserve {
  rmm_resource_t mr;
  void* held;
  size_t bytes;
  int calls;
};

static int free_reserve(size_t bytes, void* arg) {
  struct reserve* r = (struct reserve*)arg;
  (void)bytes;
  r->calls++;
  if (r->held == NULL) {
    return 0; /* nothing left to free: give up */
  }
  rmm_deallocate(r->mr, NULL, r->held, r->bytes, 256);
  r->held = NULL;
  return 1; /* try again */
}

/* A cuda resource every test may use, made by setup. */
static rmm_resource_t cuda;

static int is_live(rmm_resource_t mr) {
  rmm_resource_kind k;
  return rmm_resource_kind_of(mr, &k) == RMM_SUCCESS;
}

/* counting: retain twice, then three releases are fine, a fourth is not */
static void test_reference_counts(void) {
  rmm_resource_t mr = NULL;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr));
  EXPECT_OK(rmm_resource_retain(mr));
  EXPECT_OK(rmm_resource_retain(mr));
  EXPECT_OK(rmm_resource_release(mr));
  EXPECT_OK(rmm_resource_release(mr));
  EXPECT(is_live(mr));
  EXPECT_OK(rmm_resource_release(mr));
  EXPECT(!is_live(mr));
  EXPECT_STATUS(rmm_resource_release(mr), RMM_ERROR_INVALID_HANDLE);
}

/* an adaptor keeps its upstream alive after the caller lets go.
 * A statistics adaptor over a limiting adaptor: the limiting adaptor's
 * counter shows its memory is still in use through the adaptor. */
static void test_adaptor_keeps_upstream(void) {
  rmm_resource_t up = NULL;
  rmm_resource_t stats = NULL;
  rmm_resource_t got = NULL;
  rmm_resource_options o;
  rmm_resource_kind k1;
  void* p = NULL;
  size_t sz = 0;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.allocation_limit = (size_t)1 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_LIMITING, &o, &up));
  rmm_resource_options_init(&o);
  o.upstream = up;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  EXPECT_OK(rmm_resource_release(up)); /* the adaptor still holds it */
  EXPECT(is_live(up));
  EXPECT_OK(rmm_allocate(stats, NULL, 4096, 256, &p));
  EXPECT_OK(rmm_limiting_allocated_bytes(up, &sz));
  EXPECT(sz == 4096);
  EXPECT_OK(rmm_deallocate(stats, NULL, p, 4096, 256));
  /* rmm_resource_upstream gives the same handle: one resource, one handle */
  EXPECT_OK(rmm_resource_upstream(stats, &got));
  EXPECT(got == up);
  EXPECT_OK(rmm_resource_kind_of(got, &k1));
  EXPECT(k1 == RMM_RESOURCE_LIMITING);
  EXPECT_OK(rmm_resource_release(got));
  EXPECT_OK(rmm_resource_release(stats)); /* the last reference: both go */
  EXPECT(!is_live(stats));
  EXPECT(!is_live(up));
  EXPECT_STATUS(rmm_limiting_allocated_bytes(up, &sz), RMM_ERROR_INVALID_HANDLE);
}

/* a per-device slot keeps its resource alive */
static void test_per_device_slot_keeps_resource(void) {
  rmm_resource_t stats = NULL;
  rmm_resource_t got = NULL;
  rmm_resource_t got2 = NULL;
  rmm_resource_t prev = NULL;
  rmm_resource_options o;
  rmm_resource_kind k1;
  rmm_resource_kind k2;
  rmm_statistics st;
  void* p = NULL;
  int eq = 0;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  EXPECT_OK(rmm_set_current_device_resource(stats, &prev));
  EXPECT_OK(rmm_resource_kind_of(prev, &k1));
  EXPECT(k1 == RMM_RESOURCE_CUDA); /* the initial resource */
  EXPECT_OK(rmm_resource_release(stats)); /* the slot still holds it */
  EXPECT(is_live(stats));
  /* one registry: the getter returns the very handle that was set */
  EXPECT_OK(rmm_get_current_device_resource(&got));
  EXPECT(got == stats);
  EXPECT_OK(rmm_resource_is_equal(got, stats, &eq));
  EXPECT(eq);
  EXPECT_OK(rmm_resource_kind_of(got, &k2));
  EXPECT(k2 == RMM_RESOURCE_STATISTICS);
  EXPECT_OK(rmm_get_per_device_resource(0, &got2));
  EXPECT(got2 == stats);
  EXPECT_OK(rmm_allocate(got, NULL, 1000, 256, &p));
  st.struct_size = sizeof st;
  EXPECT_OK(rmm_statistics_get(got2, &st));
  EXPECT(st.bytes.value == 1000 && st.count.value == 1);
  EXPECT_OK(rmm_deallocate(got, NULL, p, 1000, 256));
  /* the framework allocators serve from the current resource */
  p = rmm_cupy_malloc(NULL, 512, 0);
  EXPECT(p != NULL);
  EXPECT_OK(rmm_statistics_get(stats, &st));
  EXPECT(st.bytes.value == 512);
  rmm_cupy_free(NULL, p, 0);
  p = rmm_torch_allocate(768, 0, NULL);
  EXPECT(p != NULL);
  EXPECT_OK(rmm_statistics_get(stats, &st));
  EXPECT(st.bytes.value == 768 && st.count.total == 3);
  rmm_torch_deallocate(p, 768, 0, NULL);
  EXPECT_OK(rmm_statistics_get(stats, &st));
  EXPECT(st.bytes.value == 0 && st.count.value == 0);
  EXPECT_OK(rmm_resource_release(got));
  EXPECT_OK(rmm_resource_release(got2));
  EXPECT(is_live(stats)); /* the slot's reference is left */
  /* resetting hands the resource back through previous, and the slot lets go */
  EXPECT_OK(rmm_reset_current_device_resource(&got));
  EXPECT(got == stats);
  EXPECT_OK(rmm_resource_release(got));
  EXPECT(!is_live(stats));
  EXPECT_OK(rmm_get_current_device_resource(&got));
  EXPECT_OK(rmm_resource_is_equal(got, prev, &eq));
  EXPECT(eq);
  EXPECT_OK(rmm_resource_kind_of(got, &k1));
  EXPECT(k1 == RMM_RESOURCE_CUDA);
  EXPECT(got == prev); /* the initial resource keeps its handle while held */
  EXPECT_OK(rmm_resource_release(got));
  EXPECT_OK(rmm_resource_release(prev));
}

/* setting twice: the slot releases the first when the second comes */
static void test_setting_twice(void) {
  rmm_resource_t stats = NULL;
  rmm_resource_t mr = NULL;
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_TRACKING, &o, &mr));
  EXPECT_OK(rmm_set_per_device_resource(0, stats, NULL));
  EXPECT_OK(rmm_resource_release(stats));
  EXPECT(is_live(stats));
  EXPECT_OK(rmm_set_per_device_resource(0, mr, NULL)); /* no previous asked: stats goes */
  EXPECT(!is_live(stats));
  EXPECT_OK(rmm_reset_per_device_resource(0, NULL));
  EXPECT_OK(rmm_resource_release(mr));
  EXPECT(!is_live(mr));
}

/* binning holds the bins it was given */
static void test_binning_holds_bins(void) {
  rmm_resource_t bin = NULL;
  rmm_resource_t binning = NULL;
  rmm_resource_options o;
  rmm_statistics st;
  void* p = NULL;
  binning = test_make(RMM_RESOURCE_BINNING, cuda);
  if (binning != NULL) {
    rmm_resource_options_init(&o);
    o.upstream = cuda;
    REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &bin));
    EXPECT_OK(rmm_binning_add_bin(binning, (size_t)1 << 20, bin));
    EXPECT_OK(rmm_resource_release(bin));
    EXPECT(is_live(bin));
    EXPECT_OK(rmm_allocate(binning, NULL, 300000, 256, &p)); /* above the 64 KiB bins: the 1 MiB bin */
    st.struct_size = sizeof st;
    EXPECT_OK(rmm_statistics_get(bin, &st));
    EXPECT(st.count.value == 1);
    EXPECT_OK(rmm_deallocate(binning, NULL, p, 300000, 256));
    EXPECT_STATUS(rmm_binning_add_bin(binning, 4096, binning), RMM_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(rmm_resource_release(binning));
    EXPECT(!is_live(bin));
  }
}

/* callbacks from C, with their arguments */
static void test_callbacks(void) {
  rmm_resource_t got = NULL;
  rmm_resource_t cb = NULL;
  rmm_resource_options o;
  struct counting counter;
  void* p = NULL;
  int i;
  memset(&counter, 0, sizeof counter);
  counter.upstream = cuda;
  rmm_resource_options_init(&o);
  o.allocate_callback = counting_alloc;
  o.deallocate_callback = counting_free;
  o.allocate_arg = &counter;
  o.deallocate_arg = &counter;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CALLBACK, &o, &cb));
  for (i = 0; i < 10; i++) {
    EXPECT_OK(rmm_allocate(cb, NULL, 256 * (size_t)(i + 1), 256, &p));
    EXPECT_OK(rmm_deallocate(cb, NULL, p, 256 * (size_t)(i + 1), 256));
  }
  EXPECT(counter.allocs == 10 && counter.frees == 10);
  EXPECT_STATUS(rmm_resource_upstream(cb, &got), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(rmm_resource_device(cb, &i));
  EXPECT(i == 0);
  EXPECT_OK(rmm_resource_release(cb));
}

/* a failure callback makes room and retries */
static void test_failure_callback(void) {
  rmm_resource_t fcb = NULL;
  rmm_resource_t lim = NULL;
  rmm_resource_options o;
  struct reserve reserve;
  void* p = NULL;
  void* q = NULL;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.allocation_limit = 64 * 1024;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_LIMITING, &o, &lim));
  memset(&reserve, 0, sizeof reserve);
  reserve.mr = lim;
  reserve.bytes = 48 * 1024;
  REQUIRE_OK(rmm_allocate(lim, NULL, reserve.bytes, 256, &reserve.held));
  rmm_resource_options_init(&o);
  o.upstream = lim;
  o.failure_callback = free_reserve;
  o.failure_arg = &reserve;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_FAILURE_CALLBACK, &o, &fcb));
  EXPECT_OK(rmm_allocate(fcb, NULL, 32 * 1024, 256, &q)); /* fails once, frees the reserve, succeeds */
  EXPECT(reserve.calls == 1 && reserve.held == NULL);
  EXPECT_STATUS(rmm_allocate(fcb, NULL, 60 * 1024, 256, &p), RMM_ERROR_OUT_OF_MEMORY); /* gives up */
  EXPECT(reserve.calls == 2);
  EXPECT_OK(rmm_deallocate(fcb, NULL, q, 32 * 1024, 256));
  EXPECT_OK(rmm_resource_release(lim));
  EXPECT_OK(rmm_resource_release(fcb));
  EXPECT(!is_live(lim));
}

/* queries */
static void test_queries(void) {
  rmm_resource_t mr = NULL;
  int eq = 0;
  const char* name = NULL;
  EXPECT_OK(rmm_resource_name(cuda, &name));
  EXPECT(strcmp(name, "cuda_memory_resource") == 0);
  EXPECT_OK(rmm_resource_has_property(cuda, RMM_PROPERTY_DEVICE_ACCESSIBLE, &eq));
  EXPECT(eq == 1);
  EXPECT_OK(rmm_resource_has_property(cuda, RMM_PROPERTY_HOST_ACCESSIBLE, &eq));
  EXPECT(eq == 0);
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_PINNED_HOST, NULL, &mr));
  EXPECT_OK(rmm_resource_has_property(mr, RMM_PROPERTY_HOST_ACCESSIBLE, &eq));
  EXPECT(eq == 1);
  EXPECT_OK(rmm_resource_is_equal(mr, cuda, &eq));
  EXPECT(eq == 0);
  EXPECT_OK(rmm_resource_release(mr));
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr));
  EXPECT(mr != cuda);                       /* two resources, two handles */
  EXPECT_OK(rmm_resource_is_equal(mr, cuda, &eq));
  EXPECT(eq == 1);                          /* cuda resources are interchangeable */
  EXPECT_OK(rmm_resource_release(mr));
}

/* logging: a file name, flushed and closed on the last release */
static void test_logging(void) {
  rmm_resource_t mr = NULL;
  rmm_resource_options o;
  void* p = NULL;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.log_file = "registry_test_log.csv";
  if (rmm_resource_create(RMM_RESOURCE_LOGGING, &o, &mr) == RMM_SUCCESS) {
    char name[8];
    size_t needed = 0;
    EXPECT_OK(rmm_allocate(mr, NULL, 512, 256, &p));
    EXPECT_OK(rmm_deallocate(mr, NULL, p, 512, 256));
    EXPECT_OK(rmm_logging_flush(mr));
    EXPECT_OK(rmm_logging_file_name(mr, name, sizeof name, &needed));
    EXPECT(needed > sizeof name && strlen(name) == sizeof name - 1); /* truncated, NUL-terminated */
    EXPECT_OK(rmm_resource_release(mr));
    {
      FILE* f = fopen("registry_test_log.csv", "r");
      char line[256];
      int rows = 0;
      EXPECT(f != NULL);
      if (f != NULL) {
        while (fgets(line, sizeof line, f) != NULL) {
          rows++;
        }
        fclose(f);
      }
      EXPECT(rows == 3); /* header, allocate, free */
      remove("registry_test_log.csv");
    }
  } else {
    test_failed_count++;
    fprintf(stderr, "FAIL: logging resource: %s\n", rmm_last_error_message());
  }
}

/* tracking: outstanding allocations and a report */
static void test_tracking(void) {
  rmm_resource_t mr = NULL;
  rmm_resource_options o;
  void* p = NULL;
  size_t sz = 0;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_TRACKING, &o, &mr));
  EXPECT_OK(rmm_allocate(mr, NULL, 1234, 256, &p));
  EXPECT_OK(rmm_tracking_outstanding_count(mr, &sz));
  EXPECT(sz == 1);
  EXPECT_OK(rmm_tracking_allocated_bytes(mr, &sz));
  EXPECT(sz == 1234);
  {
    size_t needed = 0;
    char* buf;
    EXPECT_OK(rmm_tracking_report(mr, NULL, 0, &needed));
    EXPECT(needed > 1);
    buf = (char*)malloc(needed);
    EXPECT_OK(rmm_tracking_report(mr, buf, needed, NULL));
    EXPECT(strstr(buf, "1234") != NULL);
    free(buf);
  }
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 1234, 256));
  EXPECT_OK(rmm_resource_release(mr));
}

static int setup(void) { return test_setup_cuda(&cuda); }

static void teardown(void) { EXPECT_OK(rmm_resource_release(cuda)); }

static const test_case tests[] = {
    TEST(test_reference_counts),
    TEST(test_adaptor_keeps_upstream),
    TEST(test_per_device_slot_keeps_resource),
    TEST(test_setting_twice),
    TEST(test_binning_holds_bins),
    TEST(test_callbacks),
    TEST(test_failure_callback),
    TEST(test_queries),
    TEST(test_logging),
    TEST(test_tracking),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
