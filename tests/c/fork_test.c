/*
 * fork_test.c -- fork() while other threads are inside the library (issue
 * 24, defect 4). Go cannot run in a forked child whose parent had threads in
 * Go: locks those threads held stay held in the child, where the threads do
 * not exist. So the library refuses every call in a fork's child, from C and
 * without entering Go, with RMM_ERROR_NOT_SUPPORTED and a message saying what
 * to do instead; rmm_last_error_message and the other plain-C calls still
 * work there. The parent goes on as before.
 *
 * Each child runs under alarm(): a child that hangs is killed by SIGALRM and
 * the test fails rather than blocks.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rmmgo.h"
#include "test_util.h"

#define BUSY_THREADS 4
#define CHILDREN 10
#define CHILD_SECONDS 5

static rmm_resource_t pool;
static volatile int stop;

/* Allocates and frees (cache hits and misses: sizes vary) and asks the
 * device, until stop. */
static void* busy(void* arg) {
  uintptr_t seed = (uintptr_t)arg;
  void* held[8] = {0};
  size_t sizes[8] = {0};
  int failures = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    for (int i = 0; i < 8; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      if (held[i] != NULL) {
        failures += rmm_deallocate(pool, NULL, held[i], sizes[i], RMM_DEFAULT_ALIGNMENT) != RMM_SUCCESS;
        held[i] = NULL;
      }
      sizes[i] = (size_t)256 << ((seed >> 33) % 12);
      failures += rmm_allocate(pool, NULL, sizes[i], RMM_DEFAULT_ALIGNMENT, &held[i]) != RMM_SUCCESS;
    }
    size_t free_bytes = 0, total = 0;
    failures += rmm_mem_get_info(&free_bytes, &total) != RMM_SUCCESS;
  }
  for (int i = 0; i < 8; i++) {
    if (held[i] != NULL) {
      failures += rmm_deallocate(pool, NULL, held[i], sizes[i], RMM_DEFAULT_ALIGNMENT) != RMM_SUCCESS;
    }
  }
  return (void*)(intptr_t)failures;
}

/* What a child checks; its exit status is the number of failed checks (0:
 * all held). */
static int child_checks(void) {
  alarm(CHILD_SECONDS);
  int bad = 0;
  size_t free_bytes = 0, total = 0;
  const char* want = "rmmgo cannot be used in a child process created by fork()";
  rmm_status st = rmm_mem_get_info(&free_bytes, &total);
  if (st != RMM_ERROR_NOT_SUPPORTED) {
    fprintf(stderr, "child: rmm_mem_get_info: %s, want RMM_ERROR_NOT_SUPPORTED\n", rmm_status_string(st));
    bad++;
  }
  if (strstr(rmm_last_error_message(), want) == NULL) {
    fprintf(stderr, "child: message \"%s\" lacks \"%s\"\n", rmm_last_error_message(), want);
    bad++;
  }
  if (strstr(rmm_last_error_message(), "rmm_mem_get_info") == NULL) {
    fprintf(stderr, "child: message \"%s\" does not name the call\n", rmm_last_error_message());
    bad++;
  }
  /* The cached path (C), a Go export, a binding's call, a framework
   * allocator: each refuses. */
  void* p = NULL;
  st = rmm_allocate(pool, NULL, 256, RMM_DEFAULT_ALIGNMENT, &p);
  bad += st != RMM_ERROR_NOT_SUPPORTED || p != NULL;
  rmm_resource_t h = NULL;
  bad += rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &h) != RMM_ERROR_NOT_SUPPORTED || h != NULL;
  bad += rmm_allocate_direct(pool, NULL, 256) != NULL;
  bad += rmm_last_error_status() != RMM_ERROR_NOT_SUPPORTED;
  bad += rmm_cupy_malloc(NULL, 256, 0) != NULL;
  bad += rmm_deallocate_sync(pool, (void*)(uintptr_t)0x1000, 256, 256) != RMM_ERROR_NOT_SUPPORTED;
  bad += rmm_resource_release(pool) != RMM_ERROR_NOT_SUPPORTED;
  bad += strstr(rmm_last_error_message(), "rmm_resource_release") == NULL;
  /* Plain C keeps working. */
  bad += strcmp(rmm_version(), RMMGO_VERSION_STRING) != 0;
  bad += strcmp(rmm_status_string(RMM_ERROR_NOT_SUPPORTED), "RMM_ERROR_NOT_SUPPORTED") != 0;
  if (bad != 0) {
    fprintf(stderr, "child: %d checks failed; last message: %s\n", bad, rmm_last_error_message());
  }
  return bad;
}

/* Forks a child with `busy` threads in the library; returns the number of
 * children that failed (hung, crashed or failed a check). */
static int fork_children(int children) {
  int failed = 0;
  for (int c = 0; c < children; c++) {
    usleep(2000); /* let the threads get deep into calls */
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return children;
    }
    if (pid == 0) {
      _exit(child_checks());
    }
    int wst = 0;
    if (waitpid(pid, &wst, 0) != pid) {
      perror("waitpid");
      failed++;
      continue;
    }
    if (WIFSIGNALED(wst)) {
      fprintf(stderr, "child %d: killed by signal %d%s\n", c, WTERMSIG(wst),
              WTERMSIG(wst) == SIGALRM ? " (it hung in the library)" : "");
      failed++;
    } else if (WEXITSTATUS(wst) != 0) {
      fprintf(stderr, "child %d: %d checks failed\n", c, WEXITSTATUS(wst));
      failed++;
    }
  }
  return failed;
}

static void test_fork_with_busy_threads(void) {
  rmm_resource_t cuda = NULL;
  rmm_resource_options o;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = (size_t)64 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  EXPECT_OK(rmm_resource_release(cuda));

  pthread_t threads[BUSY_THREADS];
  __atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
  for (int i = 0; i < BUSY_THREADS; i++) {
    if (pthread_create(&threads[i], NULL, busy, (void*)(uintptr_t)(i + 1)) != 0) {
      test_add_failures(1);
      return;
    }
  }
  int failed = fork_children(CHILDREN);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  int thread_failures = 0;
  for (int i = 0; i < BUSY_THREADS; i++) {
    void* r = NULL;
    pthread_join(threads[i], &r);
    thread_failures += (int)(intptr_t)r;
  }
  EXPECT(failed == 0);
  EXPECT(thread_failures == 0);

  /* The parent goes on working after the forks. */
  void* p = NULL;
  size_t free_bytes = 0, total = 0;
  EXPECT_OK(rmm_mem_get_info(&free_bytes, &total));
  EXPECT_OK(rmm_allocate(pool, NULL, 4096, RMM_DEFAULT_ALIGNMENT, &p));
  EXPECT_OK(rmm_deallocate(pool, NULL, p, 4096, RMM_DEFAULT_ALIGNMENT));
  EXPECT_OK(rmm_resource_release(pool));
  pool = NULL;
}

/* A parent with no other thread: the child refuses all the same (the Go
 * runtime's own threads may hold its locks at any time, so no child is
 * safe), and says so at once. */
static void test_fork_idle_parent(void) {
  size_t free_bytes = 0, total = 0;
  REQUIRE_OK(rmm_mem_get_info(&free_bytes, &total));
  pool = NULL;
  EXPECT(fork_children(1) == 0);
  EXPECT_OK(rmm_mem_get_info(&free_bytes, &total));
}

static const test_case tests[] = {
    TEST(test_fork_with_busy_threads),
    TEST(test_fork_idle_parent),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, NULL, NULL); }
