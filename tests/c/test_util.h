/*
 * test_util.h -- a small runner and checking macros for the C tests.
 *
 * A test program is a table of named test functions:
 *
 *   static void test_something(void) { EXPECT_OK(...); ... }
 *   static const test_case tests[] = {TEST(test_something), ...};
 *   int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
 *
 * TEST_MAIN runs the tests in table order (or only those named on the
 * command line), prints a line for each, then "N passed, M failed" (tests)
 * and returns the exit status: 0 when every test passed. A test passes when
 * none of its checks failed; REQUIRE_OK ends the test at a failed call.
 * setup (0 on success) and teardown run around all the tests, and may be
 * NULL; a failed check in teardown counts as a failed test.
 *
 * The checks count into the program's totals from the main thread only;
 * threads count their failures themselves and add them with
 * test_add_failures.
 */
#ifndef RMMGO_TEST_UTIL_H
#define RMMGO_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmmgo.h"

/* Checks passed and failed so far, over every test. */
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

/* REQUIRE_OK(call): call succeeds, or the test (a void function) ends here. */
#define REQUIRE_OK(call)                                                                            \
  do {                                                                                              \
    rmm_status got_ = (call);                                                                       \
    if (got_ != RMM_SUCCESS) {                                                                      \
      fprintf(stderr, "FATAL %s:%d: %s\n  got %s\n  message: %s\n", __FILE__, __LINE__, #call,     \
              rmm_status_string(got_), rmm_last_error_message());                                   \
      test_failed_count++;                                                                          \
      return;                                                                                       \
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

/* test_add_failures adds failures counted elsewhere (by threads) to the
 * current test; with n == 0 it counts one passed check. */
static inline void test_add_failures(int n) {
  if (n == 0) {
    test_passed_count++;
  } else {
    test_failed_count += n;
  }
}

/* ----------------------------------------------------------- the runner */

typedef struct test_case {
  const char* name;
  void (*run)(void);
} test_case;

/* TEST(fn): the table entry of test function fn, named after it. */
#define TEST(fn) {#fn, fn}

/* TEST_MAIN(argc, argv, tests, setup, teardown): see the top of the file. */
#define TEST_MAIN(argc, argv, tests, setup, teardown) \
  test_main((argc), (argv), (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))

static inline int test_selected(int argc, char** argv, const char* name) {
  int i;
  if (argc <= 1) {
    return 1;
  }
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], name) == 0) {
      return 1;
    }
  }
  return 0;
}

static inline int test_main(int argc, char** argv, const test_case* tests, size_t n, int (*setup)(void),
                            void (*teardown)(void)) {
  int passed = 0, failed = 0, i;
  size_t k;
  const char* prog = argc > 0 ? argv[0] : "test";
  const char* slash = strrchr(prog, '/');
  prog = slash != NULL ? slash + 1 : prog;
  setvbuf(stdout, NULL, _IOLBF, 0); /* keep what was printed if a test crashes */
  for (i = 1; i < argc; i++) {
    int known = 0;
    for (k = 0; k < n; k++) {
      known |= strcmp(argv[i], tests[k].name) == 0;
    }
    if (!known) {
      fprintf(stderr, "%s: no test named %s\n", prog, argv[i]);
      return 2;
    }
  }
  if (setup != NULL && setup() != 0) {
    fprintf(stderr, "FAIL %s: setup: %s\n", prog, rmm_last_error_message());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  for (k = 0; k < n; k++) {
    int p0 = test_passed_count, f0 = test_failed_count;
    if (!test_selected(argc, argv, tests[k].name)) {
      continue;
    }
    printf("== %s\n", tests[k].name);
    tests[k].run();
    if (test_failed_count == f0) {
      passed++;
      printf("ok   %s (%d checks)\n", tests[k].name, test_passed_count - p0);
    } else {
      failed++;
      printf("FAIL %s (%d of %d checks failed)\n", tests[k].name, test_failed_count - f0,
             test_failed_count - f0 + test_passed_count - p0);
    }
  }
  if (teardown != NULL) {
    int f0 = test_failed_count;
    teardown();
    if (test_failed_count != f0) {
      failed++;
      printf("FAIL teardown (%d checks failed)\n", test_failed_count - f0);
    }
  }
  printf("%s: %d checks passed, %d failed\n", prog, test_passed_count, test_failed_count);
  printf("%d passed, %d failed\n", passed, failed);
  fflush(stdout);
  return failed == 0 ? 0 : 1;
}

/* ------------------------------------------------------------- helpers */

/* test_device_count: the number of devices, 0 if it cannot be read. */
static inline int test_device_count(void) {
  int n = 0;
  if (rmm_get_device_count(&n) != RMM_SUCCESS) {
    return 0;
  }
  return n;
}

/* test_has_devices(n): whether the machine has n devices, for a test that
 * needs them and returns early without them. Where RMMGO_TEST_MIN_DEVICES
 * says the machine has at least n (make test on the simulated device, the
 * GPU bundle on a host of two GPUs), fewer is a failure, not a skip. */
static inline int test_has_devices(int n) {
  int have = test_device_count();
  const char* min = getenv("RMMGO_TEST_MIN_DEVICES");
  if (have >= n) {
    return 1;
  }
  if (min != NULL && atoi(min) >= n) {
    test_failed_count++;
    fprintf(stderr, "FAIL: needs %d devices: RMMGO_TEST_MIN_DEVICES=%s, but the library sees %d\n", n, min, have);
  } else {
    printf("note: needs %d devices, the machine has %d: skipped\n", n, have);
  }
  return 0;
}

/* test_simulated: whether the library runs on the simulated device. */
static inline int test_simulated(void) {
  const char* backend = "";
  return rmm_backend_name(&backend) == RMM_SUCCESS && strcmp(backend, "simulated") == 0;
}

/* test_setup_cuda: the usual setup, a cuda resource the tests share in
 * *cuda, after printing the backend; 0 on success. */
static inline int test_setup_cuda(rmm_resource_t* cuda) {
  const char* backend = NULL;
  if (rmm_backend_name(&backend) != RMM_SUCCESS) {
    return 1;
  }
  printf("backend: %s\n", backend);
  return rmm_resource_create(RMM_RESOURCE_CUDA, NULL, cuda) != RMM_SUCCESS;
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
