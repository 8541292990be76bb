/*
 * basic.c -- the smallest complete use of rmmgo from C: make a pool over
 * the cuda resource, allocate on a stream, use the memory (fill it, copy it
 * back, check it), free it, and release the resources.
 *
 * `make example` builds and runs it. By hand, from this folder, after `make lib`
 * at the top of the checkout:
 *
 *   cc -std=c99 basic.c -I../../include -L../../build -lrmmgo \
 *      -Wl,-rpath,"$(cd ../../build && pwd)" -o basic
 *   RMMGO_BACKEND=simulated ./basic     (or on a GPU: just ./basic)
 *
 * With rmmgo installed (`make install PREFIX=...`, see the README): cc -std=c99
 * basic.c $(pkg-config --cflags --libs rmmgo) -o basic
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmmgo.h"

/* CHECK stops the program with the library's message when a call fails. */
#define CHECK(call)                                                                           \
  do {                                                                                        \
    rmm_status s_ = (call);                                                                   \
    if (s_ != RMM_SUCCESS) {                                                                  \
      fprintf(stderr, "%s failed: %s: %s\n", #call, rmm_status_string(s_), rmm_last_error_message()); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

int main(void) {
  rmm_resource_t cuda = NULL, pool = NULL, mr = NULL;
  rmm_resource_options options;
  rmm_stream_t stream = NULL;
  const char* backend = NULL;
  const char* name = NULL;
  const size_t bytes = (size_t)1 << 20;
  unsigned char* host = (unsigned char*)malloc(bytes);
  void* d = NULL;
  size_t i, free_bytes = 0, total_bytes = 0;

  if (host == NULL) {
    return 1;
  }
  CHECK(rmm_backend_name(&backend));
  CHECK(rmm_mem_get_info(&free_bytes, &total_bytes));
  printf("rmmgo %s on the %s backend: %zu of %zu MiB free\n", rmm_version(), backend, free_bytes >> 20,
         total_bytes >> 20);

  /* A cuda resource, and a pool that takes its memory from it. A pool
   * created with RMM_RESOURCE_POOL needs a sub-allocator in this library;
   * without one, the cuda resource serves alone. */
  CHECK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
  rmm_resource_options_init(&options);
  options.upstream = cuda;
  options.initial_pool_size = (size_t)16 << 20;
  if (rmm_resource_create(RMM_RESOURCE_POOL, &options, &pool) == RMM_SUCCESS) {
    mr = pool;
    CHECK(rmm_resource_release(cuda)); /* the pool holds its upstream */
  } else {
    printf("no pool here (%s): using the cuda resource\n", rmm_last_error_message());
    mr = cuda;
  }
  CHECK(rmm_resource_name(mr, &name));
  printf("allocating from a %s\n", name);

  /* Allocate in stream order, fill with 0xAB, copy back and check. */
  CHECK(rmm_stream_create(&stream));
  CHECK(rmm_allocate(mr, stream, bytes, RMM_DEFAULT_ALIGNMENT, &d));
  CHECK(rmm_memset(d, 0xAB, bytes, stream));
  CHECK(rmm_memcpy(host, d, bytes, stream));
  CHECK(rmm_stream_synchronize(stream));
  for (i = 0; i < bytes; i++) {
    if (host[i] != 0xAB) {
      fprintf(stderr, "byte %zu is %#x, want 0xab\n", i, host[i]);
      return 1;
    }
  }
  printf("allocated %zu bytes at %p, filled and read back\n", bytes, d);

  /* Free in stream order; release the pool (which releases the cuda
   * resource it held). */
  CHECK(rmm_deallocate(mr, stream, d, bytes, RMM_DEFAULT_ALIGNMENT));
  CHECK(rmm_stream_synchronize(stream));
  CHECK(rmm_stream_destroy(stream));
  CHECK(rmm_resource_release(mr));
  free(host);
  printf("1 passed, 0 failed\n");
  return 0;
}
