/*
 * out_of_memory_test.c -- the out-of-memory report in the C ABI (the
 * message and rmm_last_out_of_memory_report's JSON, through the thread
 * caches' path too), memory snapshots, and pressure resources under 16 C
 * threads (docs/out-of-memory.md).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"

#define MiB ((size_t)1 << 20)

/* A pool of 64 MiB at most, filled with 2 MiB blocks, every other one freed:
 * 32 MiB free, none larger than 2 MiB. */
static rmm_resource_t fragmented_pool(rmm_resource_t* cuda, void** live) {
  rmm_resource_options o;
  rmm_resource_t pool = NULL;
  void* all[32];
  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, cuda) != RMM_SUCCESS) {
    return NULL;
  }
  rmm_resource_options_init(&o);
  o.upstream = *cuda;
  o.initial_pool_size = 64 * MiB;
  o.maximum_pool_size = 64 * MiB;
  if (rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool) != RMM_SUCCESS) {
    return NULL;
  }
  for (int i = 0; i < 32; i++) {
    if (rmm_allocate(pool, NULL, 2 * MiB, 256, &all[i]) != RMM_SUCCESS) {
      return NULL;
    }
  }
  for (int i = 0; i < 32; i++) {
    if (i % 2 == 0) {
      rmm_deallocate(pool, NULL, all[i], 2 * MiB, 256);
    } else {
      live[i / 2] = all[i];
    }
  }
  return pool;
}

static void test_report(void) {
  rmm_resource_t cuda = NULL, pool;
  void* live[16];
  void* p = NULL;
  pool = fragmented_pool(&cuda, live);
  if (pool == NULL) {
    EXPECT(!"making the fragmented pool");
    return;
  }
  EXPECT_STATUS(rmm_allocate(pool, NULL, 4 * MiB, 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_MESSAGE_HAS("Maximum pool size exceeded");
  EXPECT_MESSAGE_HAS("resources: pool -> cuda");
  EXPECT_MESSAGE_HAS("pool: 32.0 MiB live, 64.0 MiB reserved (maximum 64.0 MiB); 32.0 MiB free in 16 blocks, the largest 2.0 MiB");
  EXPECT_MESSAGE_HAS("reading: 32.0 MiB free in the pool but the largest block is 2.0 MiB: fragmentation");
  const char* js = rmm_last_out_of_memory_report();
  EXPECT(strstr(js, "\"largest_free\":2097152") != NULL);
  EXPECT(strstr(js, "\"bytes\":4194304") != NULL);
  EXPECT(strstr(js, "\"chain\":[\"pool\",\"cuda\"]") != NULL);
  /* Another failure that is not out of memory clears it. */
  EXPECT_STATUS(rmm_allocate(pool, NULL, 256, 3, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT(strcmp(rmm_last_out_of_memory_report(), "") == 0);
  /* A snapshot: JSON in a buffer, and files. */
  char* snap = NULL;
  EXPECT_OK(rmm_memory_snapshot_json(pool, &snap));
  EXPECT(snap != NULL && strstr(snap, "\"active_allocated\"") != NULL && strstr(snap, "\"inactive\"") != NULL);
  rmm_string_free(snap);
  EXPECT_OK(rmm_memory_snapshot(pool, "oom_snapshot.pickle"));
  EXPECT_OK(rmm_memory_snapshot(pool, "oom_snapshot.json"));
  FILE* f = fopen("oom_snapshot.pickle", "rb");
  EXPECT(f != NULL);
  if (f != NULL) {
    unsigned char head[2] = {0, 0};
    EXPECT(fread(head, 1, 2, f) == 2 && head[0] == 0x80 && head[1] == 2);
    fclose(f);
  }
  for (int i = 0; i < 16; i++) {
    EXPECT_OK(rmm_deallocate(pool, NULL, live[i], 2 * MiB, 256));
  }
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT_OK(rmm_resource_release(cuda));
}

/* 16 C threads through a pressure resource: per threshold the crossings
 * alternate up and down, and end down. */
#define NTHREADS 16
#define NTHRESH 3
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static int ev_count[NTHRESH];
static int ev_last_up[NTHRESH];
static int ev_bad;
static atomic_int in_callback;
static const size_t thresholds[NTHRESH] = {4 * MiB, 8 * MiB, 16 * MiB};

static void on_cross(size_t threshold, size_t live, int up, void* arg) {
  (void)arg;
  if (atomic_fetch_add(&in_callback, 1) != 0) {
    ev_bad++;
  }
  pthread_mutex_lock(&ev_mu);
  for (int i = 0; i < NTHRESH; i++) {
    if (thresholds[i] == threshold) {
      if (ev_count[i] % 2 != (up ? 0 : 1)) {
        ev_bad++;
      }
      if ((up && live < threshold) || (!up && live >= threshold)) {
        ev_bad++;
      }
      ev_count[i]++;
      ev_last_up[i] = up;
    }
  }
  pthread_mutex_unlock(&ev_mu);
  atomic_fetch_sub(&in_callback, 1);
}

static rmm_resource_t pressure_mr;
static pthread_barrier_t barrier;
static atomic_int thread_errors;

static void* churn(void* arg) {
  (void)arg;
  void* held[8];
  for (int round = 0; round < 6; round++) {
    for (int i = 0; i < 8; i++) {
      if (rmm_allocate(pressure_mr, NULL, 512 << 10, 256, &held[i]) != RMM_SUCCESS) {
        atomic_fetch_add(&thread_errors, 1);
        held[i] = NULL;
      }
    }
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < 8; i++) {
      if (held[i] != NULL && rmm_deallocate(pressure_mr, NULL, held[i], 512 << 10, 256) != RMM_SUCCESS) {
        atomic_fetch_add(&thread_errors, 1);
      }
    }
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

static void test_pressure_16_threads(void) {
  rmm_resource_t cuda = NULL, pool = NULL;
  rmm_resource_options o;
  pthread_t th[NTHREADS];
  size_t live = 1;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = 64 * MiB;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  REQUIRE_OK(rmm_pressure_resource_create(pool, thresholds, NTHRESH, on_cross, NULL, NULL, 0, &pressure_mr));
  pthread_barrier_init(&barrier, NULL, NTHREADS);
  for (int i = 0; i < NTHREADS; i++) {
    pthread_create(&th[i], NULL, churn, NULL);
  }
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(th[i], NULL);
  }
  pthread_barrier_destroy(&barrier);
  EXPECT(atomic_load(&thread_errors) == 0);
  EXPECT(ev_bad == 0);
  for (int i = 0; i < NTHRESH; i++) {
    EXPECT(ev_count[i] >= 2 && ev_count[i] % 2 == 0 && ev_last_up[i] == 0);
  }
  EXPECT_OK(rmm_pressure_live_bytes(pressure_mr, &live));
  EXPECT(live == 0);
  printf("note: crossings %d %d %d\n", ev_count[0], ev_count[1], ev_count[2]);
  EXPECT_OK(rmm_resource_release(pressure_mr));
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT_OK(rmm_resource_release(cuda));
}

/* The failure callback gets the retry count and spills. */
static void* spill[64];
static int nspill;
static int max_retry = -1;
static rmm_resource_t spill_mr;

static int on_failure(size_t bytes, int retry, void* arg) {
  (void)arg;
  (void)bytes;
  if (retry > max_retry) {
    max_retry = retry;
  }
  if (retry == 0) {
    return strstr(rmm_last_out_of_memory_report(), "\"reading\"") != NULL; /* the report is readable here */
  }
  if (nspill == 0) {
    return 0;
  }
  nspill--;
  return rmm_deallocate(spill_mr, NULL, spill[nspill], MiB, 256) == RMM_SUCCESS;
}

static void test_pressure_failure(void) {
  rmm_resource_t cuda = NULL, pool = NULL;
  rmm_resource_options o;
  void* p = NULL;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = 16 * MiB;
  o.maximum_pool_size = 16 * MiB;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  REQUIRE_OK(rmm_pressure_resource_create(pool, NULL, 0, NULL, on_failure, NULL, 32, &spill_mr));
  while (nspill < 16 && rmm_allocate(spill_mr, NULL, MiB, 256, &spill[nspill]) == RMM_SUCCESS) {
    nspill++;
  }
  EXPECT(nspill == 16);
  EXPECT_OK(rmm_allocate(spill_mr, NULL, MiB, 256, &p)); /* fails, retries, spills one, succeeds */
  EXPECT(max_retry == 1 && nspill == 15);
  EXPECT_OK(rmm_deallocate(spill_mr, NULL, p, MiB, 256));
  char* snap = NULL;
  EXPECT_OK(rmm_memory_snapshot_json(spill_mr, &snap));
  EXPECT(snap != NULL && strstr(snap, "\"oom\"") != NULL && strstr(snap, "\"free_completed\"") != NULL);
  rmm_string_free(snap);
  while (nspill > 0) {
    nspill--;
    EXPECT_OK(rmm_deallocate(spill_mr, NULL, spill[nspill], MiB, 256));
  }
  EXPECT_OK(rmm_resource_release(spill_mr));
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT_OK(rmm_resource_release(cuda));
}

static const test_case tests[] = {
    TEST(test_report),
    TEST(test_pressure_16_threads),
    TEST(test_pressure_failure),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, NULL, NULL); }
