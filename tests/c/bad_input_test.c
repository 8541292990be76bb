/*
 * bad_input_test.c -- the bad-input matrix of the C ABI: every case expects
 * one specific status, a message, and no crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rmmgo.h"
#include "test_util.h"

static void* never_alloc(size_t bytes, rmm_stream_t stream, void* arg) {
  (void)bytes;
  (void)stream;
  (void)arg;
  return NULL; /* "no memory" */
}

static void never_free(void* ptr, size_t bytes, rmm_stream_t stream, void* arg) {
  (void)ptr;
  (void)bytes;
  (void)stream;
  (void)arg;
}

/* A handle's number, to forge neighbours of it. */
static rmm_resource_t forge(uintptr_t v) { return (rmm_resource_t)v; }

int main(void) {
  rmm_resource_t cuda = NULL, released = NULL, mr = NULL, stats = NULL;
  rmm_resource_options o;
  rmm_resource_kind kind;
  rmm_statistics st;
  rmm_stream_t stream = NULL;
  void* p = NULL;
  void* q = NULL;
  int dev = 0, has = 0, eq = 0;
  size_t sz = 0, total = 0;
  const char* name = NULL;
  char local = 0;
  int devices = test_device_count();

  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda));

  /* ---- NULL out-parameters: RMM_ERROR_INVALID_ARGUMENT */
  EXPECT_STATUS(rmm_backend_name(NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("rmm_backend_name");
  EXPECT_STATUS(rmm_runtime_version(NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_driver_version(NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_get_device_count(NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_get_device(NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_mem_get_info(NULL, &total), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_mem_get_info(&sz, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_stream_create(NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_options_init_sized(NULL, sizeof(rmm_resource_options)),
                RMM_ERROR_INVALID_ARGUMENT);
  {
    /* A struct_size too small to hold even the upstream is refused. */
    rmm_resource_options tiny;
    EXPECT_STATUS(rmm_resource_options_init_sized(&tiny, 4), RMM_ERROR_INVALID_ARGUMENT);
  }
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 256, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("ptr is NULL");
  EXPECT_STATUS(rmm_allocate_sync(cuda, 256, 256, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_has_property(cuda, RMM_PROPERTY_DEVICE_ACCESSIBLE, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_is_equal(cuda, cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_kind_of(cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_name(cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_device(cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_upstream(cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_get_current_device_resource(NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_get_per_device_resource(0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_pool_size(cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_statistics_get(cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_cuda_async_pool_handle(cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);

  /* ---- other bad arguments: RMM_ERROR_INVALID_ARGUMENT */
  EXPECT_STATUS(rmm_resource_create((rmm_resource_kind)999, NULL, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("999");
  rmm_resource_options_init(&o);
  o.struct_size = 0; /* not initialised */
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_CUDA, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("struct_size");
  rmm_resource_options_init(&o);
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("upstream");
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_STATISTICS, NULL, &mr), RMM_ERROR_INVALID_ARGUMENT);
  o.upstream = cuda; /* limiting needs its limit */
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_LIMITING, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("allocation_limit");
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_CALLBACK, &o, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC_VIEW, NULL, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_SAM_HEADROOM, NULL, &mr), RMM_ERROR_INVALID_ARGUMENT);
  o.alignment = 3; /* aligned adaptor with a bad alignment */
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_ALIGNED, &o, &mr), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_resource_has_property(cuda, (rmm_property)77, &has), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_upstream(cuda, &mr), RMM_ERROR_INVALID_ARGUMENT); /* base: no upstream */
  EXPECT_STATUS(rmm_stream_destroy(NULL), RMM_ERROR_INVALID_ARGUMENT);          /* the default stream */
  EXPECT_STATUS(rmm_stream_create_with_flags(NULL, RMM_STREAM_NON_BLOCKING), RMM_ERROR_INVALID_ARGUMENT);
  {
    rmm_stream_t s = NULL;
    EXPECT_STATUS(rmm_stream_create_with_flags(&s, 2u), RMM_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE_HAS("flags 0x2");
    EXPECT_OK(rmm_stream_create_with_flags(&s, RMM_STREAM_SYNC_DEFAULT));
    EXPECT_OK(rmm_stream_synchronize(s));
    EXPECT_OK(rmm_stream_destroy(s));
  }
  EXPECT_STATUS(rmm_memcpy(NULL, &local, 1, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_memset(NULL, 0, 1, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(rmm_memcpy(NULL, NULL, 0, NULL)); /* nothing to copy */
  /* prefetch: a hint, but bad arguments are still errors */
  EXPECT_STATUS(rmm_prefetch(NULL, 1, 0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(rmm_prefetch(NULL, 0, 0, NULL)); /* nothing to prefetch */
  EXPECT_STATUS(rmm_prefetch(&local, 1, 9999, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("device 9999");
  EXPECT_STATUS(rmm_prefetch(&local, 1, -2, NULL), RMM_ERROR_INVALID_ARGUMENT);
  {
    rmm_resource_t managed = NULL;
    void* m = NULL;
    void* d = NULL;
    EXPECT_OK(rmm_resource_create(RMM_RESOURCE_MANAGED, NULL, &managed));
    EXPECT_OK(rmm_allocate(managed, NULL, 1 << 20, 256, &m));
    EXPECT_OK(rmm_prefetch(m, 1 << 20, 0, NULL));                 /* managed memory to device 0 */
    EXPECT_OK(rmm_prefetch(m, 1 << 20, RMM_PREFETCH_HOST, NULL)); /* and back to the host */
    EXPECT_OK(rmm_memset(m, 1, 1 << 20, NULL));
    EXPECT_OK(rmm_stream_synchronize(NULL));
    EXPECT_OK(rmm_deallocate(managed, NULL, m, 1 << 20, 256));
    EXPECT_OK(rmm_allocate(cuda, NULL, 4096, 256, &d));
    EXPECT_OK(rmm_prefetch(d, 4096, 0, NULL)); /* device memory: no effect, no error */
    EXPECT_OK(rmm_deallocate(cuda, NULL, d, 4096, 256));
    EXPECT_OK(rmm_resource_release(managed));
  }
  EXPECT_STATUS(rmm_logging_file_name(cuda, NULL, 0, NULL), RMM_ERROR_INVALID_ARGUMENT); /* wrong kind */

  /* kind-specific calls on another kind: RMM_ERROR_INVALID_ARGUMENT */
  EXPECT_STATUS(rmm_pool_size(cuda, &sz), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("cuda");
  EXPECT_STATUS(rmm_pool_used_bytes(cuda, &sz), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_pool_release(cuda), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_fixed_size_block_size(cuda, &sz), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_binning_add_bin(cuda, 1024, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_limiting_allocated_bytes(cuda, &sz), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_tracking_outstanding_count(cuda, &sz), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_logging_flush(cuda), RMM_ERROR_INVALID_ARGUMENT);
  st.struct_size = sizeof st;
  EXPECT_STATUS(rmm_statistics_get(cuda, &st), RMM_ERROR_INVALID_ARGUMENT);

  /* ---- NULL, forged, stale and released handles: RMM_ERROR_INVALID_HANDLE */
  EXPECT_STATUS(rmm_allocate(NULL, NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_MESSAGE_HAS("NULL");
  EXPECT_STATUS(rmm_deallocate(NULL, NULL, NULL, 0, 256), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_retain(NULL), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_release(NULL), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_kind_of(NULL, &kind), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_allocate(forge(0x1234), NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_allocate(forge(UINTPTR_MAX), NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_allocate((rmm_resource_t)(void*)&local, NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_allocate(forge((uintptr_t)cuda + 1), NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_allocate(forge((uintptr_t)cuda + ((uintptr_t)1 << 24)), NULL, 256, 256, &p),
                RMM_ERROR_INVALID_HANDLE); /* the next generation of the slot */
  EXPECT_STATUS(rmm_allocate(forge((uintptr_t)cuda ^ ((uintptr_t)1 << 50)), NULL, 256, 256, &p),
                RMM_ERROR_INVALID_HANDLE); /* another tag */
  EXPECT_STATUS(rmm_resource_release(forge(0x1234)), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_is_equal(cuda, forge(42), &eq), RMM_ERROR_INVALID_HANDLE);
  rmm_resource_options_init(&o);
  o.upstream = forge(0x5000);
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &mr), RMM_ERROR_INVALID_HANDLE);
  EXPECT_MESSAGE_HAS("upstream");

  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &released));
  REQUIRE_OK(rmm_resource_release(released));
  EXPECT_STATUS(rmm_allocate(released, NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_deallocate(released, NULL, NULL, 0, 256), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_retain(released), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_release(released), RMM_ERROR_INVALID_HANDLE); /* releasing twice */
  EXPECT_MESSAGE_HAS("not a live resource handle");
  o.upstream = released;
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &mr), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_set_current_device_resource(released, NULL), RMM_ERROR_INVALID_HANDLE);
  /* A new resource may reuse the slot: the released handle stays dead. */
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr));
  EXPECT(mr != released);
  EXPECT_STATUS(rmm_allocate(released, NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_OK(rmm_resource_release(mr));

  /* ---- size 0: success and NULL; deallocating NULL is a no-op */
  p = &local;
  EXPECT_OK(rmm_allocate(cuda, NULL, 0, 256, &p));
  EXPECT(p == NULL);
  EXPECT_OK(rmm_deallocate(cuda, NULL, NULL, 0, 256));
  p = &local;
  EXPECT_OK(rmm_allocate_sync(cuda, 0, 256, &p));
  EXPECT(p == NULL);
  EXPECT_OK(rmm_deallocate_sync(cuda, NULL, 0, 256));

  /* ---- alignment not a power of two, or above what a base resource gives */
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 3, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_MESSAGE_HAS("power of two");
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 0, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 384, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 0, 3, &p), RMM_ERROR_BAD_ALIGNMENT); /* even for 0 bytes */
  EXPECT_STATUS(rmm_allocate_sync(cuda, 256, 100, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 4096, &p), RMM_ERROR_BAD_ALIGNMENT);

  /* ---- out of memory */
  EXPECT_STATUS(rmm_allocate(cuda, NULL, SIZE_MAX / 2, 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, SIZE_MAX, 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  REQUIRE_OK(rmm_mem_get_info(&sz, &total));
  EXPECT_STATUS(rmm_allocate(cuda, NULL, total + ((size_t)1 << 30), 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.allocation_limit = 4096;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_LIMITING, &o, &mr));
  EXPECT_STATUS(rmm_allocate(mr, NULL, 8192, 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_OK(rmm_resource_release(mr));
  rmm_resource_options_init(&o);
  o.allocate_callback = never_alloc;
  o.deallocate_callback = never_free;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CALLBACK, &o, &mr));
  EXPECT_STATUS(rmm_allocate(mr, NULL, 1024, 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_OK(rmm_resource_release(mr));

  /* ---- deallocating what was never handed out, or twice */
  EXPECT_STATUS(rmm_deallocate(cuda, NULL, (void*)(uintptr_t)0x7f0000012300u, 256, 256),
                RMM_ERROR_INVALID_POINTER);
  EXPECT_STATUS(rmm_deallocate(cuda, NULL, &local, 1, 256), RMM_ERROR_INVALID_POINTER);
  REQUIRE_OK(rmm_allocate(cuda, NULL, 1024, 256, &p));
  EXPECT_OK(rmm_deallocate(cuda, NULL, p, 1024, 256));
  EXPECT_STATUS(rmm_deallocate(cuda, NULL, p, 1024, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_MESSAGE_HAS("rmm_deallocate");
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_PINNED_HOST, NULL, &mr));
  REQUIRE_OK(rmm_allocate(mr, NULL, 1024, 256, &p));
  EXPECT_OK(rmm_deallocate(mr, NULL, p, 1024, 256));
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, 1024, 256), RMM_ERROR_INVALID_POINTER);
  EXPECT_OK(rmm_resource_release(mr));
  /* Sub-allocators know their blocks too. */
  mr = test_make(RMM_RESOURCE_POOL, cuda);
  if (mr != NULL) {
    REQUIRE_OK(rmm_allocate(mr, NULL, 1024, 256, &p));
    REQUIRE_OK(rmm_allocate(mr, NULL, 1024, 256, &q));
    EXPECT_STATUS(rmm_deallocate(mr, NULL, (char*)p + 256, 256, 256), RMM_ERROR_INVALID_POINTER);
    EXPECT_OK(rmm_deallocate(mr, NULL, p, 1024, 256));
    EXPECT_STATUS(rmm_deallocate(mr, NULL, p, 1024, 256), RMM_ERROR_INVALID_POINTER);
    EXPECT_OK(rmm_deallocate(mr, NULL, q, 1024, 256));
    EXPECT_OK(rmm_resource_release(mr));
  }
  /* The framework allocators remember what they handed out. */
  rmm_cupy_free(NULL, (void*)(uintptr_t)0x7f0000012300u, 0);
  EXPECT_MESSAGE_HAS("not allocated");

  /* ---- statistics: popping the last level is out of range */
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  st.struct_size = sizeof st;
  EXPECT_STATUS(rmm_statistics_pop(stats, &st), RMM_ERROR_OUT_OF_RANGE);
  EXPECT_OK(rmm_statistics_push(stats, NULL));
  EXPECT_OK(rmm_statistics_pop(stats, &st));
  EXPECT_STATUS(rmm_statistics_pop(stats, &st), RMM_ERROR_OUT_OF_RANGE);
  st.struct_size = 0;
  EXPECT_STATUS(rmm_statistics_get(stats, &st), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(rmm_resource_release(stats));

  /* ---- devices that do not exist: RMM_ERROR_INVALID_DEVICE */
  EXPECT_STATUS(rmm_set_device(devices), RMM_ERROR_INVALID_DEVICE);
  EXPECT_MESSAGE_HAS("does not exist");
  EXPECT_STATUS(rmm_set_device(-1), RMM_ERROR_INVALID_DEVICE);
  EXPECT_STATUS(rmm_get_per_device_resource(devices, &mr), RMM_ERROR_INVALID_DEVICE);
  EXPECT_STATUS(rmm_get_per_device_resource(-1, &mr), RMM_ERROR_INVALID_DEVICE);
  EXPECT_STATUS(rmm_set_per_device_resource(devices, cuda, NULL), RMM_ERROR_INVALID_DEVICE);
  EXPECT_STATUS(rmm_reset_per_device_resource(1000, NULL), RMM_ERROR_INVALID_DEVICE);
  EXPECT(rmm_cupy_malloc(NULL, 256, devices) == NULL);
  EXPECT_MESSAGE_HAS("does not exist");
  EXPECT(rmm_torch_allocate(256, -3, NULL) == NULL);
  REQUIRE_OK(rmm_get_device(&dev));
  EXPECT(dev == 0); /* a failed rmm_set_device changed nothing */

  /* ---- the wrong device current: RMM_ERROR_WRONG_DEVICE */
  if (devices < 2) {
    printf("note: one device only: the wrong-device cases are skipped\n");
  } else {
    REQUIRE_OK(rmm_set_device(1));
    EXPECT_STATUS(rmm_allocate(cuda, NULL, 1024, 256, &p), RMM_ERROR_WRONG_DEVICE);
    EXPECT_MESSAGE_HAS("device 0");
    EXPECT_STATUS(rmm_allocate_sync(cuda, 1024, 256, &p), RMM_ERROR_WRONG_DEVICE);
    rmm_resource_options_init(&o);
    o.upstream = cuda;
    REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats)); /* made on device 1 over device 0 */
    EXPECT_STATUS(rmm_allocate(stats, NULL, 1024, 256, &p), RMM_ERROR_WRONG_DEVICE);
    EXPECT_OK(rmm_resource_release(stats));
    REQUIRE_OK(rmm_set_device(0));
    REQUIRE_OK(rmm_allocate(cuda, NULL, 1024, 256, &p));
    EXPECT_OK(rmm_deallocate(cuda, NULL, p, 1024, 256));
  }

  /* ---- the message: set by failures, per thread, kept by successes */
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 3, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_OK(rmm_resource_kind_of(cuda, &kind));
  EXPECT(kind == RMM_RESOURCE_CUDA);
  EXPECT_MESSAGE_HAS("alignment"); /* the success left it alone */
  EXPECT_OK(rmm_resource_name(cuda, &name));
  EXPECT(name != NULL && strcmp(name, "cuda_memory_resource") == 0);
  EXPECT(strcmp(rmm_status_string(RMM_ERROR_OUT_OF_MEMORY), "RMM_ERROR_OUT_OF_MEMORY") == 0);
  EXPECT(strcmp(rmm_status_string((rmm_status)1234), "RMM_ERROR_UNKNOWN_STATUS") == 0);
  EXPECT(rmm_version() != NULL && strcmp(rmm_version(), RMMGO_VERSION_STRING) == 0);
  EXPECT(rmm_version_number() == RMMGO_VERSION_NUMBER);

  /* ---- streams: allocation on a stream of our own works; the default
   * stream cannot be destroyed (a destroyed stream is the caller's error,
   * as in CUDA, and is not tried) */
  REQUIRE_OK(rmm_stream_create(&stream));
  REQUIRE_OK(rmm_allocate(cuda, stream, 1024, 256, &p));
  EXPECT_OK(rmm_deallocate(cuda, stream, p, 1024, 256));
  EXPECT_OK(rmm_stream_destroy(stream));

  EXPECT_OK(rmm_resource_release(cuda));
  EXPECT_STATUS(rmm_resource_release(cuda), RMM_ERROR_INVALID_HANDLE);
  return test_finish();
}
