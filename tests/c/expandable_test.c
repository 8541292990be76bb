/*
 * expandable_test.c -- RMM_RESOURCE_EXPANDABLE through the C ABI: its
 * options, the pool queries it shares, and the fragmentation case it exists
 * for (a maximum of 512 MiB, 100 blocks of 4 MiB, every other one freed,
 * then 150 MiB: a pool refuses, the expandable resource serves).
 */
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"

#define MiB ((size_t)1 << 20)

static rmm_resource_t make_expandable(size_t maximum, size_t threshold) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  rmm_resource_options_init(&o);
  o.maximum_pool_size = maximum;
  o.release_threshold = threshold;
  if (rmm_resource_create(RMM_RESOURCE_EXPANDABLE, &o, &mr) != RMM_SUCCESS) {
    fprintf(stderr, "FAIL creating an expandable resource: %s\n", rmm_last_error_message());
    test_failed_count++;
    return NULL;
  }
  return mr;
}

static void test_kind_and_queries(void) {
  rmm_resource_t mr = NULL, plain = NULL;
  rmm_resource_kind k;
  const char* name = NULL;
  size_t size = 1, used = 1;
  void* p = NULL;
  char buf[4096];
  memset(buf, 0x5a, sizeof buf);
  EXPECT_OK(rmm_resource_create(RMM_RESOURCE_EXPANDABLE, NULL, &plain)); /* no options: the defaults */
  EXPECT_OK(rmm_resource_release(plain));
  mr = make_expandable(64 * MiB, RMM_SIZE_DEFAULT);
  if (mr == NULL) {
    return;
  }
  EXPECT_OK(rmm_resource_kind_of(mr, &k));
  EXPECT(k == RMM_RESOURCE_EXPANDABLE);
  EXPECT_OK(rmm_resource_name(mr, &name));
  EXPECT(name != NULL && strcmp(name, "expandable_memory_resource") == 0);
  EXPECT_OK(rmm_pool_size(mr, &size));
  EXPECT(size == 0); /* nothing mapped until used */
  EXPECT_OK(rmm_allocate(mr, NULL, 3 * MiB, 256, &p));
  EXPECT_OK(rmm_pool_size(mr, &size));
  EXPECT(size >= 3 * MiB && size <= 4 * MiB);
  EXPECT_OK(rmm_pool_used_bytes(mr, &used));
  EXPECT(used == 3 * MiB);
  /* The memory works: a copy in and out. */
  EXPECT_OK(rmm_memcpy(p, buf, sizeof buf, NULL));
  memset(buf, 0, sizeof buf);
  EXPECT_OK(rmm_memcpy(buf, p, sizeof buf, NULL));
  EXPECT(buf[0] == 0x5a && buf[sizeof buf - 1] == 0x5a);
  EXPECT_STATUS(rmm_deallocate(mr, NULL, (char*)p + 256, 3 * MiB, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 3 * MiB, 256));
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, 3 * MiB, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_OK(rmm_pool_release(mr));
  EXPECT_OK(rmm_pool_size(mr, &size));
  EXPECT(size == 0); /* every granule back to the device */
  /* At the maximum: out of memory, with RMM's words. */
  EXPECT_OK(rmm_allocate(mr, NULL, 64 * MiB, 256, &p));
  EXPECT_STATUS(rmm_allocate(mr, NULL, 256, 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_MESSAGE_HAS("Maximum pool size exceeded");
  EXPECT_OK(rmm_resource_release(mr)); /* with an allocation live: given back too */
}

static void test_options(void) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  rmm_resource_options_init(&o);
  o.maximum_pool_size = 0;
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_EXPANDABLE, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("options.maximum_pool_size is 0");
  o.maximum_pool_size = 1000;
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_EXPANDABLE, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("multiple of 256");
  o.maximum_pool_size = MiB; /* below the granularity */
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_EXPANDABLE, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("granularity");
  o.maximum_pool_size = 16 * MiB;
  o.release_threshold = 1000;
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_EXPANDABLE, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT(mr == NULL);
  /* A threshold of 0 keeps nothing: free granules go back whenever it
   * grows. 8 MiB freed before a live 2 MiB block, then 12 MiB: without a
   * threshold 22 MiB end up mapped, with it 14. */
  for (int keep = 0; keep < 2; keep++) {
    mr = make_expandable(64 * MiB, keep ? RMM_SIZE_DEFAULT : 0);
    if (mr != NULL) {
      void *a = NULL, *b = NULL, *c = NULL;
      size_t size = 0;
      EXPECT_OK(rmm_allocate(mr, NULL, 8 * MiB, 256, &a));
      EXPECT_OK(rmm_allocate(mr, NULL, 2 * MiB, 256, &c));
      EXPECT_OK(rmm_deallocate(mr, NULL, a, 8 * MiB, 256));
      EXPECT_OK(rmm_allocate(mr, NULL, 12 * MiB, 256, &b));
      EXPECT_OK(rmm_pool_size(mr, &size));
      EXPECT(size == (keep ? 22 : 14) * MiB);
      EXPECT_OK(rmm_deallocate(mr, NULL, b, 12 * MiB, 256));
      EXPECT_OK(rmm_deallocate(mr, NULL, c, 2 * MiB, 256));
      EXPECT_OK(rmm_resource_release(mr));
    }
  }
}

/* The case of issue 18: the pool refuses, the expandable resource serves. */
static size_t fragmented(rmm_resource_t mr, rmm_status* big_status) {
  void* blocks[100];
  void* big = NULL;
  size_t i, size = 0;
  for (i = 0; i < 100; i++) {
    blocks[i] = NULL;
    EXPECT_OK(rmm_allocate(mr, NULL, 4 * MiB, 256, &blocks[i]));
  }
  for (i = 1; i < 100; i += 2) {
    EXPECT_OK(rmm_deallocate(mr, NULL, blocks[i], 4 * MiB, 256));
  }
  *big_status = rmm_allocate(mr, NULL, 150 * MiB, 256, &big);
  if (*big_status == RMM_SUCCESS) {
    EXPECT_OK(rmm_memset(big, 0x11, 150 * MiB, NULL));
    EXPECT_OK(rmm_pool_size(mr, &size));
    EXPECT_OK(rmm_deallocate(mr, NULL, big, 150 * MiB, 256));
  }
  for (i = 0; i < 100; i += 2) {
    EXPECT_OK(rmm_deallocate(mr, NULL, blocks[i], 4 * MiB, 256));
  }
  return size;
}

static void test_fragmentation(void) {
  rmm_resource_options o;
  rmm_resource_t cuda = NULL, pool = NULL, mr = NULL;
  rmm_status st = RMM_SUCCESS;
  size_t size;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = 0;
  o.maximum_pool_size = 512 * MiB;
  EXPECT_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  if (pool != NULL) {
    /* 200 MiB free in 4 MiB pieces: the pool gives back its wholly free
     * chunks before it grows, and the maximum has room for 150 MiB. */
    fragmented(pool, &st);
    EXPECT_STATUS(st, RMM_SUCCESS);
    EXPECT_OK(rmm_resource_release(pool));
  }
  EXPECT_OK(rmm_resource_release(cuda));
  mr = make_expandable(512 * MiB, RMM_SIZE_DEFAULT);
  if (mr == NULL) {
    return;
  }
  size = fragmented(mr, &st);
  EXPECT_STATUS(st, RMM_SUCCESS);
  EXPECT(size > 0 && size <= 512 * MiB);
  printf("note: mapped %zu MiB with 200 MiB and 150 MiB live\n", size >> 20);
  EXPECT_OK(rmm_resource_release(mr));
}

static const test_case tests[] = {
    TEST(test_kind_and_queries),
    TEST(test_options),
    TEST(test_fragmentation),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, NULL, NULL); }
