/*
 * test_util.h -- tiny checking helpers shared by the C tests and examples.
 * Each program ends with test_finish(), which prints "N passed, M failed"
 * and gives the exit status.
 */
#ifndef RMMGO_TEST_UTIL_H
#define RMMGO_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

#include "rmmgo.h"

static int test_passed_count;
static int test_failed_count;

/* EXPECT_STATUS(call, want): call returns exactly want. */
#define EXPECT_STATUS(call, want)                                                                   \
  do {                                                                                              \
    rmm_status got_ = (call);                                                                       \
    if (got_ == (want)) {                                                                           \
      test_passed_count++;                                                                          \
    } else {                                                                                        \
      test_failed_count++;                                                                          \
      fprintf(stderr, "FAIL %s:%d: %s\n  got %s, want %s\n  message: %s\n", __FILE__, __LINE__,     \
              #call, rmm_status_string(got_), rmm_status_string(want), rmm_last_error_message());   \
    }                                                                                               \
  } while (0)

/* EXPECT_OK(call): call succeeds. */
#define EXPECT_OK(call) EXPECT_STATUS(call, RMM_SUCCESS)

/* EXPECT(cond): cond holds. */
#define EXPECT(cond)                                                                                \
  do {                                                                                              \
    if (cond) {                                                                                     \
      test_passed_count++;                                                                          \
    } else {                                                                                        \
      test_failed_count++;                                                                          \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                               \
    }                                                                                               \
  } while (0)

/* REQUIRE_OK(call): call succeeds, or the program stops here. */
#define REQUIRE_OK(call)                                                                            \
  do {                                                                                              \
    rmm_status got_ = (call);                                                                       \
    if (got_ != RMM_SUCCESS) {                                                                      \
      fprintf(stderr, "FATAL %s:%d: %s\n  got %s\n  message: %s\n", __FILE__, __LINE__, #call,     \
              rmm_status_string(got_), rmm_last_error_message());                                   \
      test_failed_count++;                                                                          \
      return test_finish();                                                                         \
    }                                                                                               \
  } while (0)

/* EXPECT_MESSAGE_HAS(text): the thread's last error message contains text. */
#define EXPECT_MESSAGE_HAS(text)                                                                    \
  do {                                                                                              \
    const char* msg_ = rmm_last_error_message();                                                    \
    if (strstr(msg_, (text)) != NULL) {                                                             \
      test_passed_count++;                                                                          \
    } else {                                                                                        \
      test_failed_count++;                                                                          \
      fprintf(stderr, "FAIL %s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, msg_, text); \
    }                                                                                               \
  } while (0)

static inline int test_finish(void) {
  printf("%d passed, %d failed\n", test_passed_count, test_failed_count);
  fflush(stdout);
  return test_failed_count == 0 ? 0 : 1;
}

/* test_device_count: the number of devices, 0 if it cannot be read. */
static inline int test_device_count(void) {
  int n = 0;
  if (rmm_get_device_count(&n) != RMM_SUCCESS) {
    return 0;
  }
  return n;
}

/* test_make: a resource of kind over upstream with default options, or
 * NULL (and a note) when this library or device does not support it. */
static inline rmm_resource_t test_make(rmm_resource_kind kind, rmm_resource_t upstream) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  rmm_status s;
  rmm_resource_options_init(&o);
  o.upstream = upstream;
  o.initial_pool_size = 0;                 /* pool: grow on demand */
  o.arena_size = (size_t)64 << 20;         /* arena: 64 MiB */
  o.block_size = (size_t)64 << 10;         /* fixed_size: 64 KiB blocks */
  o.blocks_to_preallocate = 16;
  o.min_size_exponent = 8;                 /* binning: 256 B .. 64 KiB bins */
  o.max_size_exponent = 16;
  o.allocation_limit = (size_t)512 << 20;  /* limiting: 512 MiB */
  s = rmm_resource_create(kind, &o, &mr);
  if (s == RMM_ERROR_NOT_SUPPORTED) {
    printf("note: resource kind %d is not supported here (%s): skipped\n", (int)kind, rmm_last_error_message());
    return NULL;
  }
  if (s != RMM_SUCCESS) {
    test_failed_count++;
    fprintf(stderr, "FAIL: creating resource kind %d: %s: %s\n", (int)kind, rmm_status_string(s),
            rmm_last_error_message());
    return NULL;
  }
  return mr;
}

#endif /* RMMGO_TEST_UTIL_H */
