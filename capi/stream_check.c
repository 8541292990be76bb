/*
 * stream_check.c -- the state of the stream check (stream_check.h): the
 * epoch rmm_stream_destroy moves on, and the functions that give a stream
 * its key, handed over by Go.
 */
#include "stream_check.h"

_Atomic uint64_t rmmgo_stream_epoch = 1;
_Atomic uintptr_t rmmgo_stream_get_id;
_Atomic uintptr_t rmmgo_stream_get_last_error;

void rmmgo_set_stream_funcs(uintptr_t get_id, uintptr_t get_last_error) {
  atomic_store(&rmmgo_stream_get_last_error, get_last_error);
  atomic_store(&rmmgo_stream_get_id, get_id);
}

void rmmgo_stream_retired(void) { atomic_fetch_add(&rmmgo_stream_epoch, 1); }
