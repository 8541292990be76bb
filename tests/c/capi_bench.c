/*
 * capi_bench.c -- what the C ABI costs: a call into the library, and
 * rmm_allocate + rmm_deallocate on the cuda resource (and a pool when there
 * is one), against cudaMalloc + cudaFree called directly in the same run
 * when the backend is the real GPU. Median per operation over batches.
 *
 *   make bench-c                      (or run build/c/capi_bench)
 *   capi_bench [bytes] [batches]      defaults: 1 MiB, 21 batches
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmmgo.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

#define MAX_BATCHES 101

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return v[n / 2];
}

static int failures;

/* Times ops operations per batch of `one`, which runs one operation and
 * returns nonzero on failure. */
typedef int (*op_fn)(void* ctx);

static double measure(const char* what, op_fn one, void* ctx, int ops, int batches) {
  double t[MAX_BATCHES];
  int b, i;
  for (i = 0; i < ops / 10 + 1; i++) { /* warm up */
    if (one(ctx) != 0) {
      fprintf(stderr, "FAIL %s: %s\n", what, rmm_last_error_message());
      failures++;
      return -1;
    }
  }
  for (b = 0; b < batches; b++) {
    double t0 = now_ns();
    for (i = 0; i < ops; i++) {
      if (one(ctx) != 0) {
        fprintf(stderr, "FAIL %s: %s\n", what, rmm_last_error_message());
        failures++;
        return -1;
      }
    }
    t[b] = (now_ns() - t0) / ops;
  }
  {
    double m = median(t, batches);
    printf("capi_bench: %-44s %10.1f ns/op (median of %d batches of %d)\n", what, m, batches, ops);
    return m;
  }
}

/* ------------------------------------------------------------ operations */

struct alloc_ctx {
  rmm_resource_t mr;
  size_t bytes;
};

static int op_kind_of(void* ctx) {
  rmm_resource_kind k;
  return rmm_resource_kind_of(((struct alloc_ctx*)ctx)->mr, &k) != RMM_SUCCESS;
}

static int op_bad_handle(void* ctx) {
  void* p = NULL;
  (void)ctx;
  return rmm_allocate((rmm_resource_t)(uintptr_t)0x1234, NULL, 256, 256, &p) != RMM_ERROR_INVALID_HANDLE;
}

static int op_alloc_free(void* ctx) {
  struct alloc_ctx* c = (struct alloc_ctx*)ctx;
  void* p = NULL;
  if (rmm_allocate(c->mr, NULL, c->bytes, 256, &p) != RMM_SUCCESS) {
    return 1;
  }
  return rmm_deallocate(c->mr, NULL, p, c->bytes, 256) != RMM_SUCCESS;
}

/* ------------------------------------------- many C threads at once */

/* Every thread runs `ops` operations of `one` on its own context after a
 * common start; the aggregate rate is all threads' ops over the wall time
 * from the start to the last thread's end. This is what shows whether a
 * crossing from C into Go scales with threads. */
struct thread_arg {
  op_fn one;
  void* ctx;
  int ops;
  int failed;
  pthread_barrier_t* start;
};

static void* thread_body(void* p) {
  struct thread_arg* a = (struct thread_arg*)p;
  int i;
  pthread_barrier_wait(a->start);
  for (i = 0; i < a->ops; i++) {
    if (a->one(a->ctx) != 0) {
      a->failed = 1;
      break;
    }
  }
  return NULL;
}

/* Returns the median aggregate rate in millions of ops per second. */
static double measure_threads(const char* what, op_fn one, struct alloc_ctx* ctxs, int nthreads, int ops, int reps) {
  double rate[MAX_BATCHES];
  pthread_t th[64];
  struct thread_arg args[64];
  pthread_barrier_t start;
  int r, t, bad = 0;
  for (r = 0; r < reps; r++) {
    double t0;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
    for (t = 0; t < nthreads; t++) {
      args[t].one = one;
      args[t].ctx = &ctxs[t];
      args[t].ops = ops;
      args[t].failed = 0;
      args[t].start = &start;
      pthread_create(&th[t], NULL, thread_body, &args[t]);
    }
    pthread_barrier_wait(&start);
    t0 = now_ns();
    for (t = 0; t < nthreads; t++) {
      pthread_join(th[t], NULL);
      bad |= args[t].failed;
    }
    rate[r] = (double)nthreads * ops / (now_ns() - t0) * 1e3;
    pthread_barrier_destroy(&start);
  }
  if (bad) {
    fprintf(stderr, "FAIL %s, %d threads: %s\n", what, nthreads, rmm_last_error_message());
    failures++;
    return -1;
  }
  {
    double m = median(rate, reps);
    printf("capi_bench: %-36s %2d threads %8.2f M ops/s aggregate (%.1f ns per op per thread; median of %d)\n", what,
           nthreads, m, nthreads * 1e3 / m, reps);
    return m;
  }
}

/* cudaMalloc / cudaFree straight from libcudart, for the real GPU. */
typedef int (*cuda_malloc_fn)(void**, size_t);
typedef int (*cuda_free_fn)(void*);
static cuda_malloc_fn cuda_malloc;
static cuda_free_fn cuda_free;

static int op_cuda_direct(void* ctx) {
  struct alloc_ctx* c = (struct alloc_ctx*)ctx;
  void* p = NULL;
  if (cuda_malloc(&p, c->bytes) != 0) {
    return 1;
  }
  return cuda_free(p) != 0;
}

static int load_cudart(void) {
  const char* names[] = {NULL, "libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  void* h = NULL;
  int i;
  names[0] = getenv("RMMGO_CUDART_LIBRARY");
  for (i = 0; i < 4 && h == NULL; i++) {
    if (names[i] != NULL && names[i][0] != '\0') {
      h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (h == NULL) {
    return 0;
  }
  *(void**)&cuda_malloc = dlsym(h, "cudaMalloc");
  *(void**)&cuda_free = dlsym(h, "cudaFree");
  return cuda_malloc != NULL && cuda_free != NULL;
}

int main(int argc, char** argv) {
  struct alloc_ctx c;
  rmm_resource_t cuda = NULL, pool = NULL;
  rmm_resource_options o;
  const char* backend = NULL;
  size_t bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)1 << 20;
  int batches = argc > 2 ? atoi(argv[2]) : 21;
  int ops_slow, ops_fast = 20000;
  char what[96];
  int real;

  if (batches < 1 || batches > MAX_BATCHES) {
    batches = 21;
  }
  if (rmm_backend_name(&backend) != RMM_SUCCESS || rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS) {
    fprintf(stderr, "capi_bench: %s\n", rmm_last_error_message());
    return 1;
  }
  real = strcmp(backend, "cuda") == 0;
  ops_slow = real ? 200 : 2000;
  printf("capi_bench: backend %s%s, rmmgo %s, %zu-byte allocations\n", backend,
         real ? "" : " (SIMULATED device: figures are not GPU figures)", rmm_version(), bytes);

  c.mr = cuda;
  c.bytes = bytes;
  measure("call into the library (rmm_resource_kind_of)", op_kind_of, &c, ops_fast, batches);
  measure("rejected forged handle (rmm_allocate)", op_bad_handle, &c, ops_fast, batches);
  snprintf(what, sizeof what, "rmm_allocate+rmm_deallocate, cuda, %zu B", bytes);
  measure(what, op_alloc_free, &c, ops_slow, batches);
  if (real) {
    if (load_cudart()) {
      snprintf(what, sizeof what, "cudaMalloc+cudaFree direct, %zu B", bytes);
      measure(what, op_cuda_direct, &c, ops_slow, batches);
    } else {
      printf("capi_bench: libcudart not loadable here: no direct comparison\n");
    }
  }

  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = (size_t)64 << 20;
  if (rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool) == RMM_SUCCESS) {
    struct alloc_ctx per[16];
    int counts[] = {1, 2, 4, 8, 16}, k, t;
    c.mr = pool;
    snprintf(what, sizeof what, "rmm_allocate+rmm_deallocate, pool, %zu B", bytes);
    measure(what, op_alloc_free, &c, ops_fast, batches);
    /* Scaling with C threads: a bare crossing, then a pool allocation and
     * free (256 B, so that 16 threads fit in the pool). */
    for (t = 0; t < 16; t++) {
      per[t].mr = pool;
      per[t].bytes = 256;
    }
    for (k = 0; k < 5; k++) {
      measure_threads("crossing (rmm_resource_kind_of)", op_kind_of, per, counts[k], ops_fast * 10, 5);
    }
    for (k = 0; k < 5; k++) {
      measure_threads("pool allocate+free, 256 B", op_alloc_free, per, counts[k], ops_fast * 5, 5);
    }
    rmm_resource_release(pool);
  } else {
    printf("capi_bench: no pool here (%s)\n", rmm_last_error_message());
  }

  rmm_resource_release(cuda);
  printf("%d passed, %d failed\n", failures == 0, failures);
  return failures == 0 ? 0 : 1;
}
