/*
 * mixed_frees_test.c -- a block freed through another handle of the same
 * memory than the one that allocated it (issue 24), with the per-thread
 * cache on and off (make test-c runs both):
 *
 *  - a pool block from rmm_allocate (the C cache hands it out and records
 *    it) freed through a tracking, logging, thread_safe or prefetch adaptor
 *    over the pool is freed once: a second free, through the pool or the
 *    adaptor, is refused, and the next allocations never return one address
 *    twice; the same for a block the adaptor allocated, and for the
 *    framework allocators (rmm_cupy_malloc, rmm_torch_allocate) mixed with
 *    an adaptor;
 *  - a chunk a live pool (arena, fixed_size) took from its upstream cannot
 *    be freed through the upstream (or an adaptor over it) even with the
 *    chunk's exact size.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmmgo.h"
#include "test_util.h"

static rmm_resource_t cuda;

static rmm_resource_t make(rmm_resource_kind kind, rmm_resource_t up) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  rmm_resource_options_init(&o);
  o.upstream = up;
  o.initial_pool_size = (size_t)16 << 20;
  o.maximum_pool_size = RMM_SIZE_DEFAULT;
  o.arena_size = (size_t)16 << 20;
  o.block_size = (size_t)1 << 20;
  o.blocks_to_preallocate = 4;
  o.log_file = "mixed_frees_log.csv";
  if (rmm_resource_create(kind, &o, &mr) != RMM_SUCCESS) {
    fprintf(stderr, "FAIL: resource %d: %s\n", (int)kind, rmm_last_error_message());
    test_failed_count++;
    return NULL;
  }
  return mr;
}

/* Refused as a pointer that is not live. */
#define EXPECT_REFUSED(call)                         \
  do {                                               \
    EXPECT_STATUS(call, RMM_ERROR_INVALID_POINTER);  \
  } while (0)

/* The next n allocations of bytes from mr are n distinct addresses, none of
 * them `not` (NULL: any); they are freed again. */
static void expect_distinct(rmm_resource_t mr, size_t bytes, void* not, int n) {
  void* got[8] = {0};
  for (int i = 0; i < n; i++) {
    EXPECT_OK(rmm_allocate(mr, NULL, bytes, 256, &got[i]));
    for (int j = 0; j < i; j++) {
      if (got[i] != NULL && got[i] == got[j]) {
        fprintf(stderr, "FAIL: allocation %d and %d of %zu bytes both returned %p\n", j, i, bytes, got[i]);
        test_failed_count++;
      }
    }
  }
  (void)not;
  for (int i = n - 1; i >= 0; i--) {
    if (got[i] != NULL) {
      EXPECT_OK(rmm_deallocate(mr, NULL, got[i], bytes, 256));
    }
  }
}

/* A block the pool's handle allocated, freed through adaptor ad over it,
 * then again through the pool and the adaptor. */
static void pool_then_adaptor(rmm_resource_t pool, rmm_resource_t ad, size_t bytes, const char* name) {
  void* p = NULL;
  REQUIRE_OK(rmm_allocate(pool, NULL, bytes, 256, &p));
  if (rmm_deallocate(ad, NULL, p, bytes, 256) != RMM_SUCCESS) {
    fprintf(stderr, "FAIL: %s: %zu bytes from the pool, freed through the adaptor: %s\n", name, bytes,
            rmm_last_error_message());
    test_failed_count++;
  }
  EXPECT_REFUSED(rmm_deallocate(pool, NULL, p, bytes, 256));
  EXPECT_REFUSED(rmm_deallocate(ad, NULL, p, bytes, 256));
  EXPECT_REFUSED(rmm_deallocate_sync(pool, p, bytes, 256));
  expect_distinct(pool, bytes, NULL, 4);
}

/* A block the adaptor allocated, freed through the pool, then again
 * through the adaptor and the pool. */
static void adaptor_then_pool(rmm_resource_t pool, rmm_resource_t ad, size_t bytes, const char* name) {
  void* p = NULL;
  REQUIRE_OK(rmm_allocate(ad, NULL, bytes, 256, &p));
  if (rmm_deallocate(pool, NULL, p, bytes, 256) != RMM_SUCCESS) {
    fprintf(stderr, "FAIL: %s: %zu bytes from the adaptor, freed through the pool: %s\n", name, bytes,
            rmm_last_error_message());
    test_failed_count++;
  }
  EXPECT_REFUSED(rmm_deallocate(ad, NULL, p, bytes, 256));
  EXPECT_REFUSED(rmm_deallocate(pool, NULL, p, bytes, 256));
  expect_distinct(pool, bytes, NULL, 4);
}

static void on_adaptor(rmm_resource_kind kind, const char* name) {
  rmm_resource_t pool = make(RMM_RESOURCE_POOL, cuda);
  rmm_resource_t ad = pool != NULL ? make(kind, pool) : NULL;
  if (ad == NULL) {
    return;
  }
  size_t sizes[] = {256, 4096, 5000, 100000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    pool_then_adaptor(pool, ad, sizes[i], name);
    adaptor_then_pool(pool, ad, sizes[i], name);
  }
  EXPECT_OK(rmm_resource_release(ad));
  EXPECT_OK(rmm_resource_release(pool));
}

static void test_tracking(void) { on_adaptor(RMM_RESOURCE_TRACKING, "tracking"); }
static void test_logging(void) { on_adaptor(RMM_RESOURCE_LOGGING, "logging"); }
static void test_thread_safe(void) { on_adaptor(RMM_RESOURCE_THREAD_SAFE, "thread_safe"); }
static void test_prefetch(void) { on_adaptor(RMM_RESOURCE_PREFETCH, "prefetch"); }

/* The other sub-allocators the cache serves, under a tracking adaptor. */
static void on_suballocator(rmm_resource_kind kind, size_t bytes) {
  rmm_resource_t r = make(kind, cuda);
  rmm_resource_t ad = r != NULL ? make(RMM_RESOURCE_TRACKING, r) : NULL;
  if (ad == NULL) {
    return;
  }
  pool_then_adaptor(r, ad, bytes, "tracking");
  adaptor_then_pool(r, ad, bytes, "tracking");
  EXPECT_OK(rmm_resource_release(ad));
  EXPECT_OK(rmm_resource_release(r));
}

static void test_arena(void) { on_suballocator(RMM_RESOURCE_ARENA, 3000); }
static void test_fixed_size(void) { on_suballocator(RMM_RESOURCE_FIXED_SIZE, 3000); }
static void test_binning(void) { on_suballocator(RMM_RESOURCE_BINNING, 3000); }

/* The framework allocators over a pool set current, mixed with a tracking
 * adaptor over the pool. */
static void test_framework(void) {
  rmm_resource_t pool = make(RMM_RESOURCE_POOL, cuda);
  rmm_resource_t ad = pool != NULL ? make(RMM_RESOURCE_TRACKING, pool) : NULL;
  rmm_resource_t prev = NULL;
  if (ad == NULL) {
    return;
  }
  REQUIRE_OK(rmm_set_current_device_resource(pool, &prev));
  /* CuPy's block, freed through the adaptor, then by CuPy. */
  void* p = rmm_cupy_malloc(NULL, 3000, 0);
  EXPECT(p != NULL);
  EXPECT_OK(rmm_deallocate(ad, NULL, p, 3000, 256));
  rmm_cupy_free(NULL, p, 0); /* refused: the pool no longer holds it */
  EXPECT_REFUSED(rmm_deallocate(pool, NULL, p, 3000, 256));
  expect_distinct(pool, 3000, NULL, 4);
  /* PyTorch's, the same. */
  p = rmm_torch_allocate(3000, 0, NULL);
  EXPECT(p != NULL);
  EXPECT_OK(rmm_deallocate(ad, NULL, p, 3000, 256));
  rmm_torch_deallocate(p, 3000, 0, NULL);
  expect_distinct(pool, 3000, NULL, 4);
  /* A block from rmm_allocate is not CuPy's to free. */
  REQUIRE_OK(rmm_allocate(pool, NULL, 3000, 256, &p));
  rmm_cupy_free(NULL, p, 0); /* refused: CuPy did not allocate it */
  EXPECT_OK(rmm_deallocate(ad, NULL, p, 3000, 256));
  EXPECT_REFUSED(rmm_deallocate(pool, NULL, p, 3000, 256));
  expect_distinct(pool, 3000, NULL, 4);
  EXPECT_OK(rmm_set_current_device_resource(prev, NULL));
  EXPECT_OK(rmm_resource_release(ad));
  EXPECT_OK(rmm_resource_release(pool));
}

/* ------------------------------------------------ chunks (defect B) */

/* A sub-allocator of kind over up (cuda, or an adaptor over it) whose first
 * block fills its first chunk of `chunk` bytes: freeing that block through
 * up, or through an adaptor over cuda, with the chunk's size is refused. */
static void chunk_through_upstream(rmm_resource_kind kind, rmm_resource_t up, size_t chunk, const char* name) {
  rmm_resource_options o;
  rmm_resource_t r = NULL;
  rmm_resource_options_init(&o);
  o.upstream = up;
  o.initial_pool_size = chunk;
  o.maximum_pool_size = chunk;
  o.block_size = chunk;
  o.blocks_to_preallocate = 1;
  o.arena_size = chunk;
  if (rmm_resource_create(kind, &o, &r) != RMM_SUCCESS) {
    fprintf(stderr, "FAIL: %s: %s\n", name, rmm_last_error_message());
    test_failed_count++;
    return;
  }
  rmm_resource_t tr = make(RMM_RESOURCE_TRACKING, cuda);
  void* b = NULL;
  size_t bytes = kind == RMM_RESOURCE_ARENA ? (size_t)1 << 20 : chunk;
  REQUIRE_OK(rmm_allocate(r, NULL, bytes, 256, &b));
  EXPECT_REFUSED(rmm_deallocate(cuda, NULL, b, chunk, 256));
  EXPECT_MESSAGE_HAS("holds it");
  EXPECT_REFUSED(rmm_deallocate_sync(cuda, b, chunk, 256));
  EXPECT_REFUSED(rmm_deallocate(up, NULL, b, chunk, 256));
  if (tr != NULL) {
    EXPECT_REFUSED(rmm_deallocate(tr, NULL, b, chunk, 256));
  }
  /* cuda hands out memory of its own, never the pool's. */
  void* c = NULL;
  EXPECT_OK(rmm_allocate(cuda, NULL, chunk, 256, &c));
  EXPECT(c != b);
  EXPECT_OK(rmm_deallocate(cuda, NULL, c, chunk, 256));
  EXPECT_OK(rmm_deallocate(r, NULL, b, bytes, 256));
  if (tr != NULL) {
    EXPECT_OK(rmm_resource_release(tr));
  }
  /* The sub-allocator gives its chunk back when it goes: no leak, no
   * refusal. */
  EXPECT_OK(rmm_resource_release(r));
}

static void test_chunks(void) {
  size_t mib = (size_t)1 << 20;
  chunk_through_upstream(RMM_RESOURCE_POOL, cuda, mib, "pool");
  chunk_through_upstream(RMM_RESOURCE_FIXED_SIZE, cuda, mib, "fixed_size");
  chunk_through_upstream(RMM_RESOURCE_ARENA, cuda, 4 * mib, "arena");
  rmm_resource_t st = make(RMM_RESOURCE_STATISTICS, cuda);
  if (st != NULL) {
    chunk_through_upstream(RMM_RESOURCE_POOL, st, mib, "pool over statistics");
    EXPECT_OK(rmm_resource_release(st));
  }
}

/* After the pool gave its chunk back, the address is cuda's to hand out and
 * free again. */
static void test_chunk_given_back(void) {
  rmm_resource_options o;
  rmm_resource_t r = NULL;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = (size_t)1 << 20;
  o.maximum_pool_size = (size_t)1 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &r));
  EXPECT_OK(rmm_resource_release(r));
  for (int i = 0; i < 4; i++) {
    void* c = NULL;
    EXPECT_OK(rmm_allocate(cuda, NULL, (size_t)1 << 20, 256, &c));
    EXPECT_OK(rmm_deallocate(cuda, NULL, c, (size_t)1 << 20, 256));
  }
}

static int setup(void) { return rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) == RMM_SUCCESS ? 0 : 1; }

static void teardown(void) { EXPECT_OK(rmm_resource_release(cuda)); }

static const test_case tests[] = {
    TEST(test_tracking), TEST(test_logging), TEST(test_thread_safe), TEST(test_prefetch),
    TEST(test_arena),    TEST(test_fixed_size), TEST(test_binning), TEST(test_framework),
    TEST(test_chunks),   TEST(test_chunk_given_back),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
