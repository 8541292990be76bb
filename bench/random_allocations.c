/*
 * random_allocations.c -- the random-allocations workload (its definition:
 * bench/README.md, "The random-allocations workload") through rmmgo.h, with
 * cudaMalloc / cudaFree and cudaMallocAsync / cudaFreeAsync measured in the
 * same run.
 *
 * Each thread runs its own copy of RMM's RANDOM_ALLOCATIONS loop on one
 * shared resource: 2 * num_allocations steps; each step draws a size
 * uniformly from 1 .. max_size; while something is live it allocates with
 * probability 73 % (and only while fewer than num_allocations were made and
 * live + size < max_usage), otherwise -- and when an allocation fails -- it
 * frees a live allocation chosen uniformly; whatever is live at the end is
 * freed. Every allocation and every free is one op. Alignment 256.
 *
 * The CUDA runtime for the baselines is loaded with dlopen (the library
 * rmmgo itself loads: RMMGO_CUDART_LIBRARY, libcudart.so.13, .12); on the
 * simulated backend the baselines are skipped. Before each cuda_async row,
 * cudaMallocFromPoolAsync / cudaFreeAsync are called directly on a pool made
 * as cuda_async makes its own (a fresh cuda_async resource's pool), and a
 * table at the end gives cuda_async's cost per op over that baseline's.
 *
 * --case fragmentation runs the fragmentation workload (bench/README.md,
 * "The fragmentation workload") instead: pool and expandable under one
 * maximum size, one thread.
 *
 * Output: a markdown report on stdout. Run with --help for the flags.
 */
#define _GNU_SOURCE
#include "rmmgo.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ------------------------------------------------------------- CUDA entry */

/* Our own prototypes for the few runtime and driver calls we make. */
typedef int (*cuda_malloc_fn)(void**, size_t);
typedef int (*cuda_free_fn)(void*);
typedef int (*cuda_malloc_async_fn)(void**, size_t, rmm_stream_t);
typedef int (*cuda_malloc_from_pool_fn)(void**, size_t, rmm_mem_pool_t, rmm_stream_t);
typedef int (*cuda_free_async_fn)(void*, rmm_stream_t);
typedef int (*cuda_default_mem_pool_fn)(rmm_mem_pool_t*, int);
typedef int (*cuda_mem_pool_attr_fn)(rmm_mem_pool_t, int, void*);
typedef int (*cuda_mem_pool_trim_fn)(rmm_mem_pool_t, size_t);
typedef int (*cuda_int_fn)(int);
typedef int (*cuda_void_fn)(void);
typedef const char* (*cuda_error_string_fn)(int);

enum { CUDA_MEM_POOL_ATTR_RELEASE_THRESHOLD = 4, CUDA_MEM_POOL_ATTR_RESERVED_MEM_HIGH = 6 };

static struct {
  bool loaded;
  char library[256];
  cuda_malloc_fn malloc_;
  cuda_free_fn free_;
  cuda_malloc_async_fn malloc_async;
  cuda_malloc_from_pool_fn malloc_from_pool;
  cuda_free_async_fn free_async;
  cuda_default_mem_pool_fn default_mem_pool;
  cuda_mem_pool_attr_fn pool_set;
  cuda_mem_pool_attr_fn pool_get;
  cuda_mem_pool_trim_fn pool_trim;
  cuda_int_fn set_device;
  cuda_void_fn device_synchronize;
  cuda_error_string_fn error_string;
} cu;

static bool load_cudart(char* why, size_t why_size) {
  const char* names[4] = {getenv("RMMGO_CUDART_LIBRARY"), "libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  void* lib = NULL;
  for (int i = 0; i < 4 && lib == NULL; i++) {
    if (names[i] == NULL || names[i][0] == '\0') continue;
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib != NULL) snprintf(cu.library, sizeof cu.library, "%s", names[i]);
  }
  if (lib == NULL) {
    snprintf(why, why_size, "cannot dlopen the CUDA runtime: %s", dlerror());
    return false;
  }
#define LOAD(field, sym)                                                     \
  do {                                                                       \
    *(void**)(&cu.field) = dlsym(lib, sym);                                  \
    if (cu.field == NULL) {                                                  \
      snprintf(why, why_size, "%s has no %s", cu.library, sym);              \
      return false;                                                          \
    }                                                                        \
  } while (0)
  LOAD(malloc_, "cudaMalloc");
  LOAD(free_, "cudaFree");
  LOAD(malloc_async, "cudaMallocAsync");
  LOAD(malloc_from_pool, "cudaMallocFromPoolAsync");
  LOAD(free_async, "cudaFreeAsync");
  LOAD(default_mem_pool, "cudaDeviceGetDefaultMemPool");
  LOAD(pool_set, "cudaMemPoolSetAttribute");
  LOAD(pool_get, "cudaMemPoolGetAttribute");
  LOAD(pool_trim, "cudaMemPoolTrimTo");
  LOAD(set_device, "cudaSetDevice");
  LOAD(device_synchronize, "cudaDeviceSynchronize");
  LOAD(error_string, "cudaGetErrorString");
#undef LOAD
  cu.loaded = true;
  return true;
}

/* The device's name through the driver API, or "" when unavailable. */
static void device_name(int device, char* out, size_t size) {
  out[0] = '\0';
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return;
  int (*init)(unsigned) = NULL;
  int (*get)(int*, int) = NULL;
  int (*name)(char*, int, int) = NULL;
  *(void**)(&init) = dlsym(lib, "cuInit");
  *(void**)(&get) = dlsym(lib, "cuDeviceGet");
  *(void**)(&name) = dlsym(lib, "cuDeviceGetName");
  int dev = 0;
  if (init == NULL || get == NULL || name == NULL || init(0) != 0 || get(&dev, device) != 0) return;
  if (name(out, (int)size, dev) != 0) out[0] = '\0';
}

/* --------------------------------------------------------------- options */

typedef struct {
  const char* name;
  size_t num_allocations;
  size_t max_size;
} bench_case;

enum { R_CUDA, R_CUDA_ASYNC, R_POOL, R_ARENA, R_BINNING, R_FIXED, R_EXPANDABLE, R_COUNT };

static const bench_case standard_cases[] = {
    {"small", 100000, 4u << 10},
    {"medium", 20000, 1u << 20},
    {"large", 2000, 64u << 20},
};

enum { MAX_THREAD_COUNTS = 16, MAX_THREADS = 1024 };

static struct {
  bool cases[4]; /* small, medium, large, fragmentation */
  size_t num_allocations; /* 0: the case's */
  size_t max_size;        /* 0: the case's */
  int threads[MAX_THREAD_COUNTS];
  int thread_count_n;
  int reps;
  int warmup;
  size_t max_usage; /* 0: 16,000 MiB on CUDA, a quarter of the device on the simulated one */
  bool max_usage_per_thread;
  bool fresh_threads; /* new threads for every repetition (--fresh-threads) */
  int stream_mode; /* 0 auto (own stream when threads > 1), 1 default stream, 2 own stream */
  bool resources[R_COUNT];
  bool baselines;
  bool cuda_malloc_baseline; /* false: --no-cudamalloc */
  bool efficiency;
  uint64_t seed;
  int device;
  size_t pool_initial; /* RMM_SIZE_DEFAULT: half the free memory */
  size_t arena_size;   /* RMM_SIZE_DEFAULT: half the free memory */
  int bin_min_exp, bin_max_exp;
  size_t fixed_blocks;
  double budget_s;
  bool cpu_timer; /* --timer cpu: the threads' CPU time instead of the wall clock */
  int adaptor;    /* --adaptor: wrap each resource in this adaptor kind (0: none) */
  const char* adaptor_name;
  size_t frag_cap; /* the fragmentation workload's maximum size; 0: 8 GiB on CUDA, a quarter of the device */
} opt;

static const char* resource_names[R_COUNT] = {"cuda", "cuda_async", "pool", "arena", "binning", "fixed_size", "expandable"};

static void usage(FILE* f) {
  fprintf(f,
          "usage: random_allocations [flags]\n"
          "  --case LIST           small,medium,large,fragmentation or all (default all)\n"
          "  --threads LIST        thread counts (default 1,4,16)\n"
          "  --reps N              timed repetitions, median reported (default 5)\n"
          "  --warmup N            untimed repetitions first (default 0)\n"
          "  --resource LIST       cuda,cuda_async,pool,arena,binning,fixed_size,expandable or all (default all)\n"
          "  --no-baselines        skip cudaMalloc and cudaMallocAsync\n"
          "  --no-cudamalloc       skip the cudaMalloc baseline only (it takes minutes at 16 threads)\n"
          "  --no-efficiency       skip the extra untimed repetition that measures peak live bytes\n"
          "  --max-usage BYTES     live-bytes cap over all threads (default 16000MiB on CUDA,\n"
          "                        a quarter of device memory on the simulated device)\n"
          "  --max-usage-per-thread  the cap applies to each thread, not divided among them\n"
          "  --fresh-threads       new threads for every repetition (default: one set of threads\n"
          "                        per configuration, kept for all its repetitions)\n"
          "  --num-allocations N   override the case's allocation count (per thread)\n"
          "  --max-size BYTES      override the case's largest size\n"
          "  --stream MODE         auto (own non-blocking stream per thread when threads > 1),\n"
          "                        default (the default stream) or own (default auto)\n"
          "  --seed N              base seed; thread t uses seed + t (default 42)\n"
          "  --device N            device to run on (default 0)\n"
          "  --pool-initial BYTES  pool initial size, or 'half' (default half the free memory)\n"
          "  --arena-size BYTES    arena size, or 'half' (default half the free memory)\n"
          "  --bins MIN:MAX        binning's fixed-size bins 2^MIN..2^MAX bytes (default 8:22)\n"
          "  --fixed-blocks N      fixed_size blocks preallocated at a time (default 128)\n"
          "  --budget SECONDS      start no new configuration after this long (default: none)\n"
          "  --adaptor KIND        wrap each resource under test in an adaptor: statistics, limiting\n"
          "                        (limit: the device's memory), tracking (no stacks) or logging (to\n"
          "                        /dev/null); rows are named resource+adaptor\n"
          "  --timer wall|cpu      time the wall clock (default), or the threads' CPU time: per op is\n"
          "                        all threads' CPU time over their ops (steadier on a shared machine;\n"
          "                        waiting threads cost nothing, so it hides contention that sleeps)\n"
          "  --frag-cap BYTES      the fragmentation workload's maximum size (default 8GiB on CUDA,\n"
          "                        a quarter of device memory on the simulated device)\n"
          "Sizes take B, KiB, MiB, GiB (or kB, MB, GB).\n");
}

static bool parse_bytes(const char* s, size_t* out) {
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno != 0 || v < 0) return false;
  while (*end == ' ') end++;
  double mult = 1;
  if (*end == '\0' || strcasecmp(end, "b") == 0) mult = 1;
  else if (strcasecmp(end, "kib") == 0 || strcasecmp(end, "k") == 0) mult = 1024.0;
  else if (strcasecmp(end, "mib") == 0 || strcasecmp(end, "m") == 0) mult = 1024.0 * 1024;
  else if (strcasecmp(end, "gib") == 0 || strcasecmp(end, "g") == 0) mult = 1024.0 * 1024 * 1024;
  else if (strcasecmp(end, "kb") == 0) mult = 1e3;
  else if (strcasecmp(end, "mb") == 0) mult = 1e6;
  else if (strcasecmp(end, "gb") == 0) mult = 1e9;
  else return false;
  *out = (size_t)(v * mult);
  return true;
}

static bool parse_list(const char* s, const char* const* names, int n, bool* flags) {
  for (int i = 0; i < n; i++) flags[i] = strcmp(s, "all") == 0;
  if (strcmp(s, "all") == 0) return true;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char* tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
    int found = -1;
    for (int i = 0; i < n; i++)
      if (strcmp(tok, names[i]) == 0) found = i;
    if (found < 0) return false;
    flags[found] = true;
  }
  return true;
}

static bool parse_args(int argc, char** argv) {
  opt.cases[0] = opt.cases[1] = opt.cases[2] = opt.cases[3] = true;
  opt.threads[0] = 1, opt.threads[1] = 4, opt.threads[2] = 16, opt.thread_count_n = 3;
  opt.reps = 5;
  for (int i = 0; i < R_COUNT; i++) opt.resources[i] = true;
  opt.baselines = true;
  opt.cuda_malloc_baseline = true;
  opt.efficiency = true;
  opt.seed = 42;
  opt.pool_initial = RMM_SIZE_DEFAULT;
  opt.arena_size = RMM_SIZE_DEFAULT;
  opt.bin_min_exp = 8, opt.bin_max_exp = 22;
  opt.fixed_blocks = 128;
  static const char* const case_names[4] = {"small", "medium", "large", "fragmentation"};
  for (int i = 1; i < argc; i++) {
    char* arg = argv[i];
    char* val = NULL;
    char* eq = strchr(arg, '=');
    if (eq != NULL) *eq = '\0', val = eq + 1;
#define VALUE() (val != NULL ? val : (i + 1 < argc ? argv[++i] : NULL))
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(arg, "--no-baselines") == 0) {
      opt.baselines = false;
    } else if (strcmp(arg, "--no-cudamalloc") == 0) {
      opt.cuda_malloc_baseline = false;
    } else if (strcmp(arg, "--no-efficiency") == 0) {
      opt.efficiency = false;
    } else if (strcmp(arg, "--max-usage-per-thread") == 0) {
      opt.max_usage_per_thread = true;
    } else if (strcmp(arg, "--fresh-threads") == 0) {
      opt.fresh_threads = true;
    } else {
      static const char* const valued[] = {"--case", "--resource", "--threads", "--reps", "--warmup", "--max-usage",
                                           "--num-allocations", "--max-size", "--stream", "--seed", "--device",
                                           "--pool-initial", "--arena-size", "--bins", "--fixed-blocks", "--budget",
                                           "--frag-cap", "--timer", "--adaptor"};
      bool known = false;
      for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known = known || strcmp(arg, valued[k]) == 0;
      if (!known) {
        fprintf(stderr, "random_allocations: unknown flag %s\n", arg);
        usage(stderr);
        return false;
      }
      const char* v = VALUE();
      if (v == NULL) {
        fprintf(stderr, "random_allocations: %s needs a value\n", arg);
        return false;
      }
      bool ok = true;
      if (strcmp(arg, "--case") == 0) ok = parse_list(v, case_names, 4, opt.cases);
      else if (strcmp(arg, "--resource") == 0) ok = parse_list(v, resource_names, R_COUNT, opt.resources);
      else if (strcmp(arg, "--threads") == 0) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v);
        opt.thread_count_n = 0;
        for (char* tok = strtok(buf, ","); tok != NULL && ok; tok = strtok(NULL, ",")) {
          int t = atoi(tok);
          ok = t >= 1 && t <= MAX_THREADS && opt.thread_count_n < MAX_THREAD_COUNTS;
          if (ok) opt.threads[opt.thread_count_n++] = t;
        }
        ok = ok && opt.thread_count_n > 0;
      } else if (strcmp(arg, "--reps") == 0) ok = (opt.reps = atoi(v)) >= 1;
      else if (strcmp(arg, "--warmup") == 0) ok = (opt.warmup = atoi(v)) >= 0;
      else if (strcmp(arg, "--max-usage") == 0) ok = parse_bytes(v, &opt.max_usage) && opt.max_usage > 0;
      else if (strcmp(arg, "--num-allocations") == 0) ok = parse_bytes(v, &opt.num_allocations) && opt.num_allocations > 0;
      else if (strcmp(arg, "--max-size") == 0) ok = parse_bytes(v, &opt.max_size) && opt.max_size > 0;
      else if (strcmp(arg, "--stream") == 0) {
        if (strcmp(v, "auto") == 0) opt.stream_mode = 0;
        else if (strcmp(v, "default") == 0) opt.stream_mode = 1;
        else if (strcmp(v, "own") == 0) opt.stream_mode = 2;
        else ok = false;
      } else if (strcmp(arg, "--seed") == 0) opt.seed = strtoull(v, NULL, 10);
      else if (strcmp(arg, "--device") == 0) ok = (opt.device = atoi(v)) >= 0;
      else if (strcmp(arg, "--pool-initial") == 0) {
        if (strcmp(v, "half") == 0) opt.pool_initial = RMM_SIZE_DEFAULT;
        else ok = parse_bytes(v, &opt.pool_initial);
      } else if (strcmp(arg, "--arena-size") == 0) {
        if (strcmp(v, "half") == 0) opt.arena_size = RMM_SIZE_DEFAULT;
        else ok = parse_bytes(v, &opt.arena_size);
      } else if (strcmp(arg, "--bins") == 0) {
        ok = sscanf(v, "%d:%d", &opt.bin_min_exp, &opt.bin_max_exp) == 2 && opt.bin_min_exp >= 0 &&
             opt.bin_min_exp <= opt.bin_max_exp && opt.bin_max_exp < 63;
      } else if (strcmp(arg, "--fixed-blocks") == 0) ok = parse_bytes(v, &opt.fixed_blocks) && opt.fixed_blocks > 0;
      else if (strcmp(arg, "--budget") == 0) ok = (opt.budget_s = atof(v)) > 0;
      else if (strcmp(arg, "--adaptor") == 0) {
        static const struct {
          const char* name;
          int kind;
        } ads[] = {{"statistics", RMM_RESOURCE_STATISTICS}, {"limiting", RMM_RESOURCE_LIMITING},
                   {"tracking", RMM_RESOURCE_TRACKING}, {"logging", RMM_RESOURCE_LOGGING}, {"none", 0}};
        ok = false;
        for (size_t k = 0; k < sizeof ads / sizeof ads[0]; k++) {
          if (strcmp(v, ads[k].name) == 0) {
            opt.adaptor = ads[k].kind;
            opt.adaptor_name = opt.adaptor ? ads[k].name : NULL;
            ok = true;
          }
        }
      } else if (strcmp(arg, "--timer") == 0) {
        if (strcmp(v, "wall") == 0) opt.cpu_timer = false;
        else if (strcmp(v, "cpu") == 0) opt.cpu_timer = true;
        else ok = false;
      }
      else if (strcmp(arg, "--frag-cap") == 0) ok = parse_bytes(v, &opt.frag_cap) && opt.frag_cap > 0;
      if (!ok) {
        fprintf(stderr, "random_allocations: bad value for %s: %s\n", arg, v);
        return false;
      }
    }
#undef VALUE
  }
  return true;
}

/* ------------------------------------------------------------ allocators */

typedef enum { KIND_RMMGO, KIND_CUDA_MALLOC, KIND_CUDA_MALLOC_ASYNC, KIND_CUDA_POOL } alloc_kind;

typedef struct {
  const char* name;
  alloc_kind kind;
  rmm_resource_t mr;        /* KIND_RMMGO: the resource under test      */
  rmm_resource_t upstream;  /* statistics adaptor below it, or NULL     */
  rmm_mem_pool_t cuda_pool; /* a CUDA pool whose reserved memory counts */
  bool maps;                /* expandable: what it holds is rmm_pool_size, sampled */
  rmm_resource_t inner;     /* --adaptor: the resource the adaptor (mr) wraps */
  char label[64];           /* --adaptor: resource+adaptor */
} allocator;

enum { ALLOC_OK = 0, ALLOC_NO_MEMORY = 1, ALLOC_ERROR = 2 };
enum { CUDA_ERROR_MEMORY_ALLOCATION = 2 };

/* ALLOC_OK, ALLOC_NO_MEMORY (the workload then frees instead), or
 * ALLOC_ERROR (anything else: the run stops and says why). */
static inline int alloc_one(const allocator* a, rmm_stream_t s, size_t n, void** p, int* code) {
  switch (a->kind) {
    case KIND_RMMGO: *code = (int)rmm_allocate(a->mr, s, n, RMM_DEFAULT_ALIGNMENT, p); break;
    case KIND_CUDA_MALLOC: *code = cu.malloc_(p, n); break;
    case KIND_CUDA_MALLOC_ASYNC: *code = cu.malloc_async(p, n, s); break;
    case KIND_CUDA_POOL: *code = cu.malloc_from_pool(p, n, a->cuda_pool, s); break;
  }
  if (*code == 0) return ALLOC_OK;
  const int oom = a->kind == KIND_RMMGO ? (int)RMM_ERROR_OUT_OF_MEMORY : CUDA_ERROR_MEMORY_ALLOCATION;
  return *code == oom ? ALLOC_NO_MEMORY : ALLOC_ERROR;
}

static inline int free_one(const allocator* a, rmm_stream_t s, void* p, size_t n) {
  switch (a->kind) {
    case KIND_RMMGO: return (int)rmm_deallocate(a->mr, s, p, n, RMM_DEFAULT_ALIGNMENT);
    case KIND_CUDA_MALLOC: return cu.free_(p);
    case KIND_CUDA_MALLOC_ASYNC:
    case KIND_CUDA_POOL: return cu.free_async(p, s);
  }
  return -1;
}

/* ---------------------------------------------------------------- workers */

static inline uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
  /* in */
  const allocator* a;
  rmm_stream_t stream;
  uint64_t seed;
  size_t num_allocations, max_size, max_usage;
  int device;
  bool count_live; /* the efficiency repetition: keep the shared live count */
  pthread_barrier_t* start;
  void** ptrs;
  size_t* sizes;
  /* out */
  uint64_t ops, failures;
  double t_start, t_end;
  double cpu; /* the thread's CPU time for the loop, seconds */
  char error[256];
} worker;

static _Atomic int64_t live_now, live_peak, mapped_peak;
static double t_begin; /* when the measurements began, for progress lines */

static inline void raise_peak(_Atomic int64_t* peak, int64_t v) {
  int64_t p = atomic_load_explicit(peak, memory_order_relaxed);
  while (v > p && !atomic_compare_exchange_weak_explicit(peak, &p, v, memory_order_relaxed, memory_order_relaxed)) {
  }
}

static inline void count_live(int64_t delta) {
  raise_peak(&live_peak, atomic_fetch_add_explicit(&live_now, delta, memory_order_relaxed) + delta);
}

/* After an allocation in the efficiency repetition: the device memory an
 * expandable resource has mapped (it changes only when it allocates). */
static inline void sample_mapped(const allocator* a) {
  size_t n = 0;
  if (a->maps && rmm_pool_size(a->mr, &n) == RMM_SUCCESS) raise_peak(&mapped_peak, (int64_t)n);
}

static void* run_worker(void* arg) {
  worker* w = arg;
  const allocator* a = w->a;
  bool ok_device = true;
  if (a->kind == KIND_RMMGO) ok_device = rmm_set_device(w->device) == RMM_SUCCESS;
  else ok_device = cu.set_device(w->device) == 0;
  if (!ok_device) snprintf(w->error, sizeof w->error, "cannot set device %d", w->device);
  if (w->start != NULL) pthread_barrier_wait(w->start);
  if (w->error[0] != '\0') return NULL;

  uint64_t rng = w->seed;
  size_t live = 0, made = 0, live_bytes = 0;
  uint64_t ops = 0, failures = 0;
  const size_t n = w->num_allocations;
  const rmm_stream_t s = w->stream;
  w->t_start = now_s();
  const double cpu0 = thread_cpu_s();
  for (size_t step = 0; step < 2 * n; step++) {
    size_t size = 1 + (size_t)(splitmix64(&rng) % w->max_size);
    bool do_alloc = true;
    if (live > 0) {
      do_alloc = splitmix64(&rng) % 100 < 73 && made < n && live_bytes + size < w->max_usage;
    }
    void* p = NULL;
    if (do_alloc) {
      int code = 0;
      int got = alloc_one(a, s, size, &p, &code);
      if (got == ALLOC_ERROR) {
        snprintf(w->error, sizeof w->error, "allocating %zu bytes failed (%d): %s", size, code,
                 a->kind == KIND_RMMGO ? rmm_last_error_message() : cu.error_string(code));
        break;
      }
      if (got == ALLOC_NO_MEMORY) {
        do_alloc = false;
        failures++;
      }
    }
    if (do_alloc) {
      w->ptrs[live] = p;
      w->sizes[live] = size;
      live++, made++, ops++;
      live_bytes += size;
      if (w->count_live) count_live((int64_t)size), sample_mapped(a);
    } else if (live > 0) {
      size_t i = (size_t)(splitmix64(&rng) % live);
      int rc = free_one(a, s, w->ptrs[i], w->sizes[i]);
      if (rc != 0) {
        snprintf(w->error, sizeof w->error, "free failed (%d): %s", rc,
                 a->kind == KIND_RMMGO ? rmm_last_error_message() : cu.error_string(rc));
        break;
      }
      if (w->count_live) count_live(-(int64_t)w->sizes[i]);
      live_bytes -= w->sizes[i];
      live--, ops++;
      w->ptrs[i] = w->ptrs[live];
      w->sizes[i] = w->sizes[live];
    }
  }
  while (live > 0) {
    live--;
    int rc = free_one(a, s, w->ptrs[live], w->sizes[live]);
    if (rc != 0 && w->error[0] == '\0') snprintf(w->error, sizeof w->error, "final free failed (%d)", rc);
    if (w->count_live) count_live(-(int64_t)w->sizes[live]);
    ops++;
  }
  rmm_stream_synchronize(s);
  w->cpu = thread_cpu_s() - cpu0;
  w->t_end = now_s();
  w->ops = ops;
  w->failures = failures;
  return NULL;
}

typedef struct {
  double seconds;
  uint64_t ops, failures;
  char error[256];
} rep_result;

/* The threads of one configuration. By default they live for all of its
 * repetitions, as a program's worker threads do (and as a benchmark
 * library's threads do across iterations), so per-thread state such as
 * rmmgo's thread caches carries from one repetition to the next;
 * --fresh-threads makes new threads for every repetition instead. */
typedef struct {
  int threads;
  worker* ws;
  pthread_t tids[MAX_THREADS];
  pthread_barrier_t go, done; /* threads + the main thread */
  atomic_bool quit;
} team;

typedef struct {
  team* tm;
  int index;
} team_arg;

static team_arg team_args[MAX_THREADS];

static void* team_main(void* arg) {
  team_arg* ta = arg;
  team* tm = ta->tm;
  for (;;) {
    pthread_barrier_wait(&tm->go);
    if (atomic_load(&tm->quit)) break;
    run_worker(&tm->ws[ta->index]);
    pthread_barrier_wait(&tm->done);
  }
  return NULL;
}

static bool team_start(team* tm, int threads, worker* ws) {
  memset(tm, 0, sizeof *tm);
  tm->threads = threads;
  tm->ws = ws;
  atomic_store(&tm->quit, false);
  pthread_barrier_init(&tm->go, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&tm->done, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; t++) {
    team_args[t].tm = tm;
    team_args[t].index = t;
    if (pthread_create(&tm->tids[t], NULL, team_main, &team_args[t]) != 0) {
      fprintf(stderr, "random_allocations: pthread_create failed\n");
      exit(1);
    }
  }
  return true;
}

static void team_stop(team* tm) {
  atomic_store(&tm->quit, true);
  pthread_barrier_wait(&tm->go);
  for (int t = 0; t < tm->threads; t++) pthread_join(tm->tids[t], NULL);
  pthread_barrier_destroy(&tm->go);
  pthread_barrier_destroy(&tm->done);
}

/* One repetition: every thread runs its loop once (on tm's threads, or on
 * new ones when tm is NULL); wall time from the first start to the last end. */
static rep_result run_rep(const allocator* a, int threads, rmm_stream_t* streams, size_t n, size_t max_size,
                          size_t max_usage_per_thread, bool count, worker* ws, void** ptrs, size_t* sizes,
                          team* tm) {
  rep_result r = {0};
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  pthread_t tids[MAX_THREADS];
  for (int t = 0; t < threads; t++) {
    worker* w = &ws[t];
    memset(w, 0, sizeof *w);
    w->a = a;
    w->stream = streams[t];
    w->seed = opt.seed + (uint64_t)t;
    w->num_allocations = n;
    w->max_size = max_size;
    w->max_usage = max_usage_per_thread;
    w->device = opt.device;
    w->count_live = count;
    w->start = tm != NULL ? NULL : &start;
    w->ptrs = ptrs + (size_t)t * n;
    w->sizes = sizes + (size_t)t * n;
    if (tm == NULL && pthread_create(&tids[t], NULL, run_worker, w) != 0) {
      fprintf(stderr, "random_allocations: pthread_create failed\n");
      exit(1);
    }
  }
  if (tm != NULL) {
    pthread_barrier_wait(&tm->go);   /* the threads start together */
    pthread_barrier_wait(&tm->done); /* and are all done */
  }
  double first = 1e300, last = 0, cpu = 0;
  for (int t = 0; t < threads; t++) {
    cpu += ws[t].cpu;
    if (tm == NULL) pthread_join(tids[t], NULL);
    if (ws[t].error[0] != '\0' && r.error[0] == '\0') snprintf(r.error, sizeof r.error, "%s", ws[t].error);
    if (ws[t].t_start < first) first = ws[t].t_start;
    if (ws[t].t_end > last) last = ws[t].t_end;
    r.ops += ws[t].ops;
    r.failures += ws[t].failures;
  }
  pthread_barrier_destroy(&start);
  /* With --timer cpu, the seconds such that threads / (ops / seconds) is
   * the CPU time per op of a thread. */
  r.seconds = opt.cpu_timer ? cpu / threads : last - first;
  return r;
}

/* -------------------------------------------------------------- resources */

static const char* lib_error(void) { return rmm_last_error_message(); }

static rmm_resource_t make_stats(char* err, size_t errn) {
  rmm_resource_t cuda = NULL, stats = NULL;
  rmm_resource_options o;
  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS) {
    snprintf(err, errn, "cuda: %s", lib_error());
    return NULL;
  }
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  rmm_status st = rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats);
  if (st != RMM_SUCCESS) snprintf(err, errn, "statistics: %s", lib_error());
  rmm_resource_release(cuda);
  return st == RMM_SUCCESS ? stats : NULL;
}

static void size_text(size_t v, char* out, size_t n) {
  if (v == RMM_SIZE_DEFAULT) snprintf(out, n, "half of free memory");
  else if (v >= (1ull << 30) && v % (1ull << 30) == 0) snprintf(out, n, "%zu GiB", v >> 30);
  else if (v >= (1ull << 20) && v % (1ull << 20) == 0) snprintf(out, n, "%zu MiB", v >> 20);
  else if (v >= (1ull << 10) && v % (1ull << 10) == 0) snprintf(out, n, "%zu KiB", v >> 10);
  else snprintf(out, n, "%zu B", v);
}

/* What resource r is, for the report. */
static void describe_resource(int r, char* out, size_t n) {
  char s1[64], s2[64];
  size_text(r == R_ARENA ? opt.arena_size : opt.pool_initial, s1, sizeof s1);
  size_text((size_t)1 << opt.bin_max_exp, s2, sizeof s2);
  switch (r) {
    case R_CUDA: snprintf(out, n, "cuda_memory_resource"); break;
    case R_CUDA_ASYNC:
      snprintf(out, n, "cuda_async_memory_resource (its own pool, release threshold: keep everything)");
      break;
    case R_POOL: snprintf(out, n, "pool_memory_resource(cuda, initial %s, no maximum)", s1); break;
    case R_ARENA: snprintf(out, n, "arena_memory_resource(cuda, arena %s)", s1); break;
    case R_BINNING:
      snprintf(out, n,
               "binning_memory_resource(pool(cuda, initial %s)): fixed-size bins %zu B..%s (%d bins fetching "
               "128 blocks at a time up to 128 KiB, 16 MiB of blocks above, at least 8 up to 32 MiB), larger sizes from the pool",
               s1, (size_t)1 << opt.bin_min_exp, s2, opt.bin_max_exp - opt.bin_min_exp + 1);
      break;
    case R_EXPANDABLE:
      snprintf(out, n, "expandable_memory_resource (maximum: the device's memory; no release threshold); peak "
               "reserved = the most device memory it mapped, sampled after every allocation of the efficiency run");
      break;
    default:
      snprintf(out, n, "fixed_size_memory_resource(cuda), block = the case's max_size rounded up to 256 B, %zu blocks "
               "at a time",
               opt.fixed_blocks);
  }
}

/* Makes resource r for a case whose largest size is max_size. Returns false
 * with err set on failure. */
static bool make_resource(int r, size_t max_size, allocator* a, char* err, size_t en) {
  memset(a, 0, sizeof *a);
  a->kind = KIND_RMMGO;
  a->name = resource_names[r];
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  rmm_status st = RMM_SUCCESS;
  switch (r) {
    case R_CUDA:
      st = rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &a->mr);
      break;
    case R_CUDA_ASYNC:
      st = rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC, &o, &a->mr);
      if (st == RMM_SUCCESS && cu.loaded) rmm_cuda_async_pool_handle(a->mr, &a->cuda_pool);
      break;
    case R_EXPANDABLE:
      st = rmm_resource_create(RMM_RESOURCE_EXPANDABLE, &o, &a->mr);
      a->maps = true;
      break;
    case R_POOL:
    case R_ARENA:
    case R_FIXED:
      if ((a->upstream = make_stats(err, en)) == NULL) return false;
      o.upstream = a->upstream;
      if (r == R_POOL) {
        o.initial_pool_size = opt.pool_initial;
        st = rmm_resource_create(RMM_RESOURCE_POOL, &o, &a->mr);
      } else if (r == R_ARENA) {
        o.arena_size = opt.arena_size;
        st = rmm_resource_create(RMM_RESOURCE_ARENA, &o, &a->mr);
      } else {
        size_t block = (max_size + 255) / 256 * 256;
        o.block_size = block;
        o.blocks_to_preallocate = opt.fixed_blocks;
        st = rmm_resource_create(RMM_RESOURCE_FIXED_SIZE, &o, &a->mr);
      }
      break;
    case R_BINNING: {
      if ((a->upstream = make_stats(err, en)) == NULL) return false;
      rmm_resource_t pool = NULL;
      o.upstream = a->upstream;
      o.initial_pool_size = opt.pool_initial;
      st = rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool);
      if (st != RMM_SUCCESS) break;
      rmm_resource_options_init(&o);
      o.upstream = pool;
      o.min_size_exponent = opt.bin_min_exp;
      o.max_size_exponent = opt.bin_max_exp;
      st = rmm_resource_create(RMM_RESOURCE_BINNING, &o, &a->mr);
      if (st != RMM_SUCCESS) snprintf(err, en, "%s", lib_error()); /* before the next call */
      rmm_resource_release(pool); /* the binning resource holds it */
      break;
    }
  }
  if (st != RMM_SUCCESS) {
    if (err[0] == '\0') snprintf(err, en, "%s", lib_error());
    if (a->upstream != NULL) rmm_resource_release(a->upstream);
    a->upstream = NULL;
    a->mr = NULL;
    return false;
  }
  return true;
}

/* --adaptor: puts the adaptor kind over a->mr (the resource under test),
 * which becomes a->inner. */
static bool wrap_adaptor(allocator* a, char* err, size_t en) {
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  o.upstream = a->mr;
  if (opt.adaptor == RMM_RESOURCE_LIMITING) {
    size_t free_b = 0, total_b = 0;
    rmm_mem_get_info(&free_b, &total_b);
    o.allocation_limit = total_b;
  }
  if (opt.adaptor == RMM_RESOURCE_LOGGING) o.log_file = "/dev/null";
  rmm_resource_t ad = NULL;
  if (rmm_resource_create((rmm_resource_kind)opt.adaptor, &o, &ad) != RMM_SUCCESS) {
    snprintf(err, en, "%s: %s", opt.adaptor_name, lib_error());
    return false;
  }
  a->inner = a->mr;
  a->mr = ad;
  snprintf(a->label, sizeof a->label, "%s+%s", a->name, opt.adaptor_name);
  a->name = a->label;
  return true;
}

static void release_allocator(allocator* a) {
  if (a->mr != NULL) rmm_resource_release(a->mr);
  if (a->inner != NULL) rmm_resource_release(a->inner);
  a->inner = NULL;
  if (a->upstream != NULL) rmm_resource_release(a->upstream);
  a->mr = a->upstream = NULL;
}

/* Peak bytes reserved from the upstream: the statistics adaptor under a
 * sub-allocator, or the CUDA pool's high-water mark; 0 when unknown. */
static int64_t peak_reserved(const allocator* a) {
  if (a->maps) return atomic_load(&mapped_peak);
  if (a->upstream != NULL) {
    rmm_statistics s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (rmm_statistics_get(a->upstream, &s) == RMM_SUCCESS) return s.bytes.peak;
  }
  if (a->cuda_pool != NULL && cu.loaded) {
    uint64_t v = 0;
    if (cu.pool_get(a->cuda_pool, CUDA_MEM_POOL_ATTR_RESERVED_MEM_HIGH, &v) == 0) return (int64_t)v;
  }
  return 0;
}

/* ----------------------------------------------------------------- report */

static int cmp_double(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

static void human_bytes(int64_t v, char* out, size_t n) {
  if (v <= 0) snprintf(out, n, "-");
  else if (v >= (1ll << 30)) snprintf(out, n, "%.2f GiB", (double)v / (1ll << 30));
  else if (v >= (1ll << 20)) snprintf(out, n, "%.1f MiB", (double)v / (1ll << 20));
  else snprintf(out, n, "%.1f KiB", (double)v / 1024);
}

static void human_rate(double v, char* out, size_t n) {
  if (v >= 1e6) snprintf(out, n, "%.2f M/s", v / 1e6);
  else snprintf(out, n, "%.1f k/s", v / 1e3);
}

static void human_time(double ns, char* out, size_t n) {
  if (ns >= 1e3) snprintf(out, n, "%.2f us", ns / 1e3);
  else snprintf(out, n, "%.0f ns", ns);
}

/* Runs one configuration and prints its row; returns the median ops/s (0 on failure). */
static double run_config(allocator* a, const char* case_name, int threads, size_t n, size_t max_size,
                         size_t max_usage_total, double async_rate, worker* ws, void** ptrs, size_t* sizes) {
  const bool own = opt.stream_mode == 2 || (opt.stream_mode == 0 && threads > 1);
  const double t_config = now_s();
  rmm_stream_t streams[MAX_THREADS];
  for (int t = 0; t < threads; t++) {
    streams[t] = NULL;
    if (own && rmm_stream_create(&streams[t]) != RMM_SUCCESS) {
      printf("| %s | %s | %d | - | failed: stream: %s | | | | | | | |\n", a->name, case_name, threads, lib_error());
      for (int u = 0; u < t; u++) rmm_stream_destroy(streams[u]);
      return 0;
    }
  }
  size_t per_thread = opt.max_usage_per_thread ? max_usage_total : max_usage_total / (size_t)threads;
  team tm_storage;
  team* tm = NULL;
  if (!opt.fresh_threads && team_start(&tm_storage, threads, ws)) tm = &tm_storage;
  double rates[256];
  int reps = opt.reps > 256 ? 256 : opt.reps;
  uint64_t failures = 0, ops = 0;
  char error[256] = "";
  for (int i = 0; i < opt.warmup && error[0] == '\0'; i++) {
    rep_result r = run_rep(a, threads, streams, n, max_size, per_thread, false, ws, ptrs, sizes, tm);
    if (r.error[0] != '\0') snprintf(error, sizeof error, "%s", r.error);
  }
  for (int i = 0; i < reps && error[0] == '\0'; i++) {
    rep_result r = run_rep(a, threads, streams, n, max_size, per_thread, false, ws, ptrs, sizes, tm);
    if (r.error[0] != '\0') snprintf(error, sizeof error, "%s", r.error);
    rates[i] = r.seconds > 0 ? (double)r.ops / r.seconds : 0;
    if (r.ops == 0 && error[0] == '\0') snprintf(error, sizeof error, "no allocation succeeded");
    failures += r.failures;
    ops = r.ops;
  }
  int64_t peak_live = 0;
  if (opt.efficiency && error[0] == '\0') {
    atomic_store(&live_now, 0);
    atomic_store(&live_peak, 0);
    atomic_store(&mapped_peak, 0);
    rep_result r = run_rep(a, threads, streams, n, max_size, per_thread, true, ws, ptrs, sizes, tm);
    if (r.error[0] != '\0') snprintf(error, sizeof error, "%s", r.error);
    peak_live = atomic_load(&live_peak);
  }
  if (tm != NULL) team_stop(tm);
  for (int t = 0; t < threads; t++)
    if (streams[t] != NULL) rmm_stream_destroy(streams[t]);
  fprintf(stderr, "[%7.1f s] %s, %s, %d thread(s): %.1f s\n", now_s() - t_begin, a->name, case_name, threads,
          now_s() - t_config);
  if (error[0] != '\0') {
    printf("| %s | %s | %d | %s | failed: %s | | | | | | | |\n", a->name, case_name, threads,
           own ? "own" : "default", error);
    fflush(stdout);
    return 0;
  }
  qsort(rates, (size_t)reps, sizeof rates[0], cmp_double);
  double median = reps % 2 ? rates[reps / 2] : (rates[reps / 2 - 1] + rates[reps / 2]) / 2;
  char med[32], lo[32], hi[32], per[32], ratio[32], res[32], liv[32], eff[32];
  human_rate(median, med, sizeof med);
  human_rate(rates[0], lo, sizeof lo);
  human_rate(rates[reps - 1], hi, sizeof hi);
  human_time(1e9 * threads / median, per, sizeof per);
  if (async_rate > 0) snprintf(ratio, sizeof ratio, "%.2fx", median / async_rate);
  else snprintf(ratio, sizeof ratio, "n/a");
  int64_t reserved = peak_reserved(a);
  human_bytes(reserved, res, sizeof res);
  human_bytes(peak_live, liv, sizeof liv);
  if (reserved > 0 && peak_live > 0) snprintf(eff, sizeof eff, "%.2f", (double)reserved / (double)peak_live);
  else snprintf(eff, sizeof eff, "-");
  printf("| %s | %s | %d | %s | %s | %s | %s..%s | %s | %s | %s | %s | %" PRIu64 " |\n", a->name, case_name, threads,
         own ? "own" : "default", med, per, lo, hi, ratio, res, liv, eff, failures / (uint64_t)reps);
  (void)ops;
  fflush(stdout);
  return median;
}

/* ----------------------------- cuda_async against the direct pool calls */

/* The direct baseline of a cuda_async row: cudaMallocFromPoolAsync /
 * cudaFreeAsync on the pool of a fresh cuda_async resource (so made exactly
 * as the measured one makes its own), which is then released. Returns the
 * median ops/s (0 on failure; the row says why). */
static double run_pool_baseline(const char* case_name, int threads, size_t n, size_t max_size, size_t max_usage,
                                double async_rate, worker* ws, void** ptrs, size_t* sizes) {
  allocator a;
  memset(&a, 0, sizeof a);
  a.name = "cudaMallocFromPoolAsync";
  a.kind = KIND_CUDA_POOL;
  rmm_resource_t owner = NULL;
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  if (rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC, &o, &owner) != RMM_SUCCESS ||
      rmm_cuda_async_pool_handle(owner, &a.cuda_pool) != RMM_SUCCESS) {
    printf("| %s | %s | %d | | failed to make: %s | | | | | | | |\n", a.name, case_name, threads, lib_error());
    if (owner != NULL) rmm_resource_release(owner);
    return 0;
  }
  double rate = run_config(&a, case_name, threads, n, max_size, max_usage, async_rate, ws, ptrs, sizes);
  rmm_resource_release(owner);
  return rate;
}

/* The summary: cuda_async's time per op over the direct calls'. */
enum { MAX_POOL_ROWS = 3 * MAX_THREAD_COUNTS };
static struct {
  const char* case_name;
  int threads;
  double direct, ours; /* ops/s */
} pool_rows[MAX_POOL_ROWS];
static int n_pool_rows;

static void print_pool_summary(void) {
  if (n_pool_rows == 0) return;
  printf("\n## cuda_async against cudaMallocFromPoolAsync / cudaFreeAsync called directly on a pool made the same "
         "way (goal: at most 1.05x per op)\n\n");
  printf("| case | threads | direct per op | cuda_async per op | ratio | goal |\n");
  printf("| --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < n_pool_rows; i++) {
    char d[32], o[32];
    if (pool_rows[i].direct <= 0 || pool_rows[i].ours <= 0) {
      printf("| %s | %d | failed | failed | - | - |\n", pool_rows[i].case_name, pool_rows[i].threads);
      continue;
    }
    int threads = pool_rows[i].threads;
    human_time(1e9 * threads / pool_rows[i].direct, d, sizeof d);
    human_time(1e9 * threads / pool_rows[i].ours, o, sizeof o);
    double ratio = pool_rows[i].direct / pool_rows[i].ours;
    printf("| %s | %d | %s | %s | %.3fx | %s |\n", pool_rows[i].case_name, threads, d, o, ratio,
           ratio <= 1.05 ? "met" : "not met");
  }
}

/* ------------------------------------------- the fragmentation workload */

/* The workload of bench/workload/fragmentation.go, with the same draws:
 * rounds of small and large allocations interleaved; the round's large ones
 * freed and one block as large as all of them asked for; small ones living
 * for `window` rounds. One thread, the default stream. */
enum { FRAG_ROUNDS = 32, FRAG_PAIRS = 16, FRAG_WINDOW = 4 };

typedef struct {
  uint64_t ops, big, served, with_room, failed;
  int64_t peak_live, peak_mapped;
  double seconds;
  char error[256];
} frag_result;

static frag_result run_fragmentation(const allocator* a, size_t cap, bool sample) {
  frag_result r;
  memset(&r, 0, sizeof r);
  const size_t max_small = cap / 320, max_large = cap / 32;
  static void* small_p[FRAG_ROUNDS][FRAG_PAIRS];
  static size_t small_n[FRAG_ROUNDS][FRAG_PAIRS];
  int small_count[FRAG_ROUNDS] = {0};
  void* large_p[FRAG_PAIRS];
  size_t large_n[FRAG_PAIRS];
  uint64_t rng = opt.seed;
  int64_t live = 0;
  const rmm_stream_t s = NULL;
  rmm_set_device(opt.device);
#define FRAG_ALLOC(n, out)                                                                        \
  (rmm_allocate(a->mr, s, (n), RMM_DEFAULT_ALIGNMENT, (out)) == RMM_SUCCESS                        \
       ? (r.ops++, live += (int64_t)(n), r.peak_live = live > r.peak_live ? live : r.peak_live,    \
          sample ? (sample_mapped(a), 0) : 0, true)                                                \
       : false)
#define FRAG_FREE(p, n)                                                                           \
  do {                                                                                            \
    if (rmm_deallocate(a->mr, s, (p), (n), RMM_DEFAULT_ALIGNMENT) != RMM_SUCCESS && !r.error[0]) \
      snprintf(r.error, sizeof r.error, "free failed: %s", rmm_last_error_message());             \
    r.ops++, live -= (int64_t)(n);                                                                \
  } while (0)
  const double t0 = now_s();
  for (int round = 0; round < FRAG_ROUNDS && !r.error[0]; round++) {
    int larges = 0;
    size_t freed = 0;
    for (int i = 0; i < FRAG_PAIRS; i++) {
      size_t n = 1 + (size_t)(splitmix64(&rng) % max_small);
      void* p = NULL;
      if (FRAG_ALLOC(n, &p)) {
        small_p[round][small_count[round]] = p, small_n[round][small_count[round]++] = n;
      } else {
        r.failed++;
      }
      n = max_large / 2 + 1 + (size_t)(splitmix64(&rng) % (max_large - max_large / 2));
      if (FRAG_ALLOC(n, &p)) {
        large_p[larges] = p, large_n[larges++] = n;
      } else {
        r.failed++;
      }
    }
    for (int i = 0; i < larges; i++) {
      freed += large_n[i];
      FRAG_FREE(large_p[i], large_n[i]);
    }
    if (freed > 0) {
      void* p = NULL;
      r.big++;
      if (FRAG_ALLOC(freed, &p)) {
        r.served++;
        FRAG_FREE(p, freed);
      } else if ((size_t)live + freed <= cap) {
        r.with_room++;
      }
    }
    int old = round - FRAG_WINDOW + 1;
    if (old >= 0) {
      for (int i = 0; i < small_count[old]; i++) FRAG_FREE(small_p[old][i], small_n[old][i]);
      small_count[old] = 0;
    }
  }
  for (int round = 0; round < FRAG_ROUNDS; round++) {
    for (int i = 0; i < small_count[round]; i++) FRAG_FREE(small_p[round][i], small_n[round][i]);
  }
#undef FRAG_ALLOC
#undef FRAG_FREE
  rmm_stream_synchronize(s);
  r.seconds = now_s() - t0;
  return r;
}

/* The fragmentation workload on pool and expandable (as --resource
 * selects), all under the maximum size cap; prints its own table. */
static int run_fragmentation_case(size_t cap) {
  char capt[64];
  size_text(cap, capt, sizeof capt);
  printf("\n## fragmentation workload (bench/README.md): maximum size %s, %d rounds of %d small/large pairs, "
         "small sizes up to %zu B, large up to %zu B, small blocks live %d rounds; one thread, the default stream\n\n",
         capt, FRAG_ROUNDS, FRAG_PAIRS, cap / 320, cap / 32, FRAG_WINDOW);
  printf("| allocator | ops/s (median) | per op | min..max | big requests served | failed with room | failed "
         "small/large | peak reserved | peak live | reserved/live |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  fflush(stdout);
  struct {
    const char* name;
    int r;
    size_t threshold; /* expandable's release_threshold */
  } configs[] = {{"pool", R_POOL, 0}, {"expandable", R_EXPANDABLE, RMM_SIZE_DEFAULT}, {"expandable, release_threshold 0", R_EXPANDABLE, 0}};
  int failed = 0;
  for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
    if (!opt.resources[configs[c].r]) continue;
    allocator a;
    memset(&a, 0, sizeof a);
    a.kind = KIND_RMMGO;
    a.name = configs[c].name;
    rmm_resource_options o;
    rmm_resource_options_init(&o);
    o.maximum_pool_size = cap;
    char err[512] = "";
    rmm_status st;
    if (configs[c].r == R_POOL) {
      if ((a.upstream = make_stats(err, sizeof err)) == NULL) st = RMM_ERROR_INTERNAL;
      else {
        o.upstream = a.upstream;
        o.initial_pool_size = 0;
        st = rmm_resource_create(RMM_RESOURCE_POOL, &o, &a.mr);
      }
    } else {
      o.release_threshold = configs[c].threshold;
      st = rmm_resource_create(RMM_RESOURCE_EXPANDABLE, &o, &a.mr);
      a.maps = true;
    }
    if (st != RMM_SUCCESS) {
      printf("| %s | failed to make: %s | | | | | | | | |\n", a.name, err[0] ? err : lib_error());
      fflush(stdout);
      release_allocator(&a);
      failed++;
      continue;
    }
    double rates[256];
    int reps = opt.reps > 256 ? 256 : opt.reps;
    frag_result last;
    memset(&last, 0, sizeof last);
    for (int i = 0; i < opt.warmup + reps && !last.error[0]; i++) {
      last = run_fragmentation(&a, cap, false);
      if (i >= opt.warmup) rates[i - opt.warmup] = last.seconds > 0 ? (double)last.ops / last.seconds : 0;
    }
    int64_t peak_live = 0;
    if (!last.error[0]) {
      atomic_store(&mapped_peak, 0);
      frag_result e = run_fragmentation(&a, cap, true); /* untimed: samples what expandable maps */
      peak_live = e.peak_live;
      if (e.error[0]) snprintf(last.error, sizeof last.error, "%s", e.error);
    }
    if (last.error[0]) {
      printf("| %s | failed: %s | | | | | | | | |\n", a.name, last.error);
      failed++;
    } else {
      qsort(rates, (size_t)reps, sizeof rates[0], cmp_double);
      double median = reps % 2 ? rates[reps / 2] : (rates[reps / 2 - 1] + rates[reps / 2]) / 2;
      char med[32], lo[32], hi[32], per[32], res[32], liv[32], eff[32];
      human_rate(median, med, sizeof med);
      human_rate(rates[0], lo, sizeof lo);
      human_rate(rates[reps - 1], hi, sizeof hi);
      human_time(1e9 / median, per, sizeof per);
      int64_t reserved = peak_reserved(&a);
      human_bytes(reserved, res, sizeof res);
      human_bytes(peak_live, liv, sizeof liv);
      if (reserved > 0 && peak_live > 0) snprintf(eff, sizeof eff, "%.2f", (double)reserved / (double)peak_live);
      else snprintf(eff, sizeof eff, "-");
      printf("| %s | %s | %s | %s..%s | %" PRIu64 " of %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %s | %s | %s |\n",
             a.name, med, per, lo, hi, last.served, last.big, last.with_room, last.failed, res, liv, eff);
    }
    fflush(stdout);
    fprintf(stderr, "[%7.1f s] %s, fragmentation\n", now_s() - t_begin, a.name);
    release_allocator(&a);
  }
  return failed;
}

/* ------------------------------------------------------------------- main */

int main(int argc, char** argv) {
  if (!parse_args(argc, argv)) return 2;
  const char* backend = NULL;
  if (rmm_backend_name(&backend) != RMM_SUCCESS) {
    fprintf(stderr, "random_allocations: %s\n", rmm_last_error_message());
    return 1;
  }
  if (rmm_set_device(opt.device) != RMM_SUCCESS) {
    fprintf(stderr, "random_allocations: device %d: %s\n", opt.device, rmm_last_error_message());
    return 1;
  }
  const bool on_cuda = strcmp(backend, "cuda") == 0;
  char why[512] = "";
  bool baselines = opt.baselines;
  if (baselines && !on_cuda) {
    baselines = false;
    snprintf(why, sizeof why, "skipped: the %s backend has no CUDA runtime to call", backend);
  } else if (baselines && !load_cudart(why, sizeof why)) {
    baselines = false;
  } else if (!baselines) {
    snprintf(why, sizeof why, "skipped (--no-baselines)");
  }
  if (on_cuda && !cu.loaded) {
    char ignore[256];
    load_cudart(ignore, sizeof ignore); /* for cuda_async's reserved-memory figure */
  }

  size_t free_b = 0, total_b = 0;
  rmm_mem_get_info(&free_b, &total_b);
  size_t max_usage = opt.max_usage;
  if (max_usage == 0) max_usage = on_cuda ? (size_t)16000 << 20 : total_b / 4;
  int rt = 0, drv = 0;
  rmm_runtime_version(&rt);
  rmm_driver_version(&drv);
  char dev_name[256] = "";
  if (on_cuda) device_name(opt.device, dev_name, sizeof dev_name);
  if (dev_name[0] == '\0') snprintf(dev_name, sizeof dev_name, "%s device %d", backend, opt.device);
  char date[64];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));

  printf("# random allocations: rmmgo %s\n\n", rmm_version());
  printf("- date: %s\n", date);
  printf("- device: %s (%zu MiB, %zu MiB free at start); backend: %s\n", dev_name, total_b >> 20, free_b >> 20,
         backend);
  if (on_cuda) {
    printf("- CUDA runtime %d.%d, driver %d.%d%s%s\n", rt / 1000, (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10,
           cu.loaded ? "; baselines through " : "", cu.loaded ? cu.library : "");
  } else { /* the versions are the simulator's stand-ins, not a CUDA that ran */
    printf("- CUDA: none, simulated device (it reports runtime %d.%d, driver %d.%d)\n", rt / 1000, (rt % 1000) / 10,
           drv / 1000, (drv % 1000) / 10);
  }
  printf("- workload: random allocations (bench/README.md); %d timed repetition(s) (median), %d warm-up; seed %" PRIu64
         " + thread index\n",
         opt.reps, opt.warmup, opt.seed);
  char mu[64];
  size_text(max_usage, mu, sizeof mu);
  printf("- max_usage: %s %s; streams: %s\n", mu, opt.max_usage_per_thread ? "per thread" : "divided among the threads",
         opt.stream_mode == 0 ? "a non-blocking stream per thread when threads > 1, else the default stream"
                              : opt.stream_mode == 1 ? "the default stream" : "a non-blocking stream per thread");
  printf("- baselines (cudaMalloc/cudaFree; cudaMallocAsync/cudaFreeAsync on the default pool, release threshold "
         "UINT64_MAX; before each cuda_async row, cudaMallocFromPoolAsync/cudaFreeAsync on the pool of a fresh "
         "cuda_async resource): %s\n",
         !baselines ? why : opt.cuda_malloc_baseline ? "measured in this run" : "cudaMallocAsync measured in this run, cudaMalloc left out (--no-cudamalloc)");
  if (opt.cpu_timer)
    printf("- timer: the threads' CPU time (--timer cpu): per op = all threads' CPU time over their ops; ops/s = "
           "threads / per op; vs cudaMallocAsync: ops/s over its ops/s for the same case and threads\n");
  else
    printf("- ops/s: all threads' ops over the wall time from the first thread's start to the last one's end "
           "(stream synchronised); per op: threads / (ops/s); vs cudaMallocAsync: ops/s over its ops/s for the same "
           "case and threads\n");
  printf("- memory: peak reserved = peak bytes taken from the upstream (a statistics adaptor under the "
         "sub-allocator, or the CUDA pool's reserved high-water mark); peak live = peak bytes live over all "
         "threads, from one extra untimed repetition; efficiency = reserved / live\n");
  {
    /* The C ABI's per-thread cache (docs/thread-cache.md): on unless
     * RMMGO_THREAD_CACHE turns it off. */
    const char* tc = getenv("RMMGO_THREAD_CACHE");
    bool off = tc != NULL && (strcmp(tc, "0") == 0 || strcasecmp(tc, "off") == 0 || strcasecmp(tc, "false") == 0 ||
                              strcasecmp(tc, "no") == 0);
    printf("- thread cache: %s\n", off ? "off (RMMGO_THREAD_CACHE)" : "on (pool, arena, binning, fixed_size)");
    printf("- threads: %s\n", opt.fresh_threads ? "new threads for every repetition (--fresh-threads)"
                                                 : "one set per configuration, kept for all its repetitions");
  }
  printf("- resources:\n");
  for (int r = 0; r < R_COUNT; r++) {
    if (!opt.resources[r]) continue;
    char cfg[512];
    describe_resource(r, cfg, sizeof cfg);
    printf("  - %s: %s\n", resource_names[r], cfg);
  }
  printf("\n| allocator | case | threads | stream | ops/s (median) | per op | min..max | vs cudaMallocAsync | "
         "peak reserved | peak live | reserved/live | failed allocs/rep |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  fflush(stdout);

  t_begin = now_s();
  int skipped_configs = 0;
  int max_threads = 1;
  for (int i = 0; i < opt.thread_count_n; i++)
    if (opt.threads[i] > max_threads) max_threads = opt.threads[i];
  worker* ws = calloc((size_t)max_threads, sizeof *ws);
  int failed = 0;
  for (int c = 0; c < 3; c++) {
    if (!opt.cases[c]) continue;
    const bench_case* bc = &standard_cases[c];
    size_t n = opt.num_allocations ? opt.num_allocations : bc->num_allocations;
    size_t max_size = opt.max_size ? opt.max_size : bc->max_size;
    void** ptrs = malloc((size_t)max_threads * n * sizeof *ptrs);
    size_t* sizes = malloc((size_t)max_threads * n * sizeof *sizes);
    if (ws == NULL || ptrs == NULL || sizes == NULL) {
      fprintf(stderr, "random_allocations: out of host memory\n");
      return 1;
    }
    for (int ti = 0; ti < opt.thread_count_n; ti++) {
      int threads = opt.threads[ti];
      double async_rate = 0;
      if (opt.budget_s > 0 && now_s() - t_begin > opt.budget_s) {
        for (int r = 0; r < R_COUNT; r++) skipped_configs += opt.resources[r];
        skipped_configs += baselines ? 1 + opt.cuda_malloc_baseline : 0;
        continue;
      }
      if (baselines) {
        allocator base = {"cudaMallocAsync", KIND_CUDA_MALLOC_ASYNC, NULL, NULL, NULL, false, NULL, ""};
        uint64_t max64 = UINT64_MAX, zero = 0;
        cu.set_device(opt.device);
        cu.device_synchronize();
        int rc = cu.default_mem_pool(&base.cuda_pool, opt.device);
        if (rc == 0) rc = cu.pool_set(base.cuda_pool, CUDA_MEM_POOL_ATTR_RELEASE_THRESHOLD, &max64);
        if (rc == 0) rc = cu.pool_trim(base.cuda_pool, 0);
        if (rc == 0) rc = cu.pool_set(base.cuda_pool, CUDA_MEM_POOL_ATTR_RESERVED_MEM_HIGH, &zero);
        if (rc != 0) {
          printf("| cudaMallocAsync | %s | %d | | failed: default pool: %s | | | | | | | |\n", bc->name, threads,
                 cu.error_string(rc));
        } else {
          async_rate = run_config(&base, bc->name, threads, n, max_size, max_usage, 0, ws, ptrs, sizes);
        }
        allocator plain = {"cudaMalloc", KIND_CUDA_MALLOC, NULL, NULL, NULL, false, NULL, ""};
        if (!opt.cuda_malloc_baseline) {
          /* left out on request (--no-cudamalloc) */
        } else if (opt.budget_s > 0 && now_s() - t_begin > opt.budget_s) {
          skipped_configs++;
        } else {
          run_config(&plain, bc->name, threads, n, max_size, max_usage, async_rate, ws, ptrs, sizes);
        }
      }
      for (int r = 0; r < R_COUNT; r++) {
        if (!opt.resources[r]) continue;
        if (opt.budget_s > 0 && now_s() - t_begin > opt.budget_s) {
          skipped_configs++;
          continue;
        }
        double direct_rate = 0;
        if (r == R_CUDA_ASYNC && baselines) {
          direct_rate = run_pool_baseline(bc->name, threads, n, max_size, max_usage, async_rate, ws, ptrs, sizes);
        }
        allocator a;
        char err[512] = "";
        if (!make_resource(r, max_size, &a, err, sizeof err) ||
            (opt.adaptor != 0 && r != R_CUDA && !wrap_adaptor(&a, err, sizeof err))) {
          if (a.mr != NULL) release_allocator(&a);
          printf("| %s | %s | %d | | failed to make: %s | | | | | | | |\n", resource_names[r], bc->name, threads, err);
          fflush(stdout);
          failed++;
          continue;
        }
        double rate = run_config(&a, bc->name, threads, n, max_size, max_usage, async_rate, ws, ptrs, sizes);
        if (rate <= 0) failed++;
        if (r == R_CUDA_ASYNC && baselines && n_pool_rows < MAX_POOL_ROWS) {
          pool_rows[n_pool_rows].case_name = bc->name;
          pool_rows[n_pool_rows].threads = threads;
          pool_rows[n_pool_rows].direct = direct_rate;
          pool_rows[n_pool_rows].ours = rate;
          n_pool_rows++;
        }
        release_allocator(&a);
      }
    }
    free(ptrs);
    free(sizes);
  }
  free(ws);
  print_pool_summary();
  if (opt.cases[3]) {
    size_t cap = opt.frag_cap ? opt.frag_cap : on_cuda ? (size_t)8 << 30 : total_b / 4;
    cap &= ~(((size_t)2 << 20) - 1); /* whole granules */
    if (opt.budget_s > 0 && now_s() - t_begin > opt.budget_s) skipped_configs++;
    else failed += run_fragmentation_case(cap);
  }
  printf("\n");
  if (skipped_configs > 0) printf("%d configuration(s) not run: over the --budget of %.0f s\n", skipped_configs, opt.budget_s);
  printf("total time %.1f s\n", now_s() - t_begin);
  return failed > 0 ? 1 : 0;
}
