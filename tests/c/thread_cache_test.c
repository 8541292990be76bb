/*
 * thread_cache_test.c -- the per-thread cache behind rmm_allocate and
 * rmm_deallocate (docs/thread-cache.md): reuse on the same stream only,
 * exact errors for double frees, wrong sizes, foreign pointers and released
 * handles, frees from another thread, many threads on one resource, thread
 * exit with full caches, exact pool used bytes, out-of-memory with memory
 * parked in another thread's cache, growth with memory parked there, and
 * stream destruction (every call naming a destroyed stream fails).
 *
 * Every check holds with the cache off too (RMMGO_THREAD_CACHE=0), except
 * the few that only the cache promises (same block back at once), which
 * run only when it is on.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>

#include "test_util.h"

static bool cache_on(void) {
  const char* v = getenv("RMMGO_THREAD_CACHE");
  return !(v != NULL && (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "false") == 0 ||
                         strcasecmp(v, "no") == 0));
}

static rmm_resource_t cuda;

/* A pool over `up` with the given initial and maximum sizes. */
static rmm_resource_t make_pool(rmm_resource_t up, size_t initial, size_t maximum) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  rmm_resource_options_init(&o);
  o.upstream = up;
  o.initial_pool_size = initial;
  o.maximum_pool_size = maximum;
  if (rmm_resource_create(RMM_RESOURCE_POOL, &o, &mr) != RMM_SUCCESS) {
    fprintf(stderr, "FAIL: pool: %s\n", rmm_last_error_message());
    test_failed_count++;
    return NULL;
  }
  return mr;
}

static size_t used(rmm_resource_t pool) {
  size_t n = (size_t)-1;
  if (rmm_pool_used_bytes(pool, &n) != RMM_SUCCESS) {
    fprintf(stderr, "rmm_pool_used_bytes: %s\n", rmm_last_error_message());
  }
  return n;
}

static size_t round256(size_t n) { return (n + 255) & ~(size_t)255; }

/* ------------------------------------------------------ single thread */

static void check_reuse_and_streams(rmm_resource_t mr, const char* name) {
  void *p = NULL, *q = NULL, *r = NULL;
  rmm_stream_t s1 = NULL, s2 = NULL;
  printf("-- reuse and streams: %s\n", name);
  EXPECT_OK(rmm_allocate(mr, NULL, 1000, 256, &p));
  EXPECT(p != NULL && (uintptr_t)p % 256 == 0);
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 1000, 256));
  EXPECT_OK(rmm_allocate(mr, NULL, 900, 256, &q)); /* same class, same stream */
  if (cache_on()) {
    EXPECT(q == p);
  }
  EXPECT_OK(rmm_deallocate(mr, NULL, q, 900, 256));

  /* Freed on s1: later work on s1 may reuse it, s2 may not (unordered). */
  EXPECT_OK(rmm_stream_create(&s1));
  EXPECT_OK(rmm_stream_create(&s2));
  EXPECT_OK(rmm_allocate(mr, s1, 2000, 256, &p));
  EXPECT_OK(rmm_deallocate(mr, s1, p, 2000, 256));
  EXPECT_OK(rmm_allocate(mr, s2, 2000, 256, &q));
  EXPECT(q != p);
  EXPECT_OK(rmm_allocate(mr, s1, 1900, 256, &r));
  if (cache_on()) {
    EXPECT(r == p);
  }
  EXPECT(r != q);
  EXPECT_OK(rmm_deallocate(mr, s2, q, 2000, 256));
  EXPECT_OK(rmm_deallocate(mr, s1, r, 1900, 256));
  EXPECT_OK(rmm_stream_destroy(s1));
  EXPECT_OK(rmm_stream_destroy(s2));
}

static void check_errors(rmm_resource_t mr, rmm_resource_kind kind, const char* name) {
  void *p = NULL, *q = NULL;
  printf("-- errors: %s\n", name);
  rmm_resource_t other = make_pool(cuda, 0, RMM_SIZE_DEFAULT);
  if (other == NULL) {
    return;
  }
  /* Double free of a block the cache now holds. */
  EXPECT_OK(rmm_allocate(mr, NULL, 3000, 256, &p));
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 3000, 256));
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, 3000, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_MESSAGE_HAS("rmm_deallocate");
  EXPECT_MESSAGE_HAS("deallocated already");
  EXPECT_STATUS(rmm_deallocate_sync(mr, p, 3000, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_MESSAGE_HAS("rmm_deallocate_sync");

  /* Wrong size: as the Go resource says it (pool: invalid argument; arena:
   * invalid pointer; fixed_size: more than a block). The block stays live
   * and is then freed with its size. */
  EXPECT_OK(rmm_allocate(mr, NULL, 3000, 256, &p));
  rmm_status want = kind == RMM_RESOURCE_ARENA || kind == RMM_RESOURCE_BINNING ? RMM_ERROR_INVALID_POINTER
                                                                               : RMM_ERROR_INVALID_ARGUMENT;
  size_t wrong = kind == RMM_RESOURCE_FIXED_SIZE ? ((size_t)1 << 20) : 20000;
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, wrong, 256), want);
  EXPECT_MESSAGE_HAS("rmm_deallocate(");
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 3000, 256));

  /* Bad alignment on free: rejected, the block untouched. */
  EXPECT_OK(rmm_allocate(mr, NULL, 3000, 256, &p));
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, 3000, 3), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 3000, 256));

  /* Foreign pointers: bogus, and another live resource's. */
  EXPECT_STATUS(rmm_deallocate(mr, NULL, (void*)(uintptr_t)0x12345600, 3000, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_MESSAGE_HAS("0x12345600");
  EXPECT_OK(rmm_allocate(other, NULL, 3000, 256, &q));
  EXPECT_STATUS(rmm_deallocate(mr, NULL, q, 3000, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_OK(rmm_deallocate(other, NULL, q, 3000, 256)); /* still other's, and live */
  EXPECT_OK(rmm_allocate(mr, NULL, 3000, 256, &p));
  EXPECT_STATUS(rmm_deallocate(other, NULL, p, 3000, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 3000, 256));

  /* NULL and zero sizes as before. */
  EXPECT_OK(rmm_deallocate(mr, NULL, NULL, 3000, 256));
  EXPECT_OK(rmm_allocate(mr, NULL, 0, 256, &p));
  EXPECT(p == NULL);
  EXPECT_STATUS(rmm_allocate(mr, NULL, 3000, 256, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_allocate(mr, NULL, 3000, 512, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_OK(rmm_resource_release(other));
}

static void test_released_handle(void) {
  void *p = NULL, *q = NULL;
  printf("-- released handle\n");
  rmm_resource_t mr = make_pool(cuda, 0, RMM_SIZE_DEFAULT);
  if (mr == NULL) {
    return;
  }
  EXPECT_OK(rmm_allocate(mr, NULL, 1000, 256, &p));
  EXPECT_OK(rmm_allocate(mr, NULL, 1000, 256, &q));
  EXPECT_OK(rmm_deallocate(mr, NULL, q, 1000, 256)); /* q cached */
  EXPECT_OK(rmm_resource_release(mr));
  EXPECT_STATUS(rmm_allocate(mr, NULL, 1000, 256, &q), RMM_ERROR_INVALID_HANDLE);
  EXPECT_MESSAGE_HAS("rmm_allocate");
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, 1000, 256), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_deallocate_sync(mr, p, 1000, 256), RMM_ERROR_INVALID_HANDLE);
  /* A new pool may get the same slot, with another generation. */
  rmm_resource_t again = make_pool(cuda, 0, RMM_SIZE_DEFAULT);
  EXPECT(again != mr);
  EXPECT_STATUS(rmm_allocate(mr, NULL, 1000, 256, &q), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_deallocate(again, NULL, p, 1000, 256), RMM_ERROR_INVALID_POINTER); /* the old pool's */
  EXPECT_OK(rmm_resource_release(again));
  /* Forged handles. */
  EXPECT_STATUS(rmm_allocate((rmm_resource_t)(uintptr_t)0x1234, NULL, 1000, 256, &q), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_deallocate((rmm_resource_t)(uintptr_t)0x1234, NULL, p, 1000, 256), RMM_ERROR_INVALID_HANDLE);
}

static void test_used_bytes(void) {
  printf("-- pool used bytes\n");
  rmm_resource_t pool = make_pool(cuda, 0, RMM_SIZE_DEFAULT);
  if (pool == NULL) {
    return;
  }
  static const size_t sizes[] = {1, 1000, 4096, 5000, 70000, 300000, 1u << 20, 3u << 20, 6u << 20};
  enum { N = sizeof sizes / sizeof sizes[0] };
  void* p[N];
  for (int round = 0; round < 3; round++) {
    size_t want = 0;
    for (int i = 0; i < N; i++) {
      EXPECT_OK(rmm_allocate(pool, NULL, sizes[i], 256, &p[i]));
      want += round256(sizes[i]);
    }
    EXPECT(used(pool) == want);
    for (int i = 0; i < N; i += 2) {
      EXPECT_OK(rmm_deallocate(pool, NULL, p[i], sizes[i], 256));
      want -= round256(sizes[i]);
    }
    EXPECT(used(pool) == want);
    for (int i = 1; i < N; i += 2) {
      EXPECT_OK(rmm_deallocate(pool, NULL, p[i], sizes[i], 256));
    }
    EXPECT(used(pool) == 0);
  }
  EXPECT_OK(rmm_resource_release(pool));
}

/* --------------------------------------------------- threads helpers */

typedef struct {
  rmm_resource_t mr;
  void** ptrs;
  size_t n, size;
  int failures;
} batch;

static void* free_batch(void* arg) {
  batch* b = arg;
  for (size_t i = 0; i < b->n; i++) {
    if (rmm_deallocate(b->mr, NULL, b->ptrs[i], b->size, 256) != RMM_SUCCESS) {
      fprintf(stderr, "free in another thread: %s\n", rmm_last_error_message());
      b->failures++;
    }
  }
  return NULL;
}

static void test_cross_thread_free(void) {
  printf("-- free in another thread\n");
  rmm_resource_t pool = make_pool(cuda, 0, RMM_SIZE_DEFAULT);
  if (pool == NULL) {
    return;
  }
  enum { N = 200 };
  void* ptrs[N];
  for (int i = 0; i < N; i++) {
    EXPECT_OK(rmm_allocate(pool, NULL, 1500, 256, &ptrs[i]));
  }
  batch b = {pool, ptrs, N, 1500, 0};
  pthread_t t;
  pthread_create(&t, NULL, free_batch, &b);
  pthread_join(t, NULL);
  EXPECT(b.failures == 0);
  EXPECT(used(pool) == 0);
  /* And back: the other thread's frees are no double frees here. */
  EXPECT_STATUS(rmm_deallocate(pool, NULL, ptrs[0], 1500, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_OK(rmm_resource_release(pool));
}

/* ---------------------------------------------------------- hammering */

enum { HAMMER_THREADS = 16, HAMMER_LIVE = 48, HAMMER_ROUNDS = 4, HAMMER_STEPS = 1500 };

typedef struct {
  void* ptr;
  size_t size;
} block;

static struct {
  rmm_resource_t mr;
  size_t max_size;
  pthread_barrier_t barrier;
  block live[HAMMER_THREADS][HAMMER_LIVE];
  int failures;
  pthread_mutex_t mu;
} hammer;

static void hammer_fail(const char* what) {
  pthread_mutex_lock(&hammer.mu);
  if (hammer.failures++ < 5) {
    fprintf(stderr, "hammer: %s: %s\n", what, rmm_last_error_message());
  }
  pthread_mutex_unlock(&hammer.mu);
}

static int cmp_block(const void* a, const void* b) {
  uintptr_t x = (uintptr_t)((const block*)a)->ptr, y = (uintptr_t)((const block*)b)->ptr;
  return x < y ? -1 : x > y;
}

/* No two live blocks of all threads overlap (run by one thread at a barrier). */
static void hammer_check_overlap(void) {
  static block all[HAMMER_THREADS * HAMMER_LIVE];
  size_t n = 0;
  for (int t = 0; t < HAMMER_THREADS; t++) {
    for (int i = 0; i < HAMMER_LIVE; i++) {
      if (hammer.live[t][i].ptr != NULL) {
        all[n++] = hammer.live[t][i];
      }
    }
  }
  qsort(all, n, sizeof all[0], cmp_block);
  for (size_t i = 1; i < n; i++) {
    if ((uintptr_t)all[i - 1].ptr + all[i - 1].size > (uintptr_t)all[i].ptr) {
      hammer_fail("two live blocks overlap");
    }
  }
}

static void* hammer_thread(void* arg) {
  int t = (int)(intptr_t)arg;
  unsigned seed = 12345u + (unsigned)t * 7919u;
  rmm_stream_t stream = NULL;
  if (t % 2 == 1 && rmm_stream_create(&stream) != RMM_SUCCESS) {
    hammer_fail("stream");
  }
  block* mine = hammer.live[t];
  for (int round = 0; round < HAMMER_ROUNDS; round++) {
    for (int step = 0; step < HAMMER_STEPS; step++) {
      int i = rand_r(&seed) % HAMMER_LIVE;
      if (mine[i].ptr == NULL) {
        size_t size = 1 + (size_t)rand_r(&seed) % hammer.max_size;
        void* p = NULL;
        if (rmm_allocate(hammer.mr, stream, size, 256, &p) != RMM_SUCCESS) {
          hammer_fail("allocate");
          continue;
        }
        if (p == NULL || (uintptr_t)p % 256 != 0) {
          hammer_fail("unaligned or NULL");
        }
        mine[i].ptr = p;
        mine[i].size = size;
        /* Mark it as ours now and then; checked before the free. */
        if (step % 16 == 0 && rmm_memset(p, t + 1, 64 < size ? 64 : size, stream) != RMM_SUCCESS) {
          hammer_fail("memset");
        }
      } else {
        if (step % 16 == 1) {
          unsigned char buf[64];
          size_t n = 64 < mine[i].size ? 64 : mine[i].size;
          (void)rmm_memset(mine[i].ptr, t + 1, n, stream);
          if (rmm_memcpy(buf, mine[i].ptr, n, stream) != RMM_SUCCESS || rmm_stream_synchronize(stream) != RMM_SUCCESS) {
            hammer_fail("memcpy");
          }
          for (size_t k = 0; k < n; k++) {
            if (buf[k] != (unsigned char)(t + 1)) {
              hammer_fail("pattern");
              break;
            }
          }
        }
        if (rmm_deallocate(hammer.mr, stream, mine[i].ptr, mine[i].size, 256) != RMM_SUCCESS) {
          hammer_fail("deallocate");
        }
        mine[i].ptr = NULL;
      }
    }
    if (stream != NULL) {
      (void)rmm_stream_synchronize(stream);
    }
    int r = pthread_barrier_wait(&hammer.barrier);
    if (r == PTHREAD_BARRIER_SERIAL_THREAD) {
      hammer_check_overlap();
    }
    pthread_barrier_wait(&hammer.barrier);
  }
  for (int i = 0; i < HAMMER_LIVE; i++) {
    if (mine[i].ptr != NULL && rmm_deallocate(hammer.mr, stream, mine[i].ptr, mine[i].size, 256) != RMM_SUCCESS) {
      hammer_fail("final deallocate");
    }
    mine[i].ptr = NULL;
  }
  if (stream != NULL && rmm_stream_destroy(stream) != RMM_SUCCESS) {
    hammer_fail("stream destroy");
  }
  return NULL;
}

static void check_hammer(rmm_resource_t mr, size_t max_size, const char* name) {
  pthread_t th[HAMMER_THREADS];
  memset(&hammer, 0, sizeof hammer);
  hammer.mr = mr;
  hammer.max_size = max_size;
  pthread_mutex_init(&hammer.mu, NULL);
  pthread_barrier_init(&hammer.barrier, NULL, HAMMER_THREADS);
  for (int t = 0; t < HAMMER_THREADS; t++) {
    pthread_create(&th[t], NULL, hammer_thread, (void*)(intptr_t)t);
  }
  for (int t = 0; t < HAMMER_THREADS; t++) {
    pthread_join(th[t], NULL);
  }
  pthread_barrier_destroy(&hammer.barrier);
  printf("-- %-12s %d threads x %d ops (sizes 1..%zu), %d failures\n", name, HAMMER_THREADS,
         HAMMER_ROUNDS * HAMMER_STEPS, max_size, hammer.failures);
  EXPECT(hammer.failures == 0);
}

/* ---------------------------------------------- thread exit and release */

static void* fill_and_exit(void* arg) {
  rmm_resource_t mr = arg;
  enum { N = 100 };
  void* p[N];
  for (int i = 0; i < N; i++) {
    size_t size = 256 + (size_t)(i % 20) * 700;
    if (rmm_allocate(mr, NULL, size, 256, &p[i]) != RMM_SUCCESS) {
      p[i] = NULL;
    }
  }
  for (int i = 0; i < N; i++) {
    size_t size = 256 + (size_t)(i % 20) * 700;
    (void)rmm_deallocate(mr, NULL, p[i], size, 256);
  }
  return NULL; /* exits with its cache full */
}

static void test_thread_exit(void) {
  printf("-- threads exit with full caches\n");
  rmm_resource_options o;
  rmm_resource_t stats = NULL;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  EXPECT_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  if (stats == NULL) {
    return;
  }
  rmm_resource_t pool = make_pool(stats, 0, RMM_SIZE_DEFAULT);
  if (pool == NULL) {
    return;
  }
  pthread_t th[8];
  for (int t = 0; t < 8; t++) {
    pthread_create(&th[t], NULL, fill_and_exit, pool);
  }
  for (int t = 0; t < 8; t++) {
    pthread_join(th[t], NULL);
  }
  EXPECT(used(pool) == 0);
  /* The next crossing gives the orphans back; still nothing used. */
  void* p = NULL;
  EXPECT_OK(rmm_allocate(pool, NULL, 100000, 256, &p));
  EXPECT_OK(rmm_deallocate(pool, NULL, p, 100000, 256));
  EXPECT(used(pool) == 0);
  /* What the pool holds from upstream is all it says it holds. */
  EXPECT_OK(rmm_pool_release(pool));
  size_t size = 1;
  EXPECT_OK(rmm_pool_size(pool, &size));
  rmm_statistics st;
  st.struct_size = sizeof st;
  EXPECT_OK(rmm_statistics_get(stats, &st));
  EXPECT((size_t)st.bytes.value == size);
  /* Threads leave caches behind again; releasing the pool takes them back. */
  for (int t = 0; t < 4; t++) {
    pthread_create(&th[t], NULL, fill_and_exit, pool);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(th[t], NULL);
  }
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT_OK(rmm_statistics_get(stats, &st));
  EXPECT(st.bytes.value == 0);
  EXPECT_OK(rmm_resource_release(stats));
}

/* ------------------------------------------ out of memory, parked blocks */

static struct {
  rmm_resource_t pool;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stage;
  int failures;
} park;

static void park_wait(int stage) {
  pthread_mutex_lock(&park.mu);
  while (park.stage < stage) {
    pthread_cond_wait(&park.cv, &park.mu);
  }
  pthread_mutex_unlock(&park.mu);
}

static void park_set(int stage) {
  pthread_mutex_lock(&park.mu);
  park.stage = stage;
  pthread_cond_broadcast(&park.cv);
  pthread_mutex_unlock(&park.mu);
}

static void* park_thread(void* arg) {
  (void)arg;
  /* 16 blocks each of the 80, 96, 112 and 128 KiB classes (6.5 MiB), all
   * freed: the cache keeps them (within every class's and the pair's cap). */
  enum { CLASSES = 4, PER = 16 };
  void* p[CLASSES][PER];
  for (int c = 0; c < CLASSES; c++) {
    for (int i = 0; i < PER; i++) {
      if (rmm_allocate(park.pool, NULL, (size_t)(80 + 16 * c) << 10, 256, &p[c][i]) != RMM_SUCCESS) {
        fprintf(stderr, "park: %s\n", rmm_last_error_message());
        park.failures++;
        p[c][i] = NULL;
      }
    }
  }
  for (int c = 0; c < CLASSES; c++) {
    for (int i = 0; i < PER; i++) {
      if (p[c][i] != NULL && rmm_deallocate(park.pool, NULL, p[c][i], (size_t)(80 + 16 * c) << 10, 256) != RMM_SUCCESS) {
        park.failures++;
      }
    }
  }
  park_set(1);
  park_wait(2); /* parked, alive, caches full */
  return NULL;
}

static void test_oom_parked(void) {
  printf("-- out of memory with blocks parked in another thread's cache\n");
  memset(&park, 0, sizeof park);
  pthread_mutex_init(&park.mu, NULL);
  pthread_cond_init(&park.cv, NULL);
  park.pool = make_pool(cuda, (size_t)8 << 20, (size_t)8 << 20);
  if (park.pool == NULL) {
    return;
  }
  pthread_t t;
  pthread_create(&t, NULL, park_thread, NULL);
  park_wait(1);
  EXPECT(used(park.pool) == 0);
  void *big = NULL, *mid = NULL;
  /* 6 MiB: only if the parked 6.5 MiB come back (8 MiB in all). */
  EXPECT_OK(rmm_allocate(park.pool, NULL, (size_t)6 << 20, 256, &big));
  EXPECT_OK(rmm_allocate(park.pool, NULL, (size_t)1 << 20, 256, &mid)); /* a cached class, refilled */
  EXPECT(used(park.pool) == ((size_t)7 << 20));
  void* none = NULL;
  EXPECT_STATUS(rmm_allocate(park.pool, NULL, (size_t)2 << 20, 256, &none), RMM_ERROR_OUT_OF_MEMORY);
  park_set(2);
  pthread_join(t, NULL);
  EXPECT(park.failures == 0);
  EXPECT_OK(rmm_deallocate(park.pool, NULL, big, (size_t)6 << 20, 256));
  EXPECT(used(park.pool) == ((size_t)1 << 20));
  EXPECT_OK(rmm_deallocate(park.pool, NULL, mid, (size_t)1 << 20, 256));
  EXPECT(used(park.pool) == 0);
  EXPECT_OK(rmm_resource_release(park.pool));
}

/* ------------------------------------------------------- stream destroy */

static void test_stream_destroy(void) {
  printf("-- stream destroy\n");
  rmm_resource_t pool = make_pool(cuda, 0, RMM_SIZE_DEFAULT);
  if (pool == NULL) {
    return;
  }
  rmm_stream_t s1 = NULL, s2 = NULL;
  void *p = NULL, *q = NULL;
  char c = 0;
  EXPECT_OK(rmm_stream_create(&s1));
  EXPECT_OK(rmm_allocate(pool, s1, 5000, 256, &p));
  EXPECT_OK(rmm_deallocate(pool, s1, p, 5000, 256)); /* cached under s1's id */
  EXPECT_OK(rmm_stream_destroy(s1));
  EXPECT(used(pool) == 0);
  /* Every call naming the destroyed stream fails, without asking CUDA
   * about it (on a GPU a destroyed stream's handle is a dangling pointer:
   * it crashed cuStreamGetId). */
  EXPECT_STATUS(rmm_allocate(pool, s1, 5000, 256, &q), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("was destroyed by rmm_stream_destroy");
  EXPECT_STATUS(rmm_allocate(pool, s1, 100 << 20, 256, &q), RMM_ERROR_INVALID_ARGUMENT); /* uncached */
  EXPECT_STATUS(rmm_deallocate(pool, s1, p, 5000, 256), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_stream_synchronize(s1), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_memset(&c, 0, 1, s1), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_memcpy(&c, &c, 1, s1), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_stream_destroy(s1), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("was destroyed by rmm_stream_destroy");
  /* A new stream of the same flags may be the same one, alive again, and
   * starts with nothing cached. */
  EXPECT_OK(rmm_stream_create(&s2));
  EXPECT_OK(rmm_allocate(pool, s2, 5000, 256, &q));
  EXPECT_OK(rmm_deallocate(pool, s2, q, 5000, 256));
  EXPECT_OK(rmm_stream_synchronize(s2));
  EXPECT_OK(rmm_stream_destroy(s2));
  EXPECT(used(pool) == 0);
  EXPECT_OK(rmm_resource_release(pool));
}

/* ------------------------------------------- growth takes parked blocks */

static void* park_small_thread(void* arg) {
  (void)arg;
  /* 16 blocks of 64 KiB, all freed: the cache keeps them (within its
   * budget, 2 MiB at least). */
  void* p[16];
  for (int i = 0; i < 16; i++) {
    if (rmm_allocate(park.pool, NULL, (size_t)64 << 10, 256, &p[i]) != RMM_SUCCESS) {
      park.failures++;
      p[i] = NULL;
    }
  }
  for (int i = 0; i < 16; i++) {
    if (p[i] != NULL && rmm_deallocate(park.pool, NULL, p[i], (size_t)64 << 10, 256) != RMM_SUCCESS) {
      park.failures++;
    }
  }
  park_set(1);
  park_wait(2);
  return NULL;
}

/* A pool that grows on demand takes back what thread caches keep before it
 * grows. */
static void test_growth_takes_parked_first(void) {
  printf("-- growth takes back parked blocks first\n");
  memset(&park, 0, sizeof park);
  pthread_mutex_init(&park.mu, NULL);
  pthread_cond_init(&park.cv, NULL);
  park.pool = make_pool(cuda, (size_t)4 << 20, RMM_SIZE_DEFAULT);
  if (park.pool == NULL) {
    return;
  }
  pthread_t t;
  pthread_create(&t, NULL, park_small_thread, NULL);
  park_wait(1);
  EXPECT(used(park.pool) == 0);
  void* big = NULL;
  EXPECT_OK(rmm_allocate(park.pool, NULL, (size_t)4 << 20, 256, &big));
  size_t size = 0;
  EXPECT_OK(rmm_pool_size(park.pool, &size));
  EXPECT(size == ((size_t)4 << 20)); /* no growth: the parked MiB came back */
  EXPECT(used(park.pool) == ((size_t)4 << 20));
  park_set(2);
  pthread_join(t, NULL);
  EXPECT(park.failures == 0);
  EXPECT_OK(rmm_deallocate(park.pool, NULL, big, (size_t)4 << 20, 256));
  EXPECT_OK(rmm_resource_release(park.pool));
}

/* ------------------------------------------------- per sub-allocator */

/* Reuse and streams, exact errors and 16 threads hammering, on a new
 * resource of kind over cuda. */
static void on_kind(rmm_resource_kind kind, const char* name, size_t max_size) {
  rmm_resource_t mr = test_make(kind, cuda);
  if (mr == NULL) {
    return;
  }
  check_reuse_and_streams(mr, name);
  check_errors(mr, kind, name);
  check_hammer(mr, max_size, name);
  EXPECT_OK(rmm_resource_release(mr));
}

static void test_pool(void) { on_kind(RMM_RESOURCE_POOL, "pool", (size_t)1 << 20); }
static void test_arena(void) { on_kind(RMM_RESOURCE_ARENA, "arena", (size_t)64 << 10); }
static void test_fixed_size(void) { on_kind(RMM_RESOURCE_FIXED_SIZE, "fixed_size", (size_t)64 << 10); }
static void test_binning(void) { on_kind(RMM_RESOURCE_BINNING, "binning", (size_t)64 << 10); }
/* The expandable resource (needs the driver's virtual memory management:
 * test_make skips it where there is none). */
static void test_expandable(void) { on_kind(RMM_RESOURCE_EXPANDABLE, "expandable", (size_t)1 << 20); }

static int setup(void) {
  const char* backend = "?";
  (void)rmm_backend_name(&backend);
  printf("backend: %s, thread cache %s\n", backend, cache_on() ? "on" : "off (RMMGO_THREAD_CACHE)");
  return rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS;
}

static void teardown(void) { EXPECT_OK(rmm_resource_release(cuda)); }

static const test_case tests[] = {
    TEST(test_pool),
    TEST(test_arena),
    TEST(test_fixed_size),
    TEST(test_binning),
    TEST(test_expandable),
    TEST(test_released_handle),
    TEST(test_used_bytes),
    TEST(test_cross_thread_free),
    TEST(test_thread_exit),
    TEST(test_oom_parked),
    TEST(test_stream_destroy),
    TEST(test_growth_takes_parked_first),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
