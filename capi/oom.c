/*
 * oom.c -- the calling thread's last out-of-memory report (JSON), and the
 * trampolines of pressure resources' callbacks. Go sets the report through
 * rmmgo_set_oom_report (oom.go).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capi_internal.h"

static __thread char* rmmgo_oom_report;
static pthread_key_t rmmgo_oom_key;
static pthread_once_t rmmgo_oom_once = PTHREAD_ONCE_INIT;

static void rmmgo_oom_key_init(void) { (void)pthread_key_create(&rmmgo_oom_key, free); }

RMMGO_INTERNAL void rmmgo_set_oom_report(const char* s, size_t len) {
  char* buf = NULL;
  if (s != NULL && len > 0) {
    buf = malloc(len + 1);
    if (buf == NULL) {
      return;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
  }
  pthread_once(&rmmgo_oom_once, rmmgo_oom_key_init);
  free(rmmgo_oom_report);
  rmmgo_oom_report = buf;
  (void)pthread_setspecific(rmmgo_oom_key, buf);
}

const char* rmm_last_out_of_memory_report(void) { return rmmgo_oom_report != NULL ? rmmgo_oom_report : ""; }

void rmm_string_free(char* s) { free(s); }

RMMGO_INTERNAL char* rmmgo_strndup(const char* s, size_t len) {
  char* out = malloc(len + 1);
  if (out != NULL) {
    memcpy(out, s, len);
    out[len] = '\0';
  }
  return out;
}

RMMGO_INTERNAL void rmmgo_call_pressure(rmm_pressure_callback fn, size_t threshold, size_t live, int up, uintptr_t arg) {
  fn(threshold, live, up, (void*)arg);
}

RMMGO_INTERNAL int rmmgo_call_pressure_failure(rmm_pressure_failure_callback fn, size_t bytes, int retry, uintptr_t arg) {
  return fn(bytes, retry, (void*)arg);
}
