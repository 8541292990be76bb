/*
 * backend.c -- the static strings rmm_backend_name (backend.go) hands out:
 * C strings that live as long as the library.
 */
#include "capi_internal.h"

const char* rmmgo_backend_string(int simulated) { return simulated ? "simulated" : "cuda"; }
