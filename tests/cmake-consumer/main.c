/* A program outside the rmmgo tree, built against the installed package. */
#include <stdio.h>
#include <string.h>

#include <rmmgo.h>

int main(void) {
  rmm_resource_t mr = NULL;
  void* p = NULL;
  unsigned char host[64];
  size_t i;

  if (strcmp(rmm_version(), RMMGO_VERSION_STRING) != 0) {
    fprintf(stderr, "header %s, library %s\n", RMMGO_VERSION_STRING, rmm_version());
    return 1;
  }
  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr) != RMM_SUCCESS ||
      rmm_allocate(mr, NULL, sizeof host, RMM_DEFAULT_ALIGNMENT, &p) != RMM_SUCCESS ||
      rmm_memset(p, 7, sizeof host, NULL) != RMM_SUCCESS || rmm_memcpy(host, p, sizeof host, NULL) != RMM_SUCCESS ||
      rmm_stream_synchronize(NULL) != RMM_SUCCESS || rmm_deallocate(mr, NULL, p, sizeof host, 256) != RMM_SUCCESS ||
      rmm_resource_release(mr) != RMM_SUCCESS) {
    fprintf(stderr, "consumer: %s\n", rmm_last_error_message());
    return 1;
  }
  for (i = 0; i < sizeof host; i++) {
    if (host[i] != 7) {
      fprintf(stderr, "consumer: byte %zu is %d\n", i, host[i]);
      return 1;
    }
  }
  printf("consumer: rmmgo %s works from an outside project\n1 passed, 0 failed\n", rmm_version());
  return 0;
}
