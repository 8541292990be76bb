/*
 * rmmgo_stress.c -- rmmgo under load, through the public C API (rmmgo.h)
 * and pthreads only, with the device's free memory checked after every
 * scenario: whatever a scenario took must be back when it is done.
 *
 * Scenarios (--scenarios, default all):
 *   churn    rounds of new threads (16, then 64: --churn-threads), each
 *            holding at most --churn-budget bytes (3.5 MiB) of random sizes
 *            up to 64 KiB, on a pool that starts empty and may grow to
 *            1 GiB; the pool's peak size must stay within --churn-max-ratio
 *            (1.5) of the peak bytes live at once. Default 200 rounds of 16
 *            and 50 of 64 threads.
 *   release  for every resource kind (--kinds), rounds in which --threads (8)
 *            threads allocate and free --release-block (5 MiB) blocks while
 *            the main thread releases the resource's last handle. Calls on
 *            the handle must finish or fail with RMM_ERROR_INVALID_HANDLE;
 *            a call that begins after the release returned must fail. Blocks
 *            a thread still held when the handle went ("stranded") are
 *            freed afterwards through a resource that may free them (the
 *            cuda upstream the program kept, an equal twin of a stateless
 *            base resource, the CUDA pool's owner); sub-allocators and
 *            cuda_async must give them back themselves when they close.
 *            Default 50 rounds per kind.
 *   current  threads allocate from the current device resource while the
 *            main thread sets and resets it (pool, arena, binning,
 *            cuda_async, cuda in turn, or those of them --kinds names;
 *            through both the current-device and the per-device calls).
 *   streams  threads make streams, allocate and free on them from one
 *            shared resource (pool, arena, binning, fixed_size, cuda_async
 *            in turn) and destroy them with frees still queued, while the
 *            other threads go on with theirs.
 *   exits    threads allocate, free some blocks (to their thread caches)
 *            and exit, handing their live blocks to a thread that checks
 *            and frees them; then the pool must report 0 bytes in use. Then
 *            child processes exit while their threads allocate (main
 *            returns; a worker calls exit; the last handle is released
 *            just before): each must exit with status 0.
 * Threads check the bytes they were given: each fills the start of its
 * blocks with a tag of its own and checks it before freeing, so memory
 * handed out twice shows.
 *
 * Checks print one line each: "ok", "FAIL", or "KNOWN <bug>" for a failure
 * named in --known-bugs, which is reported but does not fail the run (a
 * listed bug that did not show says so). The bugs so named:
 *   churn-hoard            churn: the pool grows past --churn-max-ratio, or
 *                          an allocation runs out of memory with little live
 *   release-leak:<kind>    release: device memory lost for that kind
 *   release-status:<kind>  release: a call racing the release failed with a
 *                          status other than RMM_ERROR_INVALID_HANDLE
 *   current-closed         current: a call through a reference from
 *                          rmm_get_current_device_resource found the resource
 *                          closed
 *   streams-oom:<kind>     streams: an allocation ran out of memory with far
 *                          less live than the resource holds
 * The last line is "N passed, M failed, K known bugs"; the exit status is 1
 * when M > 0 (2 for bad options).
 *
 * --isolate runs each scenario (each kind, for release) in a process of its
 * own, so that a crash fails that part and the others still run: on a GPU,
 * CUDA may crash on a pool or stream a racing close destroyed. --duration
 * (every scenario but churn) and --churn-duration bound the rounds a part
 * starts, --part-timeout kills a part that hangs (the GPU bundle's budget is
 * STRESS_BUNDLE_ARGS in mk/stress.mk).
 *
 * Device memory: rmm_mem_get_info's free bytes after rmm_device_synchronize,
 * taken at the start of each scenario (after a warm-up that uses every call
 * the scenarios make) and at its end; they must be equal (--tolerance).
 * On the simulated device that is the simulated capacity less what is
 * allocated (RMMGO_SIM_MEMORY; system and sam_headroom resources need
 * RMMGO_SIM_PAGEABLE=1 there, else they are skipped as on a GPU without
 * pageable memory access).
 *
 * Build: make stress (build/rmmgo_stress); `make test-stress` runs a short
 * version on the simulated device. Run with --help for every option.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rmmgo.h"

extern char** environ;

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)
#define MAX_THREADS 256
#define TAG_BYTES 256 /* bytes of each block filled with its tag and checked */

/* ---------------------------------------------------------------- options */

enum { SC_CHURN, SC_RELEASE, SC_CURRENT, SC_STREAMS, SC_EXITS, SC_COUNT };
static const char* const scenario_names[SC_COUNT] = {"churn", "release", "current", "streams", "exits"};

/* The kinds the release scenario runs, and how each is made. */
typedef enum {
  RECLAIM_NONE,     /* the resource's close must give stranded blocks back */
  RECLAIM_TWIN,     /* an equal twin of the same kind frees them */
  RECLAIM_UPSTREAM, /* the cuda upstream the program kept frees them */
  RECLAIM_OWNER,    /* the cuda_async resource owning the CUDA pool frees them */
} reclaim_t;

typedef struct {
  const char* name;
  rmm_resource_kind kind;
  bool over_cuda; /* made over a cuda upstream the program keeps */
  reclaim_t reclaim;
} kind_spec;

static const kind_spec kinds[] = {
    {"cuda", RMM_RESOURCE_CUDA, false, RECLAIM_TWIN},
    {"managed", RMM_RESOURCE_MANAGED, false, RECLAIM_TWIN},
    {"pinned_host", RMM_RESOURCE_PINNED_HOST, false, RECLAIM_TWIN},
    {"system", RMM_RESOURCE_SYSTEM, false, RECLAIM_TWIN},
    {"sam_headroom", RMM_RESOURCE_SAM_HEADROOM, false, RECLAIM_TWIN},
    {"cuda_async", RMM_RESOURCE_CUDA_ASYNC, false, RECLAIM_NONE},
    {"cuda_async_view", RMM_RESOURCE_CUDA_ASYNC_VIEW, false, RECLAIM_OWNER},
    {"cuda_async_managed", RMM_RESOURCE_CUDA_ASYNC_MANAGED, false, RECLAIM_TWIN},
    {"callback", RMM_RESOURCE_CALLBACK, true, RECLAIM_UPSTREAM},
    {"pool", RMM_RESOURCE_POOL, true, RECLAIM_NONE},
    {"expandable", RMM_RESOURCE_EXPANDABLE, false, RECLAIM_NONE},
    {"arena", RMM_RESOURCE_ARENA, true, RECLAIM_NONE},
    {"fixed_size", RMM_RESOURCE_FIXED_SIZE, true, RECLAIM_NONE},
    {"binning", RMM_RESOURCE_BINNING, true, RECLAIM_UPSTREAM}, /* its large blocks come from the upstream */
    {"aligned", RMM_RESOURCE_ALIGNED, true, RECLAIM_UPSTREAM},
    {"failure_callback", RMM_RESOURCE_FAILURE_CALLBACK, true, RECLAIM_UPSTREAM},
    {"limiting", RMM_RESOURCE_LIMITING, true, RECLAIM_UPSTREAM},
    {"logging", RMM_RESOURCE_LOGGING, true, RECLAIM_UPSTREAM},
    {"prefetch", RMM_RESOURCE_PREFETCH, true, RECLAIM_UPSTREAM},
    {"statistics", RMM_RESOURCE_STATISTICS, true, RECLAIM_UPSTREAM},
    {"thread_safe", RMM_RESOURCE_THREAD_SAFE, true, RECLAIM_UPSTREAM},
    {"tracking", RMM_RESOURCE_TRACKING, true, RECLAIM_UPSTREAM},
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* Binning's bins (2^10 .. 2^16 bytes); the release scenario also allocates
 * small blocks on it so that both paths run. */
#define BIN_MIN_EXP 10
#define BIN_MAX_EXP 16

static struct {
  bool scenarios[SC_COUNT];
  bool kinds[NKINDS];
  double duration;       /* seconds per scenario part but churn; 0: no limit */
  double churn_duration; /* seconds per churn part; 0: no limit */
  int part_timeout;      /* seconds a scenario part may run before it is killed; 0: no limit */
  int rounds;      /* 0: each scenario's default */
  int threads;
  int churn_threads[8];
  int churn_threads_n;
  size_t churn_budget;
  size_t churn_max_size;
  size_t churn_pool_max;
  double churn_max_ratio;
  int churn_steps;
  size_t release_block;
  size_t tolerance;
  char known_bugs[1024];
  uint64_t seed;
  bool verbose;
  bool isolate;
  const char* child; /* --child MODE: this process is a child (exits scenario, or "part" for --isolate) */
} opt;

static void usage(FILE* f) {
  fprintf(f,
          "usage: rmmgo_stress [options]\n"
          "  --scenarios LIST       churn,release,current,streams,exits (default: all; \"all,-churn\":\n"
          "                         all but churn)\n"
          "  --duration SECONDS     stop starting rounds after this long, per scenario part, in\n"
          "                         every scenario but churn (default 0: no limit; every part runs\n"
          "                         at least one round)\n"
          "  --churn-duration SECONDS  the same for churn (default 0: no limit; its default rounds\n"
          "                         are the workload its pool bound is measured on)\n"
          "  --part-timeout SECONDS kill a scenario part (its process with --isolate, else the\n"
          "                         program) that runs longer: a hang fails its part rather than\n"
          "                         the whole run's time (default 0: no limit)\n"
          "  --rounds N             rounds of every scenario (default: churn 3200/threads,\n"
          "                         release 50 per kind, current 200, streams 40, exits 20)\n"
          "  --threads N            worker threads of release, current, streams, exits (default 8)\n"
          "  --churn-threads LIST   threads per churn round (default 16,64)\n"
          "  --churn-budget BYTES   most bytes one churn thread holds (default 3.5MiB)\n"
          "  --churn-max-size BYTES largest churn allocation (default 64KiB)\n"
          "  --churn-steps N        allocation steps per churn thread (default 2000)\n"
          "  --churn-pool-max BYTES the churn pool's maximum size (default 1GiB)\n"
          "  --churn-max-ratio X    pool peak size over peak live bytes allowed (default 1.5)\n"
          "  --kinds LIST           resource kinds of the release scenario, those of pool,\n"
          "                         arena, binning, cuda_async, cuda the current scenario sets,\n"
          "                         and those of pool, arena, binning, fixed_size, cuda_async\n"
          "                         the streams scenario uses\n"
          "                         (default: all; as --scenarios, \"all,-pool\" leaves one out)\n"
          "  --release-block BYTES  block size of the release scenario (default 5MiB)\n"
          "  --tolerance BYTES      device memory a scenario may lose (default 0)\n"
          "  --known-bugs LIST      failures to report without failing: churn-hoard,\n"
          "                         release-leak:KIND, release-status:KIND, current-closed,\n"
          "                         streams-oom:KIND (e.g. release-leak:pool)\n"
          "  --seed N               random seed (default 1)\n"
          "  --isolate              each scenario (each kind of release) in a process of its own\n"
          "  --verbose              progress lines on stderr\n"
          "Sizes take a unit: 512KiB, 5MiB, 1GiB. Kinds:");
  for (int i = 0; i < NKINDS; i++) fprintf(f, " %s", kinds[i].name);
  fprintf(f, "\n");
}

static bool parse_size(const char* s, size_t* out) {
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || v < 0) return false;
  double mul = 1;
  if (strcmp(end, "") == 0 || strcmp(end, "B") == 0) mul = 1;
  else if (strcmp(end, "KiB") == 0) mul = (double)KiB;
  else if (strcmp(end, "MiB") == 0) mul = (double)MiB;
  else if (strcmp(end, "GiB") == 0) mul = (double)GiB;
  else return false;
  *out = (size_t)(v * mul);
  return true;
}

static bool parse_int(const char* s, int lo, int hi, int* out) {
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = (int)v;
  return true;
}

/* Sets flags from the comma list s, in order: "all" sets every one, a name
 * sets its own, "-name" clears it (so "all,-pool" is every one but pool).
 * names[i] is at byte offset i * stride. */
static bool parse_names(const char* s, const char* const* names, size_t stride, int n, bool* flags) {
  for (int i = 0; i < n; i++) flags[i] = false;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", s);
  char* save = NULL;
  for (char* tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    bool set = tok[0] != '-';
    const char* want = set ? tok : tok + 1;
    int found = -1;
    for (int i = 0; i < n; i++) {
      const char* name = *(const char* const*)((const char*)names + (size_t)i * stride);
      if (strcmp(want, "all") == 0 || strcmp(want, name) == 0) flags[found = i] = set;
    }
    if (found < 0) {
      fprintf(stderr, "rmmgo_stress: unknown name %s\n", want);
      return false;
    }
  }
  return true;
}

static bool parse_args(int argc, char** argv) {
  for (int i = 0; i < SC_COUNT; i++) opt.scenarios[i] = true;
  for (int i = 0; i < NKINDS; i++) opt.kinds[i] = true;
  opt.threads = 8;
  opt.churn_threads[0] = 16, opt.churn_threads[1] = 64, opt.churn_threads_n = 2;
  opt.churn_budget = 3 * MiB + MiB / 2;
  opt.churn_max_size = 64 * KiB;
  opt.churn_pool_max = GiB;
  opt.churn_max_ratio = 1.5;
  opt.churn_steps = 2000;
  opt.release_block = 5 * MiB;
  opt.seed = 1;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = NULL;
    char name[64];
    const char* eq = strchr(a, '=');
    if (eq != NULL && (size_t)(eq - a) < sizeof name) { /* --name=value */
      memcpy(name, a, (size_t)(eq - a));
      name[eq - a] = '\0';
      a = name;
      v = eq + 1;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strcmp(a, "--verbose") == 0 || strcmp(a, "--isolate") == 0) {
      *(a[2] == 'v' ? &opt.verbose : &opt.isolate) = true;
      continue;
    }
    if (v == NULL) {
      if (i + 1 >= argc) {
        fprintf(stderr, "rmmgo_stress: %s needs a value\n", a);
        return false;
      }
      v = argv[++i];
    }
    bool ok = true;
    if (strcmp(a, "--scenarios") == 0) ok = parse_names(v, scenario_names, sizeof(char*), SC_COUNT, opt.scenarios);
    else if (strcmp(a, "--kinds") == 0) ok = parse_names(v, &kinds[0].name, sizeof(kind_spec), NKINDS, opt.kinds);
    else if (strcmp(a, "--duration") == 0) ok = sscanf(v, "%lf", &opt.duration) == 1 && opt.duration >= 0;
    else if (strcmp(a, "--churn-duration") == 0)
      ok = sscanf(v, "%lf", &opt.churn_duration) == 1 && opt.churn_duration >= 0;
    else if (strcmp(a, "--part-timeout") == 0) ok = parse_int(v, 0, 86400, &opt.part_timeout);
    else if (strcmp(a, "--rounds") == 0) ok = parse_int(v, 1, 1000000, &opt.rounds);
    else if (strcmp(a, "--threads") == 0) ok = parse_int(v, 1, MAX_THREADS, &opt.threads);
    else if (strcmp(a, "--churn-threads") == 0) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", v);
      opt.churn_threads_n = 0;
      char* save = NULL;
      for (char* t = strtok_r(buf, ",", &save); t != NULL && ok; t = strtok_r(NULL, ",", &save)) {
        ok = opt.churn_threads_n < 8 && parse_int(t, 1, MAX_THREADS, &opt.churn_threads[opt.churn_threads_n++]);
      }
      ok = ok && opt.churn_threads_n > 0;
    } else if (strcmp(a, "--churn-budget") == 0) ok = parse_size(v, &opt.churn_budget) && opt.churn_budget > 0;
    else if (strcmp(a, "--churn-max-size") == 0) ok = parse_size(v, &opt.churn_max_size) && opt.churn_max_size > 0;
    else if (strcmp(a, "--churn-pool-max") == 0) ok = parse_size(v, &opt.churn_pool_max);
    else if (strcmp(a, "--churn-max-ratio") == 0) ok = sscanf(v, "%lf", &opt.churn_max_ratio) == 1;
    else if (strcmp(a, "--churn-steps") == 0) ok = parse_int(v, 1, 100000000, &opt.churn_steps);
    else if (strcmp(a, "--release-block") == 0) ok = parse_size(v, &opt.release_block) && opt.release_block > 0;
    else if (strcmp(a, "--tolerance") == 0) ok = parse_size(v, &opt.tolerance);
    else if (strcmp(a, "--known-bugs") == 0) snprintf(opt.known_bugs, sizeof opt.known_bugs, "%s", v);
    else if (strcmp(a, "--seed") == 0) ok = sscanf(v, "%" SCNu64, &opt.seed) == 1;
    else if (strcmp(a, "--child") == 0) opt.child = v;
    else {
      fprintf(stderr, "rmmgo_stress: unknown option %s\n", a);
      return false;
    }
    if (!ok) {
      fprintf(stderr, "rmmgo_stress: bad value for %s: %s\n", a, v);
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------ small tools */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

typedef struct {
  uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t* r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static size_t rng_range(rng_t* r, size_t lo, size_t hi) { return lo + (size_t)(rng_next(r) % (hi - lo + 1)); }

static const char* mib(size_t bytes, char* buf, size_t n) {
  snprintf(buf, n, "%.1f MiB", (double)bytes / (double)MiB);
  return buf;
}

/* Whether a scenario part that started at t0 and has run `done` rounds of
 * `rounds` should start another, given at most `limit` seconds (0: none). */
static bool another_round_within(int done, int rounds, double t0, double limit) {
  if (done >= rounds) return false;
  if (done > 0 && limit > 0 && now() - t0 >= limit) return false;
  return true;
}

/* another_round_within --duration: every scenario but churn. */
static bool another_round(int done, int rounds, double t0) { return another_round_within(done, rounds, t0, opt.duration); }

static void progress(const char* fmt, ...) {
  if (!opt.verbose) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

/* ----------------------------------------------------------------- report */

static int n_passed, n_failed, n_known;

static bool bug_listed(const char* bug) {
  if (bug == NULL || opt.known_bugs[0] == '\0') return false;
  char buf[sizeof opt.known_bugs];
  snprintf(buf, sizeof buf, "%s", opt.known_bugs);
  char* save = NULL;
  for (char* t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(t, bug) == 0) return true;
  }
  return false;
}

/* One check. bug names the failure for --known-bugs (NULL: none may be
 * excused). Called from the main thread only. */
static void report(bool ok, const char* bug, const char* scenario, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (ok) {
    n_passed++;
    printf("ok    %s: %s%s%s%s\n", scenario, msg, bug_listed(bug) ? " (listed in --known-bugs as " : "",
           bug_listed(bug) ? bug : "", bug_listed(bug) ? ", but it did not show)" : "");
  } else if (bug_listed(bug)) {
    n_known++;
    printf("KNOWN %s: %s [known bug %s]\n", scenario, msg, bug);
  } else {
    n_failed++;
    printf("FAIL  %s: %s%s%s\n", scenario, msg, bug != NULL ? " [bug: " : "", bug != NULL ? bug : "");
    if (bug != NULL) printf("      (--known-bugs=%s would report it without failing)\n", bug);
  }
  fflush(stdout);
}

/* Unexpected statuses met by worker threads: counted, the first kept. */
typedef struct {
  pthread_mutex_t mu;
  long count;
  char first[512];
} errlog;

static void errlog_init(errlog* e) {
  pthread_mutex_init(&e->mu, NULL);
  e->count = 0;
  e->first[0] = '\0';
}

static void errlog_add(errlog* e, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&e->mu);
  if (e->count++ == 0) snprintf(e->first, sizeof e->first, "%s", msg);
  pthread_mutex_unlock(&e->mu);
}

/* A failed call: its status and the thread's message, read at once. */
static void errlog_status(errlog* e, const char* what, rmm_status st) {
  errlog_add(e, "%s: %s: %s", what, rmm_status_string(st), rmm_last_error_message());
}

static void report_errors(errlog* e, const char* scenario, const char* what) {
  report(e->count == 0, NULL, scenario, "%s: %ld unexpected failure(s)%s%s", what, e->count,
         e->count > 0 ? "; first: " : "", e->first);
}

/* A call from the main thread that must succeed; false (reported) if not. */
static bool must(rmm_status st, const char* scenario, const char* what) {
  if (st == RMM_SUCCESS) return true;
  report(false, NULL, scenario, "%s: %s: %s", what, rmm_status_string(st), rmm_last_error_message());
  return false;
}

/* --------------------------------------------------------- device memory */

static size_t device_free(void) {
  size_t free_b = 0, total = 0;
  rmm_device_synchronize();
  if (rmm_mem_get_info(&free_b, &total) != RMM_SUCCESS) {
    fprintf(stderr, "rmmgo_stress: rmm_mem_get_info: %s\n", rmm_last_error_message());
    exit(1);
  }
  return free_b;
}

/* Checks that the device's free memory is back to start (within
 * --tolerance). A GPU may take a moment to show memory a child process or a
 * destroyed pool gave back, so a shortfall is looked at again for up to 2 s. */
static void check_memory_within(const char* scenario, const char* bug, size_t start, size_t tolerance) {
  size_t end = device_free();
  for (int i = 0; i < 20 && end + tolerance < start; i++) {
    sleep_us(100000);
    end = device_free();
  }
  char a[32], b[32], c[32];
  if (end + tolerance >= start) {
    report(true, bug, scenario, "device memory back: %s free at the start, %s at the end", mib(start, a, sizeof a),
           mib(end, b, sizeof b));
  } else {
    report(false, bug, scenario, "device memory lost: %s (%s free at the start, %s at the end)",
           mib(start - end, c, sizeof c), mib(start, a, sizeof a), mib(end, b, sizeof b));
  }
}

static void check_memory(const char* scenario, const char* bug, size_t start) {
  check_memory_within(scenario, bug, start, opt.tolerance);
}

/* What the driver may keep of a child process that exited: on an H100
 * (driver 580) free memory read 0.1 MiB lower after three children had
 * come and gone, and still after check_memory's 2 s of looking again. Whatever a child's pool
 * held is at least one 2 MiB chunk, so a lost chunk still fails. */
#define CHILD_EXIT_SLACK (1024 * KiB)

/* ------------------------------------------------------ tagged blocks */

/* The tag a thread writes into the first bytes of a block: never 0, so
 * freshly zeroed memory does not pass for it. */
static unsigned char next_tag(rng_t* r) { return (unsigned char)(rng_next(r) % 255 + 1); }

static rmm_status tag_block(void* p, size_t n, unsigned char tag, rmm_stream_t s) {
  return rmm_memset(p, tag, n < TAG_BYTES ? n : TAG_BYTES, s);
}

/* Reads the tagged bytes back (after the stream's work) and compares. */
static bool check_block(void* p, size_t n, unsigned char tag, rmm_stream_t s, errlog* e) {
  unsigned char buf[TAG_BYTES];
  size_t k = n < TAG_BYTES ? n : TAG_BYTES;
  rmm_status st = rmm_memcpy(buf, p, k, s);
  if (st == RMM_SUCCESS) st = rmm_stream_synchronize(s);
  if (st != RMM_SUCCESS) {
    errlog_status(e, "reading a block back", st);
    return false;
  }
  for (size_t i = 0; i < k; i++) {
    if (buf[i] != tag) {
      errlog_add(e, "block %p (%zu bytes): byte %zu is 0x%02x, its owner wrote 0x%02x: handed out twice?", p, n, i,
                 buf[i], tag);
      return false;
    }
  }
  return true;
}

/* ================================================================= churn */

typedef struct {
  rmm_resource_t mr;
  uint64_t seed;
  errlog* errors;
  errlog* oom; /* allocations that ran out of memory */
} churn_arg;

static atomic_size_t churn_live, churn_peak;

static void churn_add(size_t n) {
  size_t live = atomic_fetch_add(&churn_live, n) + n;
  size_t peak = atomic_load(&churn_peak);
  while (live > peak && !atomic_compare_exchange_weak(&churn_peak, &peak, live)) {
  }
}

typedef struct {
  void* p;
  size_t n;
  unsigned char tag;
} block;

/* One thread of a churn round: random steps of allocating (while under its
 * budget) and freeing, every block tagged and checked; it frees what it
 * holds and exits. */
static void* churn_thread(void* argp) {
  churn_arg* a = argp;
  rng_t r = {a->seed};
  size_t cap = opt.churn_budget / 256 + 1;
  if (cap > 4096) cap = 4096;
  block* b = calloc(cap, sizeof *b);
  size_t nb = 0, held = 0;
  if (b == NULL) {
    errlog_add(a->errors, "out of host memory");
    return NULL;
  }
  for (int step = 0; step < opt.churn_steps; step++) {
    size_t n = rng_range(&r, 1, opt.churn_max_size);
    bool alloc = nb == 0 || (rng_next(&r) % 100 < 60 && nb < cap && held + n <= opt.churn_budget);
    if (alloc) {
      void* p = NULL;
      rmm_status st = rmm_allocate(a->mr, NULL, n, RMM_DEFAULT_ALIGNMENT, &p);
      if (st != RMM_SUCCESS) {
        errlog_status(st == RMM_ERROR_OUT_OF_MEMORY ? a->oom : a->errors, "rmm_allocate", st);
        continue;
      }
      unsigned char tag = next_tag(&r);
      if ((st = tag_block(p, n, tag, NULL)) != RMM_SUCCESS) errlog_status(a->errors, "rmm_memset", st);
      b[nb++] = (block){p, n, tag};
      held += n;
      churn_add(n);
    } else {
      size_t i = rng_range(&r, 0, nb - 1);
      block k = b[i];
      b[i] = b[--nb];
      if (rng_next(&r) % 8 == 0) check_block(k.p, k.n, k.tag, NULL, a->errors);
      atomic_fetch_sub(&churn_live, k.n);
      held -= k.n;
      rmm_status st = rmm_deallocate(a->mr, NULL, k.p, k.n, RMM_DEFAULT_ALIGNMENT);
      if (st != RMM_SUCCESS) errlog_status(a->errors, "rmm_deallocate", st);
    }
  }
  while (nb > 0) {
    block k = b[--nb];
    atomic_fetch_sub(&churn_live, k.n);
    rmm_status st = rmm_deallocate(a->mr, NULL, k.p, k.n, RMM_DEFAULT_ALIGNMENT);
    if (st != RMM_SUCCESS) errlog_status(a->errors, "rmm_deallocate", st);
  }
  free(b);
  return NULL;
}

static void scenario_churn(void) {
  for (int ci = 0; ci < opt.churn_threads_n; ci++) {
    int nt = opt.churn_threads[ci];
    int rounds = opt.rounds > 0 ? opt.rounds : (3200 + nt - 1) / nt;
    char name[64];
    snprintf(name, sizeof name, "churn[%d threads]", nt);
    size_t start = device_free();
    rmm_resource_t cuda = NULL, pool = NULL;
    rmm_resource_options o;
    rmm_resource_options_init(&o);
    if (!must(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda), name, "creating the cuda resource")) return;
    o.upstream = cuda;
    o.initial_pool_size = 0;
    o.maximum_pool_size = opt.churn_pool_max;
    if (!must(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool), name, "creating the pool")) return;
    rmm_resource_release(cuda); /* the pool holds its upstream */

    errlog errors, oom;
    errlog_init(&errors);
    errlog_init(&oom);
    atomic_store(&churn_live, 0);
    atomic_store(&churn_peak, 0);
    size_t peak_pool = 0;
    double t0 = now();
    int done = 0;
    pthread_t th[MAX_THREADS];
    churn_arg args[MAX_THREADS];
    while (another_round_within(done, rounds, t0, opt.churn_duration)) {
      for (int t = 0; t < nt; t++) {
        args[t] = (churn_arg){pool, opt.seed * 1000003u + (uint64_t)done * MAX_THREADS + (uint64_t)t, &errors, &oom};
        if (pthread_create(&th[t], NULL, churn_thread, &args[t]) != 0) {
          fprintf(stderr, "rmmgo_stress: pthread_create failed\n");
          exit(1);
        }
      }
      for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
      size_t sz = 0;
      if (rmm_pool_size(pool, &sz) == RMM_SUCCESS && sz > peak_pool) peak_pool = sz;
      done++;
      if (done % 10 == 0) progress("%s: round %d, pool %zu MiB", name, done, peak_pool >> 20);
    }
    size_t peak_live = atomic_load(&churn_peak);
    report_errors(&errors, name, "allocations, frees and tag checks");
    char m[32];
    report(oom.count == 0, "churn-hoard", name,
           "no allocation ran out of memory with at most %s live (%ld did%s%s)",
           mib((size_t)nt * opt.churn_budget, m, sizeof m), oom.count, oom.count > 0 ? "; first: " : "", oom.first);
    double ratio = peak_live > 0 ? (double)peak_pool / (double)peak_live : 0;
    char a[32], b[32];
    report(peak_live > 0 && ratio <= opt.churn_max_ratio, "churn-hoard", name,
           "%d rounds of %d new threads: pool peak %s for %s peak live (%.2fx; at most %.2fx)", done, nt,
           mib(peak_pool, a, sizeof a), mib(peak_live, b, sizeof b), ratio, opt.churn_max_ratio);
    must(rmm_resource_release(pool), name, "releasing the pool");
    check_memory(name, NULL, start);
  }
}

/* =============================================================== release */

/* The callback kind allocates from a cuda resource the program keeps. */
static void* cb_alloc(size_t bytes, rmm_stream_t stream, void* arg) {
  void* p = NULL;
  return rmm_allocate((rmm_resource_t)arg, stream, bytes, RMM_DEFAULT_ALIGNMENT, &p) == RMM_SUCCESS ? p : NULL;
}
static void cb_free(void* p, size_t bytes, rmm_stream_t stream, void* arg) {
  rmm_deallocate((rmm_resource_t)arg, stream, p, bytes, RMM_DEFAULT_ALIGNMENT);
}
static int cb_failure(size_t bytes, void* arg) {
  (void)bytes, (void)arg;
  return 0; /* give up: the out-of-memory reaches the caller */
}

/* One round's resources: mr is the program's only reference to the
 * resource under test; the others are released after the round. */
typedef struct {
  rmm_resource_t mr;
  rmm_resource_t upstream;  /* the cuda upstream (over_cuda kinds) */
  rmm_resource_t twin;      /* an equal twin (RECLAIM_TWIN), or NULL */
  rmm_resource_t owner;     /* the cuda_async owning a view's pool */
  char log_file[64];
} chain;

static rmm_status make_kind(const kind_spec* k, chain* c) {
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  rmm_status st = RMM_SUCCESS;
  if (k->over_cuda) {
    if ((st = rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &c->upstream)) != RMM_SUCCESS) return st;
    o.upstream = c->upstream;
  }
  switch (k->kind) {
    case RMM_RESOURCE_SAM_HEADROOM: o.headroom = 64 * MiB; break;
    case RMM_RESOURCE_CUDA_ASYNC_VIEW: {
      rmm_mem_pool_t pool = NULL;
      if ((st = rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC, NULL, &c->owner)) != RMM_SUCCESS) return st;
      if ((st = rmm_cuda_async_pool_handle(c->owner, &pool)) != RMM_SUCCESS) return st;
      o.pool_handle = pool;
      break;
    }
    case RMM_RESOURCE_CALLBACK:
      o.upstream = NULL;
      o.allocate_callback = cb_alloc;
      o.deallocate_callback = cb_free;
      o.allocate_arg = c->upstream;
      o.deallocate_arg = c->upstream;
      break;
    case RMM_RESOURCE_POOL: o.initial_pool_size = 0; break;
    case RMM_RESOURCE_ARENA: o.arena_size = 256 * MiB; break;
    case RMM_RESOURCE_FIXED_SIZE:
      o.block_size = opt.release_block;
      o.blocks_to_preallocate = 4;
      break;
    case RMM_RESOURCE_BINNING:
      o.min_size_exponent = BIN_MIN_EXP;
      o.max_size_exponent = BIN_MAX_EXP;
      break;
    case RMM_RESOURCE_FAILURE_CALLBACK: o.failure_callback = cb_failure; break;
    case RMM_RESOURCE_LIMITING: o.allocation_limit = 4 * GiB; break;
    case RMM_RESOURCE_LOGGING:
      snprintf(c->log_file, sizeof c->log_file, "/tmp/rmmgo_stress_%d.csv", (int)getpid());
      o.log_file = c->log_file;
      break;
    default: break;
  }
  bool plain = k->kind == RMM_RESOURCE_CUDA || k->kind == RMM_RESOURCE_MANAGED ||
               k->kind == RMM_RESOURCE_PINNED_HOST || k->kind == RMM_RESOURCE_SYSTEM ||
               k->kind == RMM_RESOURCE_CUDA_ASYNC || k->kind == RMM_RESOURCE_CUDA_ASYNC_MANAGED ||
               k->kind == RMM_RESOURCE_EXPANDABLE;
  if ((st = rmm_resource_create(k->kind, plain ? NULL : &o, &c->mr)) != RMM_SUCCESS) return st;
  if (k->reclaim == RECLAIM_TWIN) {
    int equal = 0;
    if (rmm_resource_create(k->kind, plain ? NULL : &o, &c->twin) != RMM_SUCCESS ||
        rmm_resource_is_equal(c->mr, c->twin, &equal) != RMM_SUCCESS || !equal) {
      if (c->twin != NULL) rmm_resource_release(c->twin);
      c->twin = NULL; /* no equal twin: the close must give stranded blocks back */
    }
  }
  return RMM_SUCCESS;
}

static void release_chain(chain* c) {
  if (c->twin != NULL) rmm_resource_release(c->twin);
  if (c->upstream != NULL) rmm_resource_release(c->upstream);
  if (c->owner != NULL) rmm_resource_release(c->owner);
  if (c->log_file[0] != '\0') unlink(c->log_file);
}

/* Shared by the main thread and the workers of one release round. */
typedef struct {
  const kind_spec* k;
  rmm_resource_t mr;
  atomic_int releasing; /* the main thread is about to release mr */
  atomic_int released;  /* the release returned */
  atomic_long ops;
  errlog* errors; /* failures while nothing was being released */
  errlog* racing; /* failures other than RMM_ERROR_INVALID_HANDLE of calls racing the release */
  pthread_mutex_t mu;
  block stranded[MAX_THREADS];
  int nstranded;
  long late_successes; /* calls that began after the release and succeeded */
} release_round;

typedef struct {
  release_round* round;
  uint64_t seed;
} release_arg;

static void* release_thread(void* argp) {
  release_arg* a = argp;
  release_round* rr = a->round;
  rng_t r = {a->seed};
  double deadline = 0;
  for (;;) {
    size_t n = opt.release_block;
    if (rr->k->kind == RMM_RESOURCE_BINNING && rng_next(&r) % 2 == 0) n = rng_range(&r, 1, (size_t)1 << BIN_MAX_EXP);
    bool after = atomic_load(&rr->released) != 0;
    if (after && deadline == 0) deadline = now() + 2.0;
    void* p = NULL;
    rmm_status st = rmm_allocate(rr->mr, NULL, n, RMM_DEFAULT_ALIGNMENT, &p);
    if (st != RMM_SUCCESS) {
      if (!atomic_load(&rr->releasing)) {
        errlog_status(rr->errors, "rmm_allocate", st);
        continue;
      }
      if (st != RMM_ERROR_INVALID_HANDLE) errlog_status(rr->racing, "rmm_allocate", st);
      break;
    }
    if (after) {
      pthread_mutex_lock(&rr->mu);
      rr->late_successes++;
      pthread_mutex_unlock(&rr->mu);
    }
    atomic_fetch_add(&rr->ops, 1);
    after = atomic_load(&rr->released) != 0;
    st = rmm_deallocate(rr->mr, NULL, p, n, RMM_DEFAULT_ALIGNMENT);
    if (st != RMM_SUCCESS && atomic_load(&rr->releasing)) {
      /* The block stays with this thread: freed after the round if another
       * resource may free it. */
      if (st != RMM_ERROR_INVALID_HANDLE) errlog_status(rr->racing, "rmm_deallocate", st);
      pthread_mutex_lock(&rr->mu);
      rr->stranded[rr->nstranded++] = (block){p, n, 0};
      pthread_mutex_unlock(&rr->mu);
      break;
    }
    if (st != RMM_SUCCESS) errlog_status(rr->errors, "rmm_deallocate", st);
    if (after && st == RMM_SUCCESS) {
      pthread_mutex_lock(&rr->mu);
      rr->late_successes++;
      pthread_mutex_unlock(&rr->mu);
    }
    if (deadline != 0 && now() > deadline) {
      errlog_add(rr->errors, "the handle still works 2 s after its last reference was released");
      break;
    }
  }
  return NULL;
}

static void release_kind(const kind_spec* k) {
  char name[64];
  snprintf(name, sizeof name, "release[%s]", k->name);
  char leak_bug[64], status_bug[64];
  snprintf(leak_bug, sizeof leak_bug, "release-leak:%s", k->name);
  snprintf(status_bug, sizeof status_bug, "release-status:%s", k->name);
  int rounds = opt.rounds > 0 ? opt.rounds : 50;
  int nt = opt.threads;
  errlog errors, racing;
  errlog_init(&errors);
  errlog_init(&racing);
  size_t start = device_free();
  double t0 = now();
  int done = 0;
  long stranded = 0, reclaimed = 0, late = 0, ops = 0;
  pthread_t th[MAX_THREADS];
  release_arg args[MAX_THREADS];
  while (another_round(done, rounds, t0)) {
    chain c;
    memset(&c, 0, sizeof c);
    rmm_status st = make_kind(k, &c);
    if (st == RMM_ERROR_NOT_SUPPORTED && done == 0) {
      printf("skip  %s: not supported here: %s\n", name, rmm_last_error_message());
      release_chain(&c);
      return;
    }
    if (!must(st, name, "creating the resource")) {
      release_chain(&c);
      return;
    }
    release_round rr;
    memset(&rr, 0, sizeof rr);
    rr.k = k;
    rr.mr = c.mr;
    rr.errors = &errors;
    rr.racing = &racing;
    pthread_mutex_init(&rr.mu, NULL);
    for (int t = 0; t < nt; t++) {
      args[t] = (release_arg){&rr, opt.seed * 7919u + (uint64_t)done * MAX_THREADS + (uint64_t)t};
      if (pthread_create(&th[t], NULL, release_thread, &args[t]) != 0) exit(1);
    }
    /* Let every thread get going, then release at a random moment. */
    rng_t r = {opt.seed + (uint64_t)done};
    double wait_until = now() + 2.0;
    while (atomic_load(&rr.ops) < 2L * nt && now() < wait_until) sched_yield();
    sleep_us((long)rng_range(&r, 0, 500));
    atomic_store(&rr.releasing, 1);
    must(rmm_resource_release(c.mr), name, "releasing the last handle");
    atomic_store(&rr.released, 1);
    for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
    /* Give back what the threads held when the handle went, where another
     * resource may free it. */
    for (int i = 0; i < rr.nstranded; i++) {
      rmm_resource_t via = NULL;
      if (k->reclaim == RECLAIM_TWIN) via = c.twin;
      else if (k->reclaim == RECLAIM_OWNER) via = c.owner;
      else if (k->reclaim == RECLAIM_UPSTREAM && !(k->kind == RMM_RESOURCE_BINNING &&
                                                   rr.stranded[i].n <= ((size_t)1 << BIN_MAX_EXP)))
        via = c.upstream;
      if (via != NULL &&
          rmm_deallocate(via, NULL, rr.stranded[i].p, rr.stranded[i].n, RMM_DEFAULT_ALIGNMENT) == RMM_SUCCESS)
        reclaimed++;
    }
    stranded += rr.nstranded;
    late += rr.late_successes;
    ops += atomic_load(&rr.ops);
    release_chain(&c);
    pthread_mutex_destroy(&rr.mu);
    done++;
  }
  progress("%s: %d rounds, %ld ops, %ld blocks stranded, %ld freed afterwards", name, done, ops, stranded,
           reclaimed);
  report_errors(&errors, name, "calls before the release");
  report(racing.count == 0, status_bug, name,
         "%d rounds, %ld blocks held when the handle went: calls racing the release succeed or fail with "
         "RMM_ERROR_INVALID_HANDLE (%ld did not%s%s)",
         done, stranded, racing.count, racing.count > 0 ? "; first: " : "", racing.first);
  report(late == 0, NULL, name, "no call that began after the release returned succeeded (%ld did)", late);
  check_memory(name, leak_bug, start);
}

static void scenario_release(void) {
  for (int i = 0; i < NKINDS; i++) {
    if (opt.kinds[i]) release_kind(&kinds[i]);
  }
}

/* =============================================================== current */

typedef struct {
  atomic_int stop;
  errlog* errors;
  errlog* closed; /* calls through a getter's reference that found the resource closed */
  atomic_long ops;
} current_state;

/* A failed call through a reference the thread holds: "resource closed"
 * means the reference did not keep its resource open. */
static void current_failure(current_state* s, const char* what, rmm_status st) {
  errlog_status(strstr(rmm_last_error_message(), "resource closed") != NULL ? s->closed : s->errors, what, st);
}

typedef struct {
  current_state* s;
  uint64_t seed;
} current_arg;

static void* current_thread(void* argp) {
  current_arg* a = argp;
  rng_t r = {a->seed};
  while (!atomic_load(&a->s->stop)) {
    rmm_resource_t mr = NULL;
    rmm_status st = rmm_get_current_device_resource(&mr);
    if (st != RMM_SUCCESS) {
      errlog_status(a->s->errors, "rmm_get_current_device_resource", st);
      continue;
    }
    size_t n = rng_range(&r, 1, MiB);
    void* p = NULL;
    st = rmm_allocate(mr, NULL, n, RMM_DEFAULT_ALIGNMENT, &p);
    if (st == RMM_SUCCESS) {
      unsigned char tag = next_tag(&r);
      if ((st = tag_block(p, n, tag, NULL)) != RMM_SUCCESS) errlog_status(a->s->errors, "rmm_memset", st);
      check_block(p, n, tag, NULL, a->s->errors);
      if ((st = rmm_deallocate(mr, NULL, p, n, RMM_DEFAULT_ALIGNMENT)) != RMM_SUCCESS)
        current_failure(a->s, "rmm_deallocate", st);
      atomic_fetch_add(&a->s->ops, 1);
    } else {
      current_failure(a->s, "rmm_allocate", st);
    }
    if ((st = rmm_resource_release(mr)) != RMM_SUCCESS) errlog_status(a->s->errors, "rmm_resource_release", st);
  }
  return NULL;
}

/* kinds[]'s name for kind. */
static const char* kind_name(rmm_resource_kind kind) {
  for (int k = 0; k < NKINDS; k++) {
    if (kinds[k].kind == kind) return kinds[k].name;
  }
  return "?";
}

/* A new resource of kind in *out: a sub-allocator (pool, arena, binning,
 * fixed_size) over a cuda upstream that it alone holds, with small sizes (a
 * pool that starts empty, an arena of arena_size, bins 2^BIN_MIN_EXP to
 * 2^BIN_MAX_EXP, blocks of block_size, 16 at a time); any other kind from
 * its defaults. Failures are counted under name. */
static bool make_resource(rmm_resource_kind kind, size_t arena_size, size_t block_size, const char* name,
                          rmm_resource_t* out) {
  bool sub = kind == RMM_RESOURCE_POOL || kind == RMM_RESOURCE_ARENA || kind == RMM_RESOURCE_BINNING ||
             kind == RMM_RESOURCE_FIXED_SIZE;
  rmm_resource_t cuda = NULL;
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  if (sub) {
    if (!must(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda), name, "creating cuda")) return false;
    o.upstream = cuda;
    o.initial_pool_size = 0;
    o.arena_size = arena_size;
    o.min_size_exponent = BIN_MIN_EXP;
    o.max_size_exponent = BIN_MAX_EXP;
    o.block_size = block_size;
    o.blocks_to_preallocate = 16;
  }
  bool ok = must(rmm_resource_create(kind, sub ? &o : NULL, out), name, "creating the resource");
  if (cuda != NULL) rmm_resource_release(cuda);
  return ok;
}

static void scenario_current(void) {
  const char* name = "current";
  static const rmm_resource_kind all[] = {RMM_RESOURCE_POOL, RMM_RESOURCE_ARENA, RMM_RESOURCE_BINNING,
                                          RMM_RESOURCE_CUDA_ASYNC, RMM_RESOURCE_CUDA};
  /* The kinds set current in turn: those of --kinds among them. */
  rmm_resource_kind cycle[sizeof all / sizeof all[0]];
  int ncycle = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    for (int k = 0; k < NKINDS; k++) {
      if (kinds[k].kind == all[i] && opt.kinds[k]) cycle[ncycle++] = all[i];
    }
  }
  if (ncycle == 0) {
    printf("skip  %s: --kinds names none of pool, arena, binning, cuda_async, cuda\n", name);
    return;
  }
  int rounds = opt.rounds > 0 ? opt.rounds : 200;
  int nt = opt.threads;
  size_t start = device_free();
  errlog errors, closed;
  errlog_init(&errors);
  errlog_init(&closed);
  current_state s;
  memset(&s, 0, sizeof s);
  s.errors = &errors;
  s.closed = &closed;
  pthread_t th[MAX_THREADS];
  current_arg args[MAX_THREADS];
  for (int t = 0; t < nt; t++) {
    args[t] = (current_arg){&s, opt.seed * 104729u + (uint64_t)t};
    if (pthread_create(&th[t], NULL, current_thread, &args[t]) != 0) exit(1);
  }
  double t0 = now();
  int done = 0, device = 0;
  rmm_get_device(&device);
  while (another_round(done, rounds, t0)) {
    rmm_resource_kind kind = cycle[done % ncycle];
    rmm_resource_t mr = NULL, prev = NULL;
    if (!make_resource(kind, 128 * MiB, 64 * KiB, name, &mr)) break;
    /* Set it current (every other round through the per-device call); the
     * slot then holds the only reference. */
    rmm_status st = done % 2 == 0 ? rmm_set_current_device_resource(mr, &prev)
                                  : rmm_set_per_device_resource(device, mr, &prev);
    bool ok = must(st, name, "setting the current resource");
    rmm_resource_release(mr);
    if (prev != NULL) rmm_resource_release(prev);
    if (!ok) break;
    long ops0 = atomic_load(&s.ops);
    double until = now() + 0.5;
    while (atomic_load(&s.ops) < ops0 + nt && now() < until) sched_yield();
    prev = NULL;
    st = done % 3 == 0 ? rmm_reset_per_device_resource(device, &prev) : rmm_reset_current_device_resource(&prev);
    if (!must(st, name, "resetting the current resource")) break;
    if (prev != NULL) rmm_resource_release(prev);
    ops0 = atomic_load(&s.ops);
    until = now() + 0.5;
    while (atomic_load(&s.ops) < ops0 + 1 && now() < until) sched_yield();
    done++;
  }
  atomic_store(&s.stop, 1);
  for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
  report_errors(&errors, name, "allocations through the current resource while it changed");
  report(closed.count == 0, "current-closed", name,
         "a reference from rmm_get_current_device_resource keeps its resource open (%ld calls found it closed%s%s)",
         closed.count, closed.count > 0 ? "; first: " : "", closed.first);
  /* After a reset the current resource is a cuda resource again. */
  rmm_resource_t mr = NULL;
  rmm_resource_kind kind = 0;
  if (must(rmm_get_current_device_resource(&mr), name, "getting the current resource")) {
    rmm_resource_kind_of(mr, &kind);
    rmm_resource_release(mr);
    report(kind == RMM_RESOURCE_CUDA, NULL, name, "%d rounds of set and reset, %ld allocations: the reset "
           "resource is a cuda resource (kind %d)", done, atomic_load(&s.ops), (int)kind);
  }
  check_memory(name, NULL, start);
}

/* =============================================================== streams */

typedef struct {
  rmm_resource_t mr;
  uint64_t seed;
  int rounds;
  errlog* errors;
  errlog* oom; /* allocations that ran out of memory, with little live */
  atomic_long* ops;
} streams_arg;

#define STREAM_BLOCKS 16

/* Rounds of: make a stream, allocate and tag blocks on it, free half of them
 * on it, destroy it with those frees queued, wait for the device, check and
 * free the other half on the default stream. */
static void* streams_thread(void* argp) {
  streams_arg* a = argp;
  rng_t r = {a->seed};
  for (int round = 0; round < a->rounds; round++) {
    rmm_stream_t s = NULL;
    rmm_status st = round % 2 == 0 ? rmm_stream_create(&s) : rmm_stream_create_with_flags(&s, RMM_STREAM_SYNC_DEFAULT);
    if (st != RMM_SUCCESS) {
      errlog_status(a->errors, "rmm_stream_create", st);
      continue;
    }
    block b[STREAM_BLOCKS];
    int nb = 0;
    for (int i = 0; i < STREAM_BLOCKS; i++) {
      size_t n = rng_range(&r, 1, 256 * KiB);
      void* p = NULL;
      if ((st = rmm_allocate(a->mr, s, n, RMM_DEFAULT_ALIGNMENT, &p)) != RMM_SUCCESS) {
        errlog_status(st == RMM_ERROR_OUT_OF_MEMORY ? a->oom : a->errors, "rmm_allocate on a created stream", st);
        continue;
      }
      unsigned char tag = next_tag(&r);
      if ((st = tag_block(p, n, tag, s)) != RMM_SUCCESS) errlog_status(a->errors, "rmm_memset", st);
      b[nb++] = (block){p, n, tag};
      atomic_fetch_add(a->ops, 1);
    }
    int half = nb / 2;
    for (int i = 0; i < half; i++) {
      check_block(b[i].p, b[i].n, b[i].tag, s, a->errors);
      if ((st = rmm_deallocate(a->mr, s, b[i].p, b[i].n, RMM_DEFAULT_ALIGNMENT)) != RMM_SUCCESS)
        errlog_status(a->errors, "rmm_deallocate on a created stream", st);
    }
    if ((st = rmm_stream_destroy(s)) != RMM_SUCCESS) errlog_status(a->errors, "rmm_stream_destroy", st);
    if ((st = rmm_device_synchronize()) != RMM_SUCCESS) errlog_status(a->errors, "rmm_device_synchronize", st);
    for (int i = half; i < nb; i++) {
      check_block(b[i].p, b[i].n, b[i].tag, NULL, a->errors);
      if ((st = rmm_deallocate(a->mr, NULL, b[i].p, b[i].n, RMM_DEFAULT_ALIGNMENT)) != RMM_SUCCESS)
        errlog_status(a->errors, "rmm_deallocate on the default stream", st);
    }
  }
  return NULL;
}

/* Whether --kinds names kind. */
static bool kind_selected(rmm_resource_kind kind) {
  for (int k = 0; k < NKINDS; k++) {
    if (kinds[k].kind == kind && opt.kinds[k]) return true;
  }
  return false;
}

static void scenario_streams(void) {
  static const rmm_resource_kind cycle[] = {RMM_RESOURCE_POOL, RMM_RESOURCE_ARENA, RMM_RESOURCE_BINNING,
                                            RMM_RESOURCE_FIXED_SIZE, RMM_RESOURCE_CUDA_ASYNC};
  int rounds = opt.rounds > 0 ? opt.rounds : 40;
  int nt = opt.threads;
  for (size_t ki = 0; ki < sizeof cycle / sizeof cycle[0]; ki++) {
    rmm_resource_kind kind = cycle[ki];
    if (!kind_selected(kind)) continue;
    char name[64];
    rmm_resource_t mr = NULL;
    snprintf(name, sizeof name, "streams[%s]", kind_name(kind));
    size_t start = device_free();
    if (!make_resource(kind, 256 * MiB, 256 * KiB, name, &mr)) return;
    errlog errors, oom;
    errlog_init(&errors);
    errlog_init(&oom);
    atomic_long ops = 0;
    /* Threads run their rounds in slices so that --duration can stop them. */
    double t0 = now();
    int done = 0, slice = rounds < 4 ? rounds : 4;
    pthread_t th[MAX_THREADS];
    streams_arg args[MAX_THREADS];
    while (another_round(done, rounds, t0)) {
      int n = rounds - done < slice ? rounds - done : slice;
      for (int t = 0; t < nt; t++) {
        args[t] = (streams_arg){mr,   opt.seed * 15485863u + (uint64_t)done * MAX_THREADS + (uint64_t)t,
                                n,    &errors,
                                &oom, &ops};
        if (pthread_create(&th[t], NULL, streams_thread, &args[t]) != 0) exit(1);
      }
      for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
      done += n;
    }
    report_errors(&errors, name, "allocations on streams destroyed with frees queued");
    char bug[64], m[32];
    snprintf(bug, sizeof bug, "streams-oom:%s", kind_name(kind));
    report(oom.count == 0, bug, name, "no allocation ran out of memory with at most %s live (%ld did%s%s)",
           mib((size_t)nt * STREAM_BLOCKS * 256 * KiB, m, sizeof m), oom.count, oom.count > 0 ? "; first: " : "",
           oom.first);
    report(atomic_load(&ops) > 0, NULL, name, "%d rounds x %d threads: %ld blocks on created streams", done, nt,
           atomic_load(&ops));
    must(rmm_resource_release(mr), name, "releasing the resource");
    check_memory(name, NULL, start);
  }
}

/* ================================================================= exits */

typedef struct {
  rmm_resource_t mr;
  uint64_t seed;
  errlog* errors;
  block* handoff; /* this thread's blocks for the checking thread */
  int nhandoff;
} exit_arg;

#define EXIT_BLOCKS 32

/* Allocates, frees half (into its thread cache), hands the rest over, and
 * exits. */
static void* exiting_thread(void* argp) {
  exit_arg* a = argp;
  rng_t r = {a->seed};
  block b[EXIT_BLOCKS];
  int nb = 0;
  for (int i = 0; i < EXIT_BLOCKS; i++) {
    size_t n = rng_range(&r, 1, 64 * KiB);
    void* p = NULL;
    rmm_status st = rmm_allocate(a->mr, NULL, n, RMM_DEFAULT_ALIGNMENT, &p);
    if (st != RMM_SUCCESS) {
      errlog_status(a->errors, "rmm_allocate", st);
      continue;
    }
    unsigned char tag = next_tag(&r);
    if ((st = tag_block(p, n, tag, NULL)) != RMM_SUCCESS) errlog_status(a->errors, "rmm_memset", st);
    b[nb++] = (block){p, n, tag};
  }
  a->nhandoff = 0;
  for (int i = 0; i < nb; i++) {
    if (i % 2 == 0) {
      check_block(b[i].p, b[i].n, b[i].tag, NULL, a->errors);
      rmm_status st = rmm_deallocate(a->mr, NULL, b[i].p, b[i].n, RMM_DEFAULT_ALIGNMENT);
      if (st != RMM_SUCCESS) errlog_status(a->errors, "rmm_deallocate", st);
    } else {
      a->handoff[a->nhandoff++] = b[i];
    }
  }
  return NULL;
}

typedef struct {
  rmm_resource_t mr;
  exit_arg* from;
  int nfrom;
  errlog* errors;
} checker_arg;

/* Checks and frees the blocks exited threads handed over. */
static void* checker_thread(void* argp) {
  checker_arg* c = argp;
  for (int t = 0; t < c->nfrom; t++) {
    for (int i = 0; i < c->from[t].nhandoff; i++) {
      block k = c->from[t].handoff[i];
      check_block(k.p, k.n, k.tag, NULL, c->errors);
      rmm_status st = rmm_deallocate(c->mr, NULL, k.p, k.n, RMM_DEFAULT_ALIGNMENT);
      if (st != RMM_SUCCESS) errlog_status(c->errors, "rmm_deallocate of an exited thread's block", st);
    }
  }
  return NULL;
}

static void exits_threads(rmm_resource_kind kind) {
  char name[64];
  snprintf(name, sizeof name, "exits[%s]", kind_name(kind));
  int rounds = opt.rounds > 0 ? opt.rounds : 20;
  int nt = opt.threads;
  size_t start = device_free();
  rmm_resource_t mr = NULL;
  if (!make_resource(kind, 128 * MiB, 64 * KiB, name, &mr)) return;
  errlog errors;
  errlog_init(&errors);
  double t0 = now();
  int done = 0;
  pthread_t th[MAX_THREADS];
  exit_arg args[MAX_THREADS];
  block* handoff = calloc((size_t)nt * EXIT_BLOCKS, sizeof *handoff);
  if (handoff == NULL) exit(1);
  while (another_round(done, rounds, t0)) {
    for (int t = 0; t < nt; t++) {
      args[t] = (exit_arg){mr, opt.seed * 32452843u + (uint64_t)done * MAX_THREADS + (uint64_t)t, &errors,
                           handoff + (size_t)t * EXIT_BLOCKS, 0};
      if (pthread_create(&th[t], NULL, exiting_thread, &args[t]) != 0) exit(1);
    }
    for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
    checker_arg c = {mr, args, nt, &errors};
    pthread_t ct;
    if (pthread_create(&ct, NULL, checker_thread, &c) != 0) exit(1);
    pthread_join(ct, NULL);
    done++;
  }
  free(handoff);
  report_errors(&errors, name, "blocks of exited threads, checked and freed by another");
  if (kind == RMM_RESOURCE_POOL) {
    size_t used = 1;
    if (must(rmm_pool_used_bytes(mr, &used), name, "rmm_pool_used_bytes"))
      report(used == 0, NULL, name, "%d rounds of %d exiting threads: the pool reports %zu bytes in use with "
             "nothing live", done, nt, used);
  }
  must(rmm_resource_release(mr), name, "releasing the resource");
  check_memory(name, NULL, start);
}

/* ---- process exit under load: the child half */

typedef struct {
  rmm_resource_t mr;
  int exit_from_worker; /* this worker calls exit(0) after a while */
} child_arg;

static void* child_worker(void* argp) {
  child_arg* a = argp;
  rng_t r = {(uint64_t)(uintptr_t)argp};
  double t0 = now();
  for (;;) {
    size_t n = rng_range(&r, 1, MiB);
    void* p = NULL;
    if (rmm_allocate(a->mr, NULL, n, RMM_DEFAULT_ALIGNMENT, &p) == RMM_SUCCESS) {
      rmm_memset(p, 1, n < TAG_BYTES ? n : TAG_BYTES, NULL);
      rmm_deallocate(a->mr, NULL, p, n, RMM_DEFAULT_ALIGNMENT);
    }
    if (a->exit_from_worker && now() - t0 > 0.05) exit(0);
  }
  return NULL;
}

/* --child MODE: threads allocate from a pool, then the process exits while
 * they run: "return" (main returns), "worker" (a worker calls exit),
 * "release" (the last handle is released first). */
static int child_main(const char* mode) {
  rmm_resource_t cuda = NULL, pool = NULL;
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS) return 3;
  o.upstream = cuda;
  o.initial_pool_size = 0;
  if (rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool) != RMM_SUCCESS) return 3;
  rmm_resource_release(cuda);
  static child_arg args[MAX_THREADS];
  pthread_t th;
  for (int t = 0; t < opt.threads; t++) {
    args[t] = (child_arg){pool, strcmp(mode, "worker") == 0 && t == 0};
    if (pthread_create(&th, NULL, child_worker, &args[t]) != 0) return 3;
  }
  sleep_us(strcmp(mode, "worker") == 0 ? 2000000 : 50000);
  if (strcmp(mode, "worker") == 0) return 4; /* the worker should have exited the process by now */
  if (strcmp(mode, "release") == 0) rmm_resource_release(pool);
  return 0; /* exit with the workers still running */
}

/* Runs this program as a child in mode; its exit status, or -1 (killed
 * after 30 s or did not start). */
static int run_child(const char* mode, char* desc, size_t ndesc) {
  char* argv[] = {(char*)"/proc/self/exe", (char*)"--child", (char*)mode, (char*)"--threads", NULL, NULL};
  char threads[16];
  snprintf(threads, sizeof threads, "%d", opt.threads);
  argv[4] = threads;
  pid_t pid;
  if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0) {
    snprintf(desc, ndesc, "could not start: %s", strerror(errno));
    return -1;
  }
  int status = 0;
  double until = now() + 30;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      snprintf(desc, ndesc, "hung: killed after 30 s");
      return -1;
    }
    sleep_us(10000);
  }
  if (WIFEXITED(status)) {
    snprintf(desc, ndesc, "exited with status %d", WEXITSTATUS(status));
    return WEXITSTATUS(status);
  }
  snprintf(desc, ndesc, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return -1;
}

static void scenario_exits(void) {
  exits_threads(RMM_RESOURCE_POOL);
  exits_threads(RMM_RESOURCE_ARENA);
  exits_threads(RMM_RESOURCE_BINNING);
  exits_threads(RMM_RESOURCE_FIXED_SIZE);
  static const char* const modes[] = {"return", "worker", "release"};
  size_t start = device_free();
  for (int i = 0; i < 3; i++) {
    char desc[128];
    int rc = run_child(modes[i], desc, sizeof desc);
    report(rc == 0, NULL, "exits[process]", "a process exits while %d threads allocate (%s): %s", opt.threads,
           modes[i], desc);
  }
  check_memory_within("exits[process]", NULL, start, opt.tolerance > CHILD_EXIT_SLACK ? opt.tolerance : CHILD_EXIT_SLACK);
}

/* ================================================================== main */

/* One warm-up thread: a stream of each kind the streams scenario makes, a
 * block from mr filled and read back on it, the stream destroyed. */
typedef struct {
  rmm_resource_t mr;
  size_t bytes;
  bool failed;
} warm_arg;

static void* warm_thread(void* argp) {
  warm_arg* a = argp;
  for (int i = 0; i < 2; i++) {
    rmm_stream_t s = NULL;
    void* p = NULL;
    unsigned char buf[16];
    rmm_status st = i == 0 ? rmm_stream_create(&s) : rmm_stream_create_with_flags(&s, RMM_STREAM_SYNC_DEFAULT);
    if (st != RMM_SUCCESS) {
      a->failed = true;
      return NULL;
    }
    if (rmm_allocate(a->mr, s, a->bytes, RMM_DEFAULT_ALIGNMENT, &p) != RMM_SUCCESS ||
        rmm_memset(p, 1, a->bytes, s) != RMM_SUCCESS || rmm_memcpy(buf, p, sizeof buf, s) != RMM_SUCCESS ||
        rmm_deallocate(a->mr, s, p, a->bytes, RMM_DEFAULT_ALIGNMENT) != RMM_SUCCESS)
      a->failed = true;
    if (rmm_stream_destroy(s) != RMM_SUCCESS) a->failed = true;
  }
  return NULL;
}

/* The scenarios' threads at once, each on streams of its own, over mr: on an
 * H100 (driver 580) the first time several threads copied on streams of
 * their own the driver kept 8 MiB of device memory until the process ended,
 * and the first time the device touched blocks of a managed memory pool it
 * kept 32 MiB until no process had a context on the device (the parent of
 * --isolate's parts has one). Neither is the library's memory: streams[arena]
 * alone in a process lost the same 8 MiB as streams[pool], and the managed
 * pool's 32 MiB outlived the process that made the pool. Made here, once,
 * such state is there before the first measurement. */
static bool warm_threads(rmm_resource_t mr, size_t bytes) {
  pthread_t th[MAX_THREADS];
  warm_arg args[MAX_THREADS];
  int nt = opt.threads;
  bool ok = true;
  for (int t = 0; t < nt; t++) {
    args[t] = (warm_arg){mr, bytes, false};
    if (pthread_create(&th[t], NULL, warm_thread, &args[t]) != 0) {
      nt = t;
      ok = false;
      break;
    }
  }
  for (int t = 0; t < nt; t++) {
    pthread_join(th[t], NULL);
    ok = ok && !args[t].failed;
  }
  return ok && rmm_device_synchronize() == RMM_SUCCESS;
}

/* Every call the scenarios make, once, so that lazily made state (the
 * backend, CUDA's modules for copies and fills, per-device resources, the
 * driver's state for threads' streams and managed pools, warm_threads) is
 * there before the first measurement of free memory. */
static void warm_up(void) {
  rmm_resource_t mr = NULL, cur = NULL;
  rmm_stream_t s = NULL;
  void* p = NULL;
  unsigned char buf[16];
  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr) != RMM_SUCCESS ||
      rmm_allocate(mr, NULL, 4096, RMM_DEFAULT_ALIGNMENT, &p) != RMM_SUCCESS ||
      rmm_stream_create(&s) != RMM_SUCCESS || rmm_memset(p, 1, 4096, s) != RMM_SUCCESS ||
      rmm_memcpy(buf, p, sizeof buf, s) != RMM_SUCCESS || rmm_stream_synchronize(s) != RMM_SUCCESS ||
      rmm_stream_destroy(s) != RMM_SUCCESS || rmm_memset(p, 2, 4096, NULL) != RMM_SUCCESS ||
      rmm_memcpy(buf, p, sizeof buf, NULL) != RMM_SUCCESS ||
      rmm_deallocate(mr, NULL, p, 4096, RMM_DEFAULT_ALIGNMENT) != RMM_SUCCESS ||
      rmm_get_current_device_resource(&cur) != RMM_SUCCESS) {
    fprintf(stderr, "rmmgo_stress: warm-up failed: %s\n", rmm_last_error_message());
    exit(1);
  }
  rmm_resource_release(cur);
  if (!warm_threads(mr, opt.release_block)) {
    fprintf(stderr, "rmmgo_stress: warm-up on threads' streams failed: %s\n", rmm_last_error_message());
    exit(1);
  }
  rmm_resource_release(mr);
  /* The same over a pool: its stream-ordered frees make and record CUDA
   * events, whose first use in a process may have the driver keep memory
   * too (2 MiB on the H100 once). A leak of the pool's own would show in
   * every later pool all the same. */
  rmm_resource_t cuda = NULL, pool = NULL;
  rmm_resource_options o;
  rmm_resource_options_init(&o);
  o.initial_pool_size = 0;
  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS ||
      (o.upstream = cuda, rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool)) != RMM_SUCCESS ||
      !warm_threads(pool, opt.release_block)) {
    fprintf(stderr, "rmmgo_stress: warm-up over a pool failed: %s\n", rmm_last_error_message());
    exit(1);
  }
  rmm_resource_release(pool);
  rmm_resource_release(cuda);
  /* A device without managed memory pools refuses the kind; its release
   * part then reports that itself. */
  rmm_resource_t managed = NULL;
  if (rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC_MANAGED, NULL, &managed) == RMM_SUCCESS) {
    if (!warm_threads(managed, opt.release_block)) {
      fprintf(stderr, "rmmgo_stress: warm-up on a managed pool failed: %s\n", rmm_last_error_message());
      exit(1);
    }
    rmm_resource_release(managed);
  }
}

/* --isolate: runs `--scenarios scenario [--kinds kind]` with the rest of
 * this process's options in a child, passes its lines on and adds its
 * counts; a child that dies is a failure of its part. */
static void run_part(int argc, char** argv, const char* scenario, const char* kind) {
  char* args[128];
  int n = 0;
  args[n++] = (char*)"/proc/self/exe";
  for (int i = 1; i < argc && n < 118; i++) {
    const char* a = argv[i];
    /* --kinds stays for the parts that are not one kind of release (current reads it). */
    bool ours = strcmp(a, "--isolate") == 0 || strncmp(a, "--scenarios", 11) == 0 ||
                (kind != NULL && strncmp(a, "--kinds", 7) == 0);
    if (ours && strchr(a, '=') == NULL && strcmp(a, "--isolate") != 0) i++; /* and its value */
    if (!ours) args[n++] = argv[i];
  }
  args[n++] = (char*)"--child";
  args[n++] = (char*)"part";
  args[n++] = (char*)"--scenarios";
  args[n++] = (char*)scenario;
  if (kind != NULL) {
    args[n++] = (char*)"--kinds";
    args[n++] = (char*)kind;
  }
  args[n] = NULL;
  char part[96];
  snprintf(part, sizeof part, "%s%s%s%s", scenario, kind != NULL ? "[" : "", kind != NULL ? kind : "",
           kind != NULL ? "]" : "");
  int fds[2];
  posix_spawn_file_actions_t fa;
  pid_t pid;
  if (pipe(fds) != 0 || posix_spawn_file_actions_init(&fa) != 0 ||
      posix_spawn_file_actions_adddup2(&fa, fds[1], 1) != 0 || posix_spawn_file_actions_addclose(&fa, fds[0]) != 0 ||
      posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ) != 0) {
    report(false, NULL, part, "could not start a process for it: %s", strerror(errno));
    return;
  }
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  FILE* f = fdopen(fds[0], "r");
  char* line = NULL;
  size_t cap = 0;
  int passed = 0, failed = 0, known = 0;
  bool summary = false;
  while (f != NULL && getline(&line, &cap, f) > 0) {
    if (sscanf(line, "rmmgo_stress: %d passed, %d failed, %d known bugs", &passed, &failed, &known) == 3) {
      summary = true;
      continue;
    }
    fputs(line, stdout);
  }
  free(line);
  if (f != NULL) fclose(f);
  int status = 0;
  waitpid(pid, &status, 0);
  n_passed += passed, n_failed += failed, n_known += known;
  if (!summary || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
    char how[96];
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      snprintf(how, sizeof how, "it ran past --part-timeout %d s (hung?)", opt.part_timeout);
    else if (WIFSIGNALED(status))
      snprintf(how, sizeof how, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else snprintf(how, sizeof how, "exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    report(false, NULL, part, "its process died before it finished: %s", how);
  }
}

/* --part-timeout: SIGALRM ends the part (this process) with a line saying
 * so; a parent (--isolate) reports the signal. */
static char timeout_msg[160];

static void on_part_timeout(int sig) {
  ssize_t w = write(2, timeout_msg, strlen(timeout_msg));
  (void)w;
  signal(sig, SIG_DFL);
  raise(sig);
}

static void arm_part_timeout(const char* scenario) {
  if (opt.part_timeout <= 0) return;
  snprintf(timeout_msg, sizeof timeout_msg, "rmmgo_stress: %s ran past --part-timeout %d s (hung?): killed\n",
           scenario, opt.part_timeout);
  signal(SIGALRM, on_part_timeout);
  alarm((unsigned)opt.part_timeout);
}

int main(int argc, char** argv) {
  if (!parse_args(argc, argv)) {
    usage(stderr);
    return 2;
  }
  bool part = opt.child != NULL && strcmp(opt.child, "part") == 0;
  if (opt.child != NULL && !part) return child_main(opt.child);
  setvbuf(stdout, NULL, _IOLBF, 0); /* a crash keeps the lines before it */

  const char* backend = "?";
  size_t free_b = 0, total = 0;
  if (rmm_backend_name(&backend) != RMM_SUCCESS || rmm_mem_get_info(&free_b, &total) != RMM_SUCCESS) {
    fprintf(stderr, "rmmgo_stress: no backend: %s\n", rmm_last_error_message());
    return 1;
  }
  if (!part) {
    printf("rmmgo_stress: rmmgo %s on the %s backend, device %zu MiB (%zu MiB free); %d threads; known bugs: "
           "%s%s\n",
           rmm_version(), backend, total >> 20, free_b >> 20, opt.threads,
           opt.known_bugs[0] != '\0' ? opt.known_bugs : "none", opt.isolate ? "; each part in its own process" : "");
  }
  warm_up();
  void (*const run[SC_COUNT])(void) = {scenario_churn, scenario_release, scenario_current, scenario_streams,
                                       scenario_exits};
  for (int i = 0; i < SC_COUNT; i++) {
    if (!opt.scenarios[i]) continue;
    double t0 = now();
    if (!part) printf("== %s\n", scenario_names[i]);
    if (opt.isolate && i == SC_RELEASE) {
      for (int k = 0; k < NKINDS; k++) {
        if (opt.kinds[k]) run_part(argc, argv, scenario_names[i], kinds[k].name);
      }
    } else if (opt.isolate) {
      run_part(argc, argv, scenario_names[i], NULL);
    } else {
      arm_part_timeout(scenario_names[i]);
      run[i]();
      alarm(0);
    }
    if (!part) printf("   (%s: %.1f s)\n", scenario_names[i], now() - t0);
  }
  printf("rmmgo_stress: %d passed, %d failed, %d known bugs%s%s%s\n", n_passed, n_failed, n_known,
         opt.known_bugs[0] != '\0' ? " (--known-bugs=" : "", opt.known_bugs,
         opt.known_bugs[0] != '\0' ? ")" : "");
  return n_failed > 0 ? 1 : 0;
}
