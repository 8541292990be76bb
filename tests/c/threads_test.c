/*
 * threads_test.c -- 16 pthreads (threads Go did not create) allocate and free
 * at once on shared resources of every kind. Live allocations must never
 * overlap: each thread fills its memory with a pattern of its own and checks
 * it before freeing, and a shared interval set (under a C mutex) checks every
 * new block against all live ones. Threads also make and release their own
 * resources, and check that error messages stay per thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmmgo.h"
#include "test_util.h"

#define THREADS 16
#define ITERATIONS 150
#define LIVE_PER_THREAD 6
#define MAX_LIVE (THREADS * LIVE_PER_THREAD)

/* ------------------------------------------------ the shared interval set */

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t live_start[MAX_LIVE];
static uintptr_t live_end[MAX_LIVE];
static int live_n;

/* Records [p, p+n); returns 0 if it overlaps a live block. */
static int live_add(uintptr_t p, size_t n) {
  int i, ok = 1;
  pthread_mutex_lock(&live_mu);
  for (i = 0; i < live_n; i++) {
    if (p < live_end[i] && live_start[i] < p + n) {
      fprintf(stderr, "OVERLAP: [%#lx, %#lx) and live [%#lx, %#lx)\n", (unsigned long)p, (unsigned long)(p + n),
              (unsigned long)live_start[i], (unsigned long)live_end[i]);
      ok = 0;
    }
  }
  if (live_n < MAX_LIVE) {
    live_start[live_n] = p;
    live_end[live_n] = p + n;
    live_n++;
  }
  pthread_mutex_unlock(&live_mu);
  return ok;
}

static void live_remove(uintptr_t p) {
  int i;
  pthread_mutex_lock(&live_mu);
  for (i = 0; i < live_n; i++) {
    if (live_start[i] == p) {
      live_start[i] = live_start[live_n - 1];
      live_end[i] = live_end[live_n - 1];
      live_n--;
      break;
    }
  }
  pthread_mutex_unlock(&live_mu);
}

/* ------------------------------------------------------------- the threads */

struct job {
  rmm_resource_t mr;
  rmm_stream_t stream; /* the thread's own, destroyed by main after every thread ended */
  int id;
  size_t max_bytes;
  int host;     /* fill and check with the CPU (pinned host memory) */
  int failures; /* counted by the thread, summed by main */
  int checks;
};

struct block {
  void* p;
  size_t n;
  unsigned char pattern;
};

static uint32_t next_random(uint32_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* THREAD_FAIL prints one whole line (so threads' lines do not mix) and
 * counts a failure; the first 20 lines of a job are printed. */
#define THREAD_FAIL(job, ...)                                          \
  do {                                                                 \
    char line_[512];                                                   \
    snprintf(line_, sizeof line_, __VA_ARGS__);                        \
    if ((job)->failures++ < 20) {                                      \
      fprintf(stderr, "FAIL thread %d: %s\n", (job)->id, line_);        \
    }                                                                  \
  } while (0)

/* check reads back the first, middle and last bytes of b and compares
 * them with its pattern. Large blocks are sampled, small ones read whole. */
static void check_block(struct job* job, rmm_stream_t s, const struct block* b, unsigned char* host) {
  size_t n = b->n < 4096 ? b->n : 4096;
  size_t offsets[3];
  int k;
  offsets[0] = 0;
  offsets[1] = (b->n - n) / 2;
  offsets[2] = b->n - n;
  for (k = 0; k < 3; k++) {
    size_t i;
    if (job->host) {
      memcpy(host, (unsigned char*)b->p + offsets[k], n);
    } else if (rmm_memcpy(host, (unsigned char*)b->p + offsets[k], n, s) != RMM_SUCCESS ||
        rmm_stream_synchronize(s) != RMM_SUCCESS) {
      THREAD_FAIL(job, "copy back: %s", rmm_last_error_message());
      return;
    }
    for (i = 0; i < n; i++) {
      if (host[i] != b->pattern) {
        THREAD_FAIL(job, "block %p (%zu bytes) byte %zu is %#x, want %#x: overwritten by another allocation", b->p,
                    b->n, offsets[k] + i, host[i], b->pattern);
        return;
      }
    }
    job->checks++;
  }
}

static void* worker(void* arg) {
  struct job* job = (struct job*)arg;
  struct block live[LIVE_PER_THREAD];
  unsigned char* host = (unsigned char*)malloc(4096);
  rmm_stream_t s = job->stream;
  uint32_t seed = 0x9e3779b9u * (uint32_t)(job->id + 1);
  int i, nlive = 0;

  for (i = 0; i < ITERATIONS; i++) {
    int r = (int)(next_random(&seed) % 3);
    if (nlive == LIVE_PER_THREAD || (nlive > 0 && r == 0)) {
      int k = (int)(next_random(&seed) % (uint32_t)nlive);
      struct block b = live[k];
      check_block(job, s, &b, host);
      live_remove((uintptr_t)b.p);
      if (rmm_deallocate(job->mr, s, b.p, b.n, 256) != RMM_SUCCESS) {
        THREAD_FAIL(job, "deallocate %p: %s", b.p, rmm_last_error_message());
      }
      live[k] = live[--nlive];
    } else {
      struct block b;
      b.n = 1 + next_random(&seed) % job->max_bytes;
      b.pattern = (unsigned char)(job->id * 16 + i % 16);
      if (rmm_allocate(job->mr, s, b.n, 256, &b.p) != RMM_SUCCESS) {
        THREAD_FAIL(job, "allocate %zu: %s", b.n, rmm_last_error_message());
        continue;
      }
      if (((uintptr_t)b.p & 255) != 0) {
        THREAD_FAIL(job, "%p is not 256-byte aligned", b.p);
      }
      if (!live_add((uintptr_t)b.p, b.n)) {
        THREAD_FAIL(job, "%p (%zu bytes) overlaps a live allocation", b.p, b.n);
      }
      if (job->host) {
        memset(b.p, b.pattern, b.n);
      } else if (rmm_memset(b.p, b.pattern, b.n, s) != RMM_SUCCESS) {
        THREAD_FAIL(job, "memset: %s", rmm_last_error_message());
      }
      live[nlive++] = b;
    }
  }
  while (nlive > 0) {
    struct block b = live[--nlive];
    check_block(job, s, &b, host);
    live_remove((uintptr_t)b.p);
    if (rmm_deallocate(job->mr, s, b.p, b.n, 256) != RMM_SUCCESS) {
      THREAD_FAIL(job, "deallocate %p: %s", b.p, rmm_last_error_message());
    }
  }
  rmm_stream_synchronize(s);
  free(host);
  return NULL;
}

/* Runs 16 workers on mr; returns the number of failures. */
static int run_threads(const char* what, rmm_resource_t mr, size_t max_bytes, int host) {
  pthread_t t[THREADS];
  struct job jobs[THREADS];
  int i, failures = 0, checks = 0;
  for (i = 0; i < THREADS; i++) {
    jobs[i].mr = mr;
    jobs[i].id = i;
    jobs[i].max_bytes = max_bytes;
    jobs[i].host = host;
    jobs[i].failures = 0;
    jobs[i].checks = 0;
    if (rmm_stream_create(&jobs[i].stream) != RMM_SUCCESS) {
      fprintf(stderr, "FAIL: stream: %s\n", rmm_last_error_message());
      return 1;
    }
    if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0) {
      fprintf(stderr, "FAIL: pthread_create\n");
      return 1;
    }
  }
  for (i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failures += jobs[i].failures;
    checks += jobs[i].checks;
  }
  /* Streams outlive every deallocation made on them (RMM's rule), so they
   * go only when every thread is done. */
  for (i = 0; i < THREADS; i++) {
    if (rmm_stream_destroy(jobs[i].stream) != RMM_SUCCESS) {
      fprintf(stderr, "FAIL: stream destroy: %s\n", rmm_last_error_message());
      failures++;
    }
  }
  if (live_n != 0) {
    fprintf(stderr, "FAIL %s: %d blocks left in the interval set\n", what, live_n);
    failures++;
    live_n = 0;
  }
  printf("%-28s %d threads, %d pattern checks, %d failures\n", what, THREADS, checks, failures);
  return failures;
}

/* ------------------------------------ handles and messages from many threads */

static rmm_resource_t shared_upstream;

static void* churn(void* arg) {
  int id = *(int*)arg, i;
  long bad = 0;
  char want[64];
  for (i = 0; i < 100; i++) {
    rmm_resource_options o;
    rmm_resource_t mr = NULL;
    rmm_resource_kind k;
    void* p = NULL;
    size_t bytes = (size_t)(id + 1) * 1000 + (size_t)i;
    rmm_resource_options_init(&o);
    o.upstream = shared_upstream;
    if (rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &mr) != RMM_SUCCESS) {
      bad++;
      continue;
    }
    if (rmm_allocate(mr, NULL, bytes, 256, &p) != RMM_SUCCESS || rmm_deallocate(mr, NULL, p, bytes, 256) != RMM_SUCCESS) {
      bad++;
    }
    /* a failure whose message names this thread's own numbers */
    if (rmm_allocate(mr, NULL, bytes, 3, &p) != RMM_ERROR_BAD_ALIGNMENT) {
      bad++;
    }
    snprintf(want, sizeof want, "(%zu bytes, alignment 3)", bytes);
    if (strstr(rmm_last_error_message(), want) == NULL) {
      fprintf(stderr, "FAIL thread %d: message \"%s\" is not this thread's (%s)\n", id, rmm_last_error_message(), want);
      bad++;
    }
    if (rmm_resource_release(mr) != RMM_SUCCESS || rmm_resource_kind_of(mr, &k) != RMM_ERROR_INVALID_HANDLE) {
      bad++;
    }
  }
  return (void*)(intptr_t)bad;
}

static int run_churn(void) {
  pthread_t t[THREADS];
  int ids[THREADS], i, failures = 0;
  for (i = 0; i < THREADS; i++) {
    ids[i] = i;
    pthread_create(&t[i], NULL, churn, &ids[i]);
  }
  for (i = 0; i < THREADS; i++) {
    void* bad = NULL;
    pthread_join(t[i], &bad);
    failures += (int)(intptr_t)bad;
  }
  printf("%-28s %d threads x 100 create/allocate/fail/release, %d failures\n", "handle churn", THREADS, failures);
  return failures;
}

/* ------------------------------------------------------------------ tests */

/* A cuda resource the tests build over, made by setup. */
static rmm_resource_t cuda;

/* Runs 16 threads on a new resource of kind over upstream; each failure a
 * thread counted is a failed check. */
static void on_resource(rmm_resource_kind kind, const char* what, rmm_resource_t upstream, size_t max_bytes,
                        int host) {
  rmm_resource_t mr = test_make(kind, upstream);
  if (mr == NULL) {
    return;
  }
  test_add_failures(run_threads(what, mr, max_bytes, host));
  EXPECT_OK(rmm_resource_release(mr));
}

static void test_base_resources(void) {
  on_resource(RMM_RESOURCE_CUDA, "cuda", NULL, 1 << 20, 0);
  on_resource(RMM_RESOURCE_MANAGED, "managed", NULL, 1 << 16, 0);
  on_resource(RMM_RESOURCE_PINNED_HOST, "pinned_host", NULL, 1 << 16, 1);
  on_resource(RMM_RESOURCE_CUDA_ASYNC, "cuda_async", NULL, 1 << 20, 0);
}

static void test_sub_allocators(void) {
  on_resource(RMM_RESOURCE_POOL, "pool over cuda", cuda, 1 << 20, 0);
  on_resource(RMM_RESOURCE_ARENA, "arena over cuda", cuda, 1 << 18, 0);
  on_resource(RMM_RESOURCE_FIXED_SIZE, "fixed_size over cuda", cuda, 1 << 16, 0);
  on_resource(RMM_RESOURCE_BINNING, "binning over cuda", cuda, 1 << 18, 0);
}

static void test_adaptors(void) {
  on_resource(RMM_RESOURCE_THREAD_SAFE, "thread_safe over cuda", cuda, 1 << 18, 0);
  on_resource(RMM_RESOURCE_TRACKING, "tracking over cuda", cuda, 1 << 18, 0);
  on_resource(RMM_RESOURCE_LIMITING, "limiting over cuda", cuda, 1 << 18, 0);
  on_resource(RMM_RESOURCE_ALIGNED, "aligned over cuda", cuda, 1 << 18, 0);
}

/* statistics over a pool: the counters add up after 16 threads */
static void test_statistics_over_pool(void) {
  rmm_resource_t pool = NULL, stats = NULL;
  rmm_resource_options o;
  rmm_statistics st;
  int f;
  pool = test_make(RMM_RESOURCE_POOL, cuda);
  if (pool == NULL) {
    return;
  }
  rmm_resource_options_init(&o);
  o.upstream = pool;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  f = run_threads("statistics over pool", stats, 1 << 18, 0);
  EXPECT(f == 0);
  st.struct_size = sizeof st;
  EXPECT_OK(rmm_statistics_get(stats, &st));
  EXPECT(st.bytes.value == 0 && st.count.value == 0);
  EXPECT(st.count.total > THREADS * ITERATIONS / 3);
  EXPECT(st.count.peak <= MAX_LIVE);
  EXPECT_OK(rmm_resource_release(stats));
  EXPECT_OK(rmm_resource_release(pool));
}

static void test_handle_churn(void) {
  shared_upstream = cuda;
  EXPECT(run_churn() == 0);
}

static int setup(void) { return test_setup_cuda(&cuda); }

static void teardown(void) { EXPECT_OK(rmm_resource_release(cuda)); }

static const test_case tests[] = {
    TEST(test_base_resources), TEST(test_sub_allocators), TEST(test_adaptors),
    TEST(test_statistics_over_pool), TEST(test_handle_churn),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
