/*
 * errors.c -- how rmmgo reports errors in C. Every function returns an
 * rmm_status; rmm_status_string names it and rmm_last_error_message says
 * what failed, for the calling thread. Nothing aborts: bad handles, bad
 * sizes and running out of memory are all answered with a status.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rmmgo.h"

static int passed, failed;

/* expect runs one call that should fail with `want`, and shows the message. */
static void expect(const char* what, rmm_status got, rmm_status want) {
  printf("%-40s -> %-28s %s\n", what, rmm_status_string(got), got == RMM_SUCCESS ? "" : rmm_last_error_message());
  if (got == want) {
    passed++;
  } else {
    failed++;
    printf("  unexpected: wanted %s\n", rmm_status_string(want));
  }
}

int main(void) {
  rmm_resource_t cuda = NULL, limited = NULL, gone = NULL;
  rmm_resource_options options;
  size_t free_bytes = 0, total_bytes = 0;
  void* p = NULL;
  int count = 0;

  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS) {
    /* e.g. RMM_ERROR_BACKEND_UNAVAILABLE without a GPU: the message says
     * how to choose the simulated device. */
    fprintf(stderr, "cannot make a resource: %s\n", rmm_last_error_message());
    return 1;
  }
  rmm_mem_get_info(&free_bytes, &total_bytes);
  rmm_get_device_count(&count);

  /* Running out of memory is RMM_ERROR_OUT_OF_MEMORY, as in RMM. */
  expect("allocate more than the device has", rmm_allocate(cuda, NULL, total_bytes * 2, 256, &p),
         RMM_ERROR_OUT_OF_MEMORY);

  /* A limiting adaptor says why it refused. */
  rmm_resource_options_init(&options);
  options.upstream = cuda;
  options.allocation_limit = (size_t)1 << 20;
  rmm_resource_create(RMM_RESOURCE_LIMITING, &options, &limited);
  expect("allocate 2 MiB under a 1 MiB limit", rmm_allocate(limited, NULL, (size_t)2 << 20, 256, &p),
         RMM_ERROR_OUT_OF_MEMORY);
  rmm_resource_release(limited);

  /* Alignments must be powers of two. */
  expect("allocate with alignment 48", rmm_allocate(cuda, NULL, 1024, 48, &p), RMM_ERROR_BAD_ALIGNMENT);

  /* Freeing memory the resource never gave out. */
  expect("free a pointer never allocated", rmm_deallocate(cuda, NULL, (void*)(uintptr_t)0x7f0000001000u, 256, 256),
         RMM_ERROR_INVALID_POINTER);

  /* A handle used after its last release is refused, never followed. */
  rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &gone);
  rmm_resource_release(gone);
  expect("allocate from a released handle", rmm_allocate(gone, NULL, 1024, 256, &p), RMM_ERROR_INVALID_HANDLE);

  /* Devices that do not exist. */
  expect("make a device current that is not there", rmm_set_device(count + 7), RMM_ERROR_INVALID_DEVICE);

  /* NULL where a result must go. */
  expect("allocate into a NULL pointer", rmm_allocate(cuda, NULL, 1024, 256, NULL), RMM_ERROR_INVALID_ARGUMENT);

  /* Success leaves the last message alone (it belongs to the last failure). */
  expect("allocate 0 bytes (a NULL pointer, no error)", rmm_allocate(cuda, NULL, 0, 256, &p), RMM_SUCCESS);
  printf("the thread's last message is still: %s\n", rmm_last_error_message());

  rmm_resource_release(cuda);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
