/*
 * framework_test.c -- the framework allocators (rmm_cupy_malloc/free,
 * rmm_torch_allocate/deallocate) and the calls for bindings: memory comes
 * from the device's current resource and goes back to the resource that
 * made it, whatever is current by then and whichever device is current;
 * that resource lives while its memory does; nothing is freed twice or
 * lost, from many threads.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmmgo.h"
#include "test_util.h"

static rmm_resource_t cuda;

static int setup(void) { return rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS; }

static void teardown(void) {
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT_OK(rmm_resource_release(cuda));
}

/* A statistics adaptor over the cuda resource. */
static rmm_status make_stats(rmm_resource_t* out) {
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  return rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, out);
}

static int64_t live_bytes(rmm_resource_t stats) {
  rmm_statistics st;
  st.struct_size = sizeof st;
  return rmm_statistics_get(stats, &st) == RMM_SUCCESS ? st.bytes.value : -1;
}

/* Whether h is still a live handle (a retain succeeds). */
static int is_live(rmm_resource_t h) {
  if (rmm_resource_retain(h) != RMM_SUCCESS) {
    return 0;
  }
  return rmm_resource_release(h) == RMM_SUCCESS;
}

/* ---- the current resource serves both frameworks */
static void test_serves_current_resource(void) {
  rmm_resource_t stats = NULL;
  void *p, *q;
  REQUIRE_OK(make_stats(&stats));
  REQUIRE_OK(rmm_set_current_device_resource(stats, NULL));
  p = rmm_torch_allocate(1000, 0, NULL);
  EXPECT(p != NULL && ((uintptr_t)p & 255) == 0);
  EXPECT(rmm_last_error_status() == RMM_SUCCESS);
  q = rmm_cupy_malloc(NULL, 512, 0);
  EXPECT(q != NULL && q != p);
  EXPECT(live_bytes(stats) == 1512);
  rmm_torch_deallocate(p, 1000, 0, NULL);
  rmm_cupy_free(NULL, q, 0);
  EXPECT(live_bytes(stats) == 0);
  EXPECT(rmm_torch_allocate(0, 0, NULL) == NULL);
  EXPECT(rmm_last_error_status() == RMM_SUCCESS);
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT_OK(rmm_resource_release(stats));
}

/* ---- memory goes back to the resource that made it; that resource lives
 * until it does, then is closed */
static void test_free_goes_back_after_replace(void) {
  rmm_resource_t a = NULL, b = NULL;
  void *p, *q;
  REQUIRE_OK(make_stats(&a));
  REQUIRE_OK(make_stats(&b));
  REQUIRE_OK(rmm_set_current_device_resource(a, NULL));
  p = rmm_torch_allocate(4096, 0, NULL);
  q = rmm_cupy_malloc(NULL, 256, 0);
  EXPECT(p != NULL && q != NULL && live_bytes(a) == 4352);
  REQUIRE_OK(rmm_set_current_device_resource(b, NULL));
  EXPECT_OK(rmm_resource_release(a)); /* the test's reference; a's slot let go too */
  EXPECT(is_live(a));                 /* its memory is still out */
  EXPECT(live_bytes(a) == 4352);
  rmm_torch_deallocate(p, 4096, 0, NULL);
  EXPECT(is_live(a));
  EXPECT(live_bytes(b) == 0);
  rmm_cupy_free(NULL, q, 0);
  EXPECT(!is_live(a)); /* the last of its memory came back: closed */
  p = rmm_torch_allocate(100, 0, NULL);
  EXPECT(p != NULL && live_bytes(b) == 100);
  rmm_torch_deallocate(p, 100, 0, NULL);
  EXPECT(live_bytes(b) == 0);
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT_OK(rmm_resource_release(b));
}

/* ---- a free with another device current frees with its own device
 * current, and leaves the caller's device alone */
static void test_free_with_another_device_current(void) {
  rmm_resource_t stats = NULL;
  void* p;
  int dev = -1;
  if (!test_has_devices(2)) {
    return;
  }
  REQUIRE_OK(make_stats(&stats));
  REQUIRE_OK(rmm_set_current_device_resource(stats, NULL));
  p = rmm_torch_allocate(2048, 0, NULL);
  EXPECT(p != NULL && live_bytes(stats) == 2048);
  REQUIRE_OK(rmm_set_device(1));
  rmm_torch_deallocate(p, 2048, 0, NULL);
  EXPECT(live_bytes(stats) == 0);
  EXPECT_OK(rmm_get_device(&dev));
  EXPECT(dev == 1);
  /* Device 0's memory asked for with device 1 current: device 0's resource. */
  p = rmm_cupy_malloc(NULL, 768, 0);
  EXPECT(p != NULL && live_bytes(stats) == 768);
  EXPECT_OK(rmm_get_device(&dev));
  EXPECT(dev == 1);
  REQUIRE_OK(rmm_set_device(0));
  rmm_cupy_free(NULL, p, 0);
  EXPECT(live_bytes(stats) == 0);
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT_OK(rmm_resource_release(stats));
}

/* ---- a second free, or a pointer never handed out, is refused */
static void test_double_free_is_refused(void) {
  rmm_resource_t stats = NULL;
  void* p;
  REQUIRE_OK(make_stats(&stats));
  REQUIRE_OK(rmm_set_current_device_resource(stats, NULL));
  p = rmm_torch_allocate(300, 0, NULL);
  EXPECT(p != NULL);
  rmm_torch_deallocate(p, 300, 0, NULL);
  EXPECT(live_bytes(stats) == 0);
  rmm_torch_deallocate(p, 300, 0, NULL);
  EXPECT_MESSAGE_HAS("not allocated");
  rmm_cupy_free(NULL, (char*)p + 256, 0);
  EXPECT_MESSAGE_HAS("not allocated");
  EXPECT(live_bytes(stats) == 0);
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT_OK(rmm_resource_release(stats));
}

/* ---- failures: NULL, the status kept, the entry point named */
static void test_failure_status(void) {
  rmm_resource_options o;
  rmm_resource_t lim = NULL;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.allocation_limit = 1 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_LIMITING, &o, &lim));
  REQUIRE_OK(rmm_set_current_device_resource(lim, NULL));
  EXPECT(rmm_torch_allocate(2 << 20, 0, NULL) == NULL);
  EXPECT(rmm_last_error_status() == RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_MESSAGE_HAS("rmm_torch_allocate(2097152 bytes, device 0)");
  EXPECT(rmm_cupy_malloc(NULL, 2 << 20, 0) == NULL);
  EXPECT(rmm_last_error_status() == RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_MESSAGE_HAS("rmm_cupy_malloc(");
  EXPECT(rmm_allocate_direct(lim, NULL, 2 << 20) == NULL);
  EXPECT(rmm_last_error_status() == RMM_ERROR_OUT_OF_MEMORY);
  EXPECT(rmm_allocate_direct(lim, NULL, 0) == NULL);
  EXPECT(rmm_last_error_status() == RMM_SUCCESS);
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT_OK(rmm_resource_release(lim));
}

/* ---- the token: the same until a set or reset, from any language */
static void test_current_resource_token(void) {
  rmm_resource_t stats = NULL;
  uint64_t t0 = rmm_current_resource_token(), t1, t2;
  EXPECT(t0 != 0 && (t0 & 0xffff) == 0);
  EXPECT(rmm_current_resource_token() == t0);
  REQUIRE_OK(make_stats(&stats));
  REQUIRE_OK(rmm_set_current_device_resource(stats, NULL));
  t1 = rmm_current_resource_token();
  EXPECT(t1 > t0 && (t1 & 0xffff) == 0);
  REQUIRE_OK(rmm_reset_current_device_resource(NULL));
  t2 = rmm_current_resource_token();
  EXPECT(t2 > t1);
  EXPECT_OK(rmm_resource_release(stats));
}

/* ---- many blocks from many threads, freed in a shuffled order (the
 * record table grows and deletes from the middle of its runs) */
enum { THREADS = 4, BLOCKS = 3000 };

struct worker {
  unsigned seed;
  int failures;
};

static void* churn(void* arg) {
  struct worker* w = (struct worker*)arg;
  void** ptrs = calloc(BLOCKS, sizeof *ptrs);
  size_t* sizes = calloc(BLOCKS, sizeof *sizes);
  int i, round;
  if (ptrs == NULL || sizes == NULL) {
    w->failures++;
    free(ptrs);
    free(sizes);
    return NULL;
  }
  for (round = 0; round < 2; round++) {
    for (i = 0; i < BLOCKS; i++) {
      sizes[i] = 1 + (size_t)(rand_r(&w->seed) % 70000);
      ptrs[i] = (i & 1) ? rmm_torch_allocate(sizes[i], 0, NULL) : rmm_cupy_malloc(NULL, sizes[i], 0);
      if (ptrs[i] == NULL) {
        w->failures++;
      }
    }
    for (i = BLOCKS - 1; i > 0; i--) { /* shuffle, keeping each size with its pointer */
      int j = (int)(rand_r(&w->seed) % (unsigned)(i + 1));
      void* tp = ptrs[i];
      size_t ts = sizes[i];
      ptrs[i] = ptrs[j];
      sizes[i] = sizes[j];
      ptrs[j] = tp;
      sizes[j] = ts;
    }
    for (i = 0; i < BLOCKS; i++) {
      if (rand_r(&w->seed) & 1) {
        rmm_torch_deallocate(ptrs[i], sizes[i], 0, NULL);
      } else {
        rmm_cupy_free(NULL, ptrs[i], 0);
      }
    }
  }
  free(ptrs);
  free(sizes);
  return NULL;
}

static void test_many_threads(void) {
  rmm_resource_options o;
  rmm_resource_t pool = NULL, stats = NULL;
  pthread_t t[THREADS];
  struct worker w[THREADS];
  int i, failures = 0;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = 64 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  rmm_resource_options_init(&o);
  o.upstream = pool;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  REQUIRE_OK(rmm_set_current_device_resource(stats, NULL));
  for (i = 0; i < THREADS; i++) {
    w[i].seed = 1234u + (unsigned)i;
    w[i].failures = 0;
    pthread_create(&t[i], NULL, churn, &w[i]);
  }
  for (i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failures += w[i].failures;
  }
  test_add_failures(failures);
  EXPECT(live_bytes(stats) == 0);
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT_OK(rmm_resource_release(stats));
  EXPECT_OK(rmm_resource_release(pool));
}

static const test_case tests[] = {
    TEST(test_serves_current_resource),
    TEST(test_free_goes_back_after_replace),
    TEST(test_free_with_another_device_current),
    TEST(test_double_free_is_refused),
    TEST(test_failure_status),
    TEST(test_current_resource_token),
    TEST(test_many_threads),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
