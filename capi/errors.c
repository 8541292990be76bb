/*
 * errors.c -- the calling thread's last error message and the names of the
 * statuses. Plain C, so that rmm_last_error_message and rmm_status_string
 * never cross into Go; Go sets the message through rmmgo_set_message
 * (errors.go).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capi_internal.h"

/* ------------------------------------------------ the per-thread message */

/* Long enough for any message the library writes (they name what failed,
 * the CUDA error and, for a panic, where it happened; an out-of-memory
 * message carries its report, docs/out-of-memory.md); longer ones are cut
 * with "...". */
#define RMMGO_MESSAGE_CAPACITY 8192

/* The buffer is allocated on a thread's first failure, not reserved as
 * static TLS: a library loaded with dlopen (ctypes does) gets only a few
 * hundred bytes of static TLS from glibc, so the thread-local part is one
 * pointer. A pthread key frees the buffer when the thread exits. */
static __thread char* rmmgo_message;
static pthread_key_t rmmgo_message_key;
static pthread_once_t rmmgo_message_once = PTHREAD_ONCE_INIT;

static void rmmgo_message_key_init(void) { (void)pthread_key_create(&rmmgo_message_key, free); }

static char* rmmgo_message_buffer(void) {
  if (rmmgo_message == NULL) {
    char* buf = calloc(1, RMMGO_MESSAGE_CAPACITY);
    if (buf == NULL) {
      return NULL;
    }
    pthread_once(&rmmgo_message_once, rmmgo_message_key_init);
    (void)pthread_setspecific(rmmgo_message_key, buf);
    rmmgo_message = buf;
  }
  return rmmgo_message;
}

void rmmgo_set_message(const char* msg, size_t len) {
  char* buf = rmmgo_message_buffer();
  if (buf == NULL) {
    return; /* no memory for a message; the status still tells */
  }
  if (msg == NULL) {
    len = 0;
  }
  if (len >= RMMGO_MESSAGE_CAPACITY) {
    memcpy(buf, msg, RMMGO_MESSAGE_CAPACITY - 4);
    memcpy(buf + RMMGO_MESSAGE_CAPACITY - 4, "...", 4);
    return;
  }
  if (len > 0) {
    memcpy(buf, msg, len);
  }
  buf[len] = '\0';
}

const char* rmm_last_error_message(void) { return rmmgo_message != NULL ? rmmgo_message : ""; }

/* ---------------------------------------------------------------- status */

const char* rmm_status_string(rmm_status status) {
  switch (status) {
#define RMMGO_STATUS_CASE(name) \
  case name:                    \
    return #name;
    RMMGO_STATUSES(RMMGO_STATUS_CASE) /* every status, from internal/cabi */
#undef RMMGO_STATUS_CASE
  }
  return "RMM_ERROR_UNKNOWN_STATUS";
}
