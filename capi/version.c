/*
 * version.c -- the library's version, from the header it was built with
 * (include/rmmgo.h defines it once). Plain C: no crossing into Go.
 */
#include "capi_internal.h"

const char* rmm_version(void) { return RMMGO_VERSION_STRING; }

int rmm_version_number(void) { return RMMGO_VERSION_NUMBER; }
