/*
 * per_device.c -- each device has a current resource. Set a statistics
 * adaptor as the resource of every device, allocate on each device through
 * rmm_get_per_device_resource, read the counters, and put the initial
 * resources back. Needs two devices for the interesting part; with one it
 * does the same on device 0 and says so.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rmmgo.h"

#define CHECK(call)                                                                           \
  do {                                                                                        \
    rmm_status s_ = (call);                                                                   \
    if (s_ != RMM_SUCCESS) {                                                                  \
      fprintf(stderr, "%s failed: %s: %s\n", #call, rmm_status_string(s_), rmm_last_error_message()); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

#define MAX_DEVICES 2

int main(void) {
  int count = 0, used, dev, current = -1, checks = 0;
  rmm_resource_t stats[MAX_DEVICES];

  CHECK(rmm_get_device_count(&count));
  used = count < MAX_DEVICES ? count : MAX_DEVICES;
  if (count < 2) {
    printf("note: %d device(s): per-device resources shown on device 0 only\n", count);
  }

  /* For each device: make it current, make a cuda resource and a
   * statistics adaptor over it there, and set the adaptor as that device's
   * resource. The slot keeps a reference, so we may release ours. */
  for (dev = 0; dev < used; dev++) {
    rmm_resource_t cuda = NULL, previous = NULL;
    rmm_resource_options options;
    rmm_resource_kind kind;
    CHECK(rmm_set_device(dev));
    CHECK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));
    rmm_resource_options_init(&options);
    options.upstream = cuda;
    CHECK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &options, &stats[dev]));
    CHECK(rmm_resource_release(cuda));
    CHECK(rmm_set_per_device_resource(dev, stats[dev], &previous));
    CHECK(rmm_resource_kind_of(previous, &kind));
    printf("device %d: was %s, now statistics\n", dev, kind == RMM_RESOURCE_CUDA ? "cuda" : "something else");
    CHECK(rmm_resource_release(previous));
  }

  /* Allocate on each device through its current resource, with the device
   * current (resources are used with their own device current). */
  for (dev = 0; dev < used; dev++) {
    rmm_resource_t mr = NULL;
    rmm_statistics st;
    void* p = NULL;
    size_t bytes = (size_t)(dev + 1) << 20;
    CHECK(rmm_set_device(dev));
    CHECK(rmm_get_current_device_resource(&mr));
    if (mr != stats[dev]) {
      fprintf(stderr, "device %d: the current resource is not the one set\n", dev);
      return 1;
    }
    CHECK(rmm_allocate(mr, NULL, bytes, RMM_DEFAULT_ALIGNMENT, &p));
    st.struct_size = sizeof st;
    CHECK(rmm_statistics_get(mr, &st));
    printf("device %d: %lld bytes in %lld allocation(s) live\n", dev, (long long)st.bytes.value,
           (long long)st.count.value);
    if (st.bytes.value != (long long)bytes) {
      return 1;
    }
    checks++;
    CHECK(rmm_deallocate(mr, NULL, p, bytes, RMM_DEFAULT_ALIGNMENT));
    CHECK(rmm_resource_release(mr));
  }

  /* Any thread can read another device's resource. */
  if (used == 2) {
    rmm_resource_t other = NULL;
    CHECK(rmm_set_device(0));
    CHECK(rmm_get_per_device_resource(1, &other));
    if (other != stats[1]) {
      return 1;
    }
    checks++;
    CHECK(rmm_resource_release(other));
  }

  /* Put the initial resources back; the slots let go of the adaptors. */
  for (dev = 0; dev < used; dev++) {
    CHECK(rmm_reset_per_device_resource(dev, NULL));
  }
  CHECK(rmm_set_device(0));
  CHECK(rmm_get_device(&current));
  printf("%d passed, 0 failed\n", checks + (current == 0));
  return current == 0 ? 0 : 1;
}
