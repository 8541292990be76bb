/*
 * fork_test.c -- a child made by fork() while other threads are inside the
 * library. The library's Go runtime does not survive fork (nor does CUDA
 * in the child), and a child used to hang at its first call (any call:
 * rmm_mem_get_info alone too). Every call in the child must return at
 * once, with RMM_ERROR_NOT_SUPPORTED and a message that says why; the
 * parent goes on as if nothing happened.
 *
 * Each child runs under an alarm: a hang kills it (SIGALRM), which the
 * parent reports as a failure, and the parent itself gives a child 20
 * seconds before it kills it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

static rmm_resource_t pool;
static atomic_int stop;

/* Busy threads: allocate and free through the pool (cached: most calls
 * stay in C, misses cross into Go), read the device's memory (always into
 * Go), and make and release resources. */
static void* busy(void* arg) {
  int kind = (int)(intptr_t)arg;
  void* ps[64];
  unsigned seed = (unsigned)kind * 7919u + 1;
  while (!atomic_load(&stop)) {
    if (kind % 2 == 0) {
      int n = 0;
      for (int i = 0; i < 64; i++) {
        size_t sz = 256 + (size_t)(rand_r(&seed) % (256 << 10));
        if (rmm_allocate(pool, NULL, sz, 256, &ps[n]) == RMM_SUCCESS) {
          rmm_deallocate(pool, NULL, ps[n], sz, 256);
        }
      }
      (void)n;
    } else {
      size_t f = 0, t = 0;
      rmm_resource_t mr = NULL;
      (void)rmm_mem_get_info(&f, &t);
      if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr) == RMM_SUCCESS) {
        rmm_resource_release(mr);
      }
    }
  }
  return NULL;
}

/* What a child checks: a call returns at once, refused as it must be. */
static int child_check(rmm_status st, const char* what) {
  if (st != RMM_ERROR_NOT_SUPPORTED) {
    fprintf(stderr, "child: %s: got %s, want RMM_ERROR_NOT_SUPPORTED\n", what, rmm_status_string(st));
    return 1;
  }
  if (strstr(rmm_last_error_message(), "fork") == NULL) {
    fprintf(stderr, "child: %s: message \"%s\" does not say fork\n", what, rmm_last_error_message());
    return 1;
  }
  return 0;
}

/* The child's calls; its exit status is the number of wrong answers. */
static void child_main(int first) {
  int bad = 0;
  size_t f = 0, t = 0;
  void* p = NULL;
  rmm_resource_t mr = NULL;
  rmm_resource_options o;
  alarm(10);
  if (first == 0) {
    bad += child_check(rmm_mem_get_info(&f, &t), "rmm_mem_get_info");
  }
  bad += child_check(rmm_allocate(pool, NULL, 1000, 256, &p), "rmm_allocate");
  bad += child_check(rmm_allocate(pool, NULL, (size_t)8 << 20, 256, &p), "rmm_allocate (large)");
  bad += child_check(rmm_deallocate(pool, NULL, (void*)(uintptr_t)0x10000, 1000, 256), "rmm_deallocate");
  bad += child_check(rmm_deallocate_sync(pool, (void*)(uintptr_t)0x10000, 1000, 256), "rmm_deallocate_sync");
  bad += child_check(rmm_allocate_sync(pool, 1000, 256, &p), "rmm_allocate_sync");
  bad += child_check(rmm_mem_get_info(&f, &t), "rmm_mem_get_info");
  bad += child_check(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr), "rmm_resource_create");
  bad += child_check(rmm_resource_release(pool), "rmm_resource_release");
  bad += child_check(rmm_get_current_device_resource(&mr), "rmm_get_current_device_resource");
  bad += child_check(rmm_device_synchronize(), "rmm_device_synchronize");
  p = rmm_allocate_direct(pool, NULL, 1000);
  if (p != NULL || rmm_last_error_status() != RMM_ERROR_NOT_SUPPORTED) {
    fprintf(stderr, "child: rmm_allocate_direct: got %p, status %s\n", p, rmm_status_string(rmm_last_error_status()));
    bad++;
  }
  /* What never needed Go still works. */
  if (strcmp(rmm_version(), RMMGO_VERSION_STRING) != 0 || rmm_resource_options_init(&o) != RMM_SUCCESS) {
    fprintf(stderr, "child: rmm_version or rmm_resource_options_init failed\n");
    bad++;
  }
  _exit(bad > 100 ? 100 : bad);
}

/* Forks a child while the threads run; true when it answered every call
 * as it must, in time. */
static bool fork_once(int i) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "fork: %s\n", strerror(errno));
    return false;
  }
  if (pid == 0) {
    child_main(i);
  }
  int status = 0;
  for (int waited = 0;; waited++) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      break;
    }
    if (waited == 2000) { /* 20 s */
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fprintf(stderr, "child %d hung: killed\n", i);
      return false;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "child %d died of signal %d%s\n", i, WTERMSIG(status),
            WTERMSIG(status) == SIGALRM ? " (it hung: the alarm went off)" : "");
    return false;
  }
  if (WEXITSTATUS(status) != 0) {
    fprintf(stderr, "child %d: %d calls answered wrongly\n", i, WEXITSTATUS(status));
    return false;
  }
  return true;
}

static void test_fork_with_busy_threads(void) {
  enum { THREADS = 4, CHILDREN = 10 };
  pthread_t th[THREADS];
  rmm_resource_t cuda = NULL;
  rmm_resource_options o;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = (size_t)64 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  atomic_store(&stop, 0);
  for (int i = 0; i < THREADS; i++) {
    pthread_create(&th[i], NULL, busy, (void*)(intptr_t)i);
  }
  struct timespec warm = {0, 50 * 1000 * 1000};
  nanosleep(&warm, NULL);
  int ok = 0;
  for (int i = 0; i < CHILDREN; i++) {
    ok += fork_once(i);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
  }
  EXPECT(ok == CHILDREN);
  /* The parent is unharmed. */
  void* p = NULL;
  size_t f = 0, t = 0;
  EXPECT_OK(rmm_mem_get_info(&f, &t));
  EXPECT_OK(rmm_allocate(pool, NULL, 1000, 256, &p));
  EXPECT_OK(rmm_deallocate(pool, NULL, p, 1000, 256));
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT_OK(rmm_resource_release(cuda));
}

/* A child of a quiet parent (no other thread in the library) is refused
 * too: the Go runtime keeps threads of its own, so no child is safe. */
static void test_fork_quiet(void) {
  rmm_resource_t cuda = NULL;
  rmm_resource_options o;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  EXPECT(fork_once(0));
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT_OK(rmm_resource_release(cuda));
}

static const test_case tests[] = {
    TEST(test_fork_with_busy_threads),
    TEST(test_fork_quiet),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, NULL, NULL); }
