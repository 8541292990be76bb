/*
 * bad_input_test.c -- the bad-input matrix of the C ABI: every case expects
 * one specific status, a message, and no crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rmmgo.h"
#include "test_util.h"

/* A cuda resource every test may use, made by setup. */
static rmm_resource_t cuda;

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

/* ---- NULL out-parameters: RMM_ERROR_INVALID_ARGUMENT */
static void test_null_out_parameters(void) {
  size_t sz = 0, total = 0;
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
}

/* ---- bad creation options: RMM_ERROR_INVALID_ARGUMENT */
static void test_bad_create_options(void) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
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
}

/* ---- other bad arguments: RMM_ERROR_INVALID_ARGUMENT */
static void test_bad_arguments(void) {
  rmm_resource_t mr = NULL;
  int has = 0;
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
  EXPECT_STATUS(rmm_logging_file_name(cuda, NULL, 0, NULL), RMM_ERROR_INVALID_ARGUMENT); /* wrong kind */
}

/* ---- copies, fills and prefetches */
static void test_copies_fills_prefetch(void) {
  char local = 0;
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
}

/* ---- kind-specific calls on another kind: RMM_ERROR_INVALID_ARGUMENT */
static void test_wrong_kind(void) {
  rmm_statistics st;
  size_t sz = 0;
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
}

/* ---- NULL, forged and stale handles: RMM_ERROR_INVALID_HANDLE */
static void test_forged_handles(void) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  rmm_resource_kind kind;
  void* p = NULL;
  char local = 0;
  int eq = 0;
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
}

/* ---- released handles: RMM_ERROR_INVALID_HANDLE */
static void test_released_handles(void) {
  rmm_resource_options o;
  rmm_resource_t released = NULL, mr = NULL;
  void* p = NULL;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &released));
  REQUIRE_OK(rmm_resource_release(released));
  EXPECT_STATUS(rmm_allocate(released, NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_deallocate(released, NULL, NULL, 0, 256), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_retain(released), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_resource_release(released), RMM_ERROR_INVALID_HANDLE); /* releasing twice */
  EXPECT_MESSAGE_HAS("not a live resource handle");
  rmm_resource_options_init(&o);
  o.upstream = released;
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &mr), RMM_ERROR_INVALID_HANDLE);
  EXPECT_STATUS(rmm_set_current_device_resource(released, NULL), RMM_ERROR_INVALID_HANDLE);
  /* A new resource may reuse the slot: the released handle stays dead. */
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &mr));
  EXPECT(mr != released);
  EXPECT_STATUS(rmm_allocate(released, NULL, 256, 256, &p), RMM_ERROR_INVALID_HANDLE);
  EXPECT_OK(rmm_resource_release(mr));
}

/* ---- size 0: success and NULL; deallocating NULL is a no-op */
static void test_zero_bytes(void) {
  char local = 0;
  void* p = &local;
  EXPECT_OK(rmm_allocate(cuda, NULL, 0, 256, &p));
  EXPECT(p == NULL);
  EXPECT_OK(rmm_deallocate(cuda, NULL, NULL, 0, 256));
  p = &local;
  EXPECT_OK(rmm_allocate_sync(cuda, 0, 256, &p));
  EXPECT(p == NULL);
  EXPECT_OK(rmm_deallocate_sync(cuda, NULL, 0, 256));
}

/* ---- alignment not a power of two, or above what a base resource gives */
static void test_bad_alignment(void) {
  void* p = NULL;
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 3, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_MESSAGE_HAS("power of two");
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 0, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 384, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 0, 3, &p), RMM_ERROR_BAD_ALIGNMENT); /* even for 0 bytes */
  EXPECT_STATUS(rmm_allocate_sync(cuda, 256, 100, &p), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_allocate(cuda, NULL, 256, 4096, &p), RMM_ERROR_BAD_ALIGNMENT);
}

/* ---- out of memory */
static void test_out_of_memory(void) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  size_t sz = 0, total = 0;
  void* p = NULL;
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
}

/* ---- deallocating what was never handed out, or twice */
static void test_foreign_and_double_frees(void) {
  rmm_resource_t mr = NULL;
  void* p = NULL;
  void* q = NULL;
  char local = 0;
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
}

/* ---- statistics: popping the last level is out of range */
static void test_statistics_levels(void) {
  rmm_resource_options o;
  rmm_resource_t stats = NULL;
  rmm_statistics st;
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
}

/* ---- devices that do not exist: RMM_ERROR_INVALID_DEVICE */
static void test_missing_devices(void) {
  rmm_resource_t mr = NULL;
  int devices = test_device_count(), dev = -1;
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
}

/* ---- the wrong device current: RMM_ERROR_WRONG_DEVICE */
static void test_wrong_device(void) {
  rmm_resource_options o;
  rmm_resource_t stats = NULL;
  void* p = NULL;
  if (!test_has_devices(2)) {
    return;
  }
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
static void test_messages(void) {
  rmm_resource_kind kind;
  const char* name = NULL;
  void* p = NULL;
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
}

/* ---- streams: allocation on a stream of our own works; the default
 * stream cannot be destroyed (a destroyed stream is the caller's error, as
 * in CUDA, and is not tried) */
static void test_streams(void) {
  rmm_stream_t stream = NULL;
  void* p = NULL;
  REQUIRE_OK(rmm_stream_create(&stream));
  REQUIRE_OK(rmm_allocate(cuda, stream, 1024, 256, &p));
  EXPECT_OK(rmm_deallocate(cuda, stream, p, 1024, 256));
  EXPECT_OK(rmm_stream_destroy(stream));
}

/* ---- structures that carry their size: a struct_size that is no
 * structure's is refused before anything is read or written. Before, a
 * struct_size of SIZE_MAX made rmm_resource_options_init_sized write
 * SIZE_MAX bytes (SIGSEGV), and rmm_resource_create and the statistics
 * calls took any struct_size from 8 or 16 bytes up. */
static void test_struct_sizes(void) {
  static unsigned char buf[8192];
  rmm_resource_options* o = (rmm_resource_options*)(void*)buf;
  rmm_resource_options opts;
  rmm_resource_t mr = NULL, stats = NULL;
  rmm_statistics st;
  size_t i, bad = 0;

  memset(buf, 0xab, sizeof buf);
  EXPECT_STATUS(rmm_resource_options_init_sized(o, SIZE_MAX), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("struct_size is 18446744073709551615");
  EXPECT_STATUS(rmm_resource_options_init_sized(o, 4097), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_resource_options_init_sized(o, sizeof(rmm_resource_options) - 1), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("smaller than any version");
  for (i = 0; i < sizeof buf; i++) {
    bad += buf[i] != 0xab;
  }
  EXPECT(bad == 0); /* nothing written */

  /* A newer program's larger structure: what both know filled, the rest
   * zeroed, and not a byte beyond it. */
  EXPECT_OK(rmm_resource_options_init_sized(o, sizeof(rmm_resource_options) + 64));
  EXPECT(o->struct_size == sizeof(rmm_resource_options));
  EXPECT(o->initial_pool_size == RMM_SIZE_DEFAULT && o->alignment == RMM_DEFAULT_ALIGNMENT);
  for (i = sizeof(rmm_resource_options), bad = 0; i < sizeof(rmm_resource_options) + 64; i++) {
    bad += buf[i] != 0;
  }
  EXPECT(bad == 0);
  EXPECT(buf[sizeof(rmm_resource_options) + 64] == 0xab);

  rmm_resource_options_init(&opts);
  opts.struct_size = SIZE_MAX; /* never set: garbage */
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_CUDA, &opts, &mr), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("options->struct_size");
  opts.struct_size = 16; /* struct_size and upstream only: no program's */
  EXPECT_STATUS(rmm_resource_create(RMM_RESOURCE_CUDA, &opts, &mr), RMM_ERROR_INVALID_ARGUMENT);

  rmm_resource_options_init(&opts);
  opts.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &opts, &stats));
  st.struct_size = SIZE_MAX;
  EXPECT_STATUS(rmm_statistics_get(stats, &st), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("stats->struct_size");
  st.struct_size = sizeof(size_t);
  EXPECT_STATUS(rmm_statistics_get(stats, &st), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_statistics_push(stats, &st), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_statistics_pop(stats, &st), RMM_ERROR_INVALID_ARGUMENT);
  st.struct_size = sizeof st;
  EXPECT_STATUS(rmm_statistics_pop(stats, &st), RMM_ERROR_OUT_OF_RANGE); /* the refused push pushed nothing */
  EXPECT_OK(rmm_resource_release(stats));
}

/* create makes a resource of kind with options o, releases it at once, and
 * returns the status of the creation. */
static rmm_status create(rmm_resource_kind kind, const rmm_resource_options* o) {
  rmm_resource_t mr = NULL;
  rmm_status s = rmm_resource_create(kind, o, &mr);
  if (s == RMM_SUCCESS) {
    (void)rmm_resource_release(mr);
  }
  return s;
}

/* ---- options no resource can work with, refused when it is made. Before,
 * each was accepted without a word: a fixed_size block size of 0 became
 * 1 MiB, an aligned adaptor took alignment 2^62, a limiting adaptor limit 0,
 * a cuda_async_view a forged pool handle (every allocation then failed). */
static void test_option_validation(void) {
  rmm_resource_options o;
  rmm_resource_t fixed = NULL;
  size_t block = 0;

  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.block_size = 0;
  EXPECT_STATUS(create(RMM_RESOURCE_FIXED_SIZE, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("options.block_size is 0");
  o.block_size = 4096;
  o.blocks_to_preallocate = 0;
  EXPECT_STATUS(create(RMM_RESOURCE_FIXED_SIZE, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("blocks_to_preallocate");
  /* RMM's rule: block sizes round up to a multiple of 256 bytes, and the
   * resource says what its blocks hold. */
  o.block_size = 3;
  o.blocks_to_preallocate = 4;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_FIXED_SIZE, &o, &fixed));
  EXPECT_OK(rmm_fixed_size_block_size(fixed, &block));
  EXPECT(block == 256);
  EXPECT_OK(rmm_resource_release(fixed));

  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.alignment = (size_t)1 << 62;
  EXPECT_STATUS(create(RMM_RESOURCE_ALIGNED, &o), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_MESSAGE_HAS("2^56");
  o.allocation_limit = (size_t)1 << 20; /* limiting counts in units of its alignment */
  EXPECT_STATUS(create(RMM_RESOURCE_LIMITING, &o), RMM_ERROR_BAD_ALIGNMENT);
  o.alignment = (size_t)1 << 56;
  EXPECT_OK(create(RMM_RESOURCE_ALIGNED, &o)); /* the largest accepted */

  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.allocation_limit = 0;
  EXPECT_STATUS(create(RMM_RESOURCE_LIMITING, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("limit of 0 bytes");
  o.allocation_limit = 1;
  EXPECT_OK(create(RMM_RESOURCE_LIMITING, &o));

  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.arena_size = 0;
  EXPECT_STATUS(create(RMM_RESOURCE_ARENA, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("options.arena_size is 0");
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = 0;
  o.maximum_pool_size = 0;
  EXPECT_STATUS(create(RMM_RESOURCE_POOL, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("options.maximum_pool_size is 0");
  o.maximum_pool_size = 1000; /* RMM's rule: multiples of 256 */
  EXPECT_STATUS(create(RMM_RESOURCE_POOL, &o), RMM_ERROR_INVALID_ARGUMENT);

  rmm_resource_options_init(&o);
  o.export_handle_types = 2; /* a Windows handle type */
  EXPECT_STATUS(create(RMM_RESOURCE_CUDA_ASYNC, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("export_handle_types");

  rmm_resource_options_init(&o);
  o.allocate_callback = never_alloc; /* and no deallocate_callback */
  EXPECT_STATUS(create(RMM_RESOURCE_CALLBACK, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("deallocate_callback");
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  EXPECT_STATUS(create(RMM_RESOURCE_FAILURE_CALLBACK, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("failure_callback");
  rmm_resource_options_init(&o);
  EXPECT_STATUS(create(RMM_RESOURCE_CUDA_ASYNC_VIEW, &o), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("pool_handle is NULL");
}

/* ---- a pool handle CUDA does not know. The library asks CUDA at creation
 * whether the handle is a pool. The simulated device answers for forged
 * handles; on a GPU a forged handle is undefined behaviour (as in CUDA
 * itself: it may crash the driver), so only the simulated device runs it. */
static void test_forged_pool_handle(void) {
  rmm_resource_options o;
  rmm_resource_t owner = NULL, view = NULL;
  rmm_mem_pool_t pool = NULL;
  rmm_resource_options_init(&o);
  if (test_simulated()) {
    o.pool_handle = (rmm_mem_pool_t)(uintptr_t)0xdeadbeef;
    EXPECT_STATUS(create(RMM_RESOURCE_CUDA_ASYNC_VIEW, &o), RMM_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE_HAS("0xdeadbeef is not a CUDA memory pool");
  } else {
    printf("note: a forged pool handle is undefined in CUDA: only the simulated device checks it\n");
  }
  /* A real pool is taken. */
  owner = test_make(RMM_RESOURCE_CUDA_ASYNC, NULL);
  if (owner == NULL) {
    return;
  }
  EXPECT_OK(rmm_cuda_async_pool_handle(owner, &pool));
  o.pool_handle = pool;
  EXPECT_OK(rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC_VIEW, &o, &view));
  if (view != NULL) {
    void* p = NULL;
    EXPECT_OK(rmm_allocate(view, NULL, 4096, 256, &p));
    EXPECT_OK(rmm_deallocate(view, NULL, p, 4096, 256));
    EXPECT_OK(rmm_resource_release(view));
  }
  EXPECT_OK(rmm_resource_release(owner));
}

/* ---- a resource belongs to its device: setting it as another device's
 * current resource is refused. Before, a pool made on device 1 was taken as
 * device 0's resource. */
static void test_per_device_wrong_device(void) {
  rmm_resource_options o;
  rmm_resource_t cuda1 = NULL, pool1 = NULL, stats1 = NULL, prev = NULL, got = NULL, pinned = NULL;
  if (!test_has_devices(2)) {
    return;
  }
  REQUIRE_OK(rmm_set_device(1));
  EXPECT_OK(rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda1));
  pool1 = test_make(RMM_RESOURCE_POOL, cuda1);
  rmm_resource_options_init(&o);
  o.upstream = pool1;
  EXPECT_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats1));
  EXPECT_OK(rmm_resource_create(RMM_RESOURCE_PINNED_HOST, NULL, &pinned));
  REQUIRE_OK(rmm_set_device(0));
  if (pool1 == NULL || stats1 == NULL || pinned == NULL) {
    return;
  }
  EXPECT_STATUS(rmm_set_per_device_resource(0, pool1, &prev), RMM_ERROR_WRONG_DEVICE);
  EXPECT_MESSAGE_HAS("belongs to device 1");
  EXPECT(prev == NULL); /* nothing written on failure */
  EXPECT_STATUS(rmm_set_current_device_resource(pool1, NULL), RMM_ERROR_WRONG_DEVICE);
  EXPECT_STATUS(rmm_set_current_device_resource(stats1, NULL), RMM_ERROR_WRONG_DEVICE); /* an adaptor over it */
  EXPECT_OK(rmm_get_per_device_resource(0, &got));
  EXPECT(got != pool1 && got != stats1); /* device 0 unchanged */
  EXPECT_OK(rmm_resource_release(got));
  /* Its own device takes it; pinned host memory serves every device. */
  EXPECT_OK(rmm_set_per_device_resource(1, stats1, NULL));
  EXPECT_OK(rmm_reset_per_device_resource(1, NULL));
  EXPECT_OK(rmm_set_per_device_resource(0, pinned, NULL));
  EXPECT_OK(rmm_reset_per_device_resource(0, NULL));
  EXPECT_OK(rmm_resource_release(pinned));
  EXPECT_OK(rmm_resource_release(stats1));
  EXPECT_OK(rmm_resource_release(pool1));
  EXPECT_OK(rmm_resource_release(cuda1));
}

/* ---- no cycles: a bin that would make a binning resource its own
 * descendant is refused by the call that would close the loop, and nothing
 * leaks. Before, two binning resources given each other as bins were
 * accepted; an allocation then recursed until the Go stack overflowed, and
 * releasing both leaked a bin. */
static void test_no_cycles(void) {
  rmm_resource_options o;
  rmm_resource_t counted = NULL, a = NULL, b = NULL, stats = NULL;
  rmm_statistics st;
  void* p = NULL;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &counted)); /* counts what goes upstream */
  a = test_make(RMM_RESOURCE_BINNING, counted);
  b = test_make(RMM_RESOURCE_BINNING, counted);
  if (a == NULL || b == NULL) {
    return;
  }
  o.upstream = a;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));

  EXPECT_STATUS(rmm_binning_add_bin(a, (size_t)1 << 20, a), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("own descendant");
  EXPECT_OK(rmm_binning_add_bin(a, (size_t)1 << 20, b));
  EXPECT_STATUS(rmm_binning_add_bin(b, (size_t)1 << 20, a), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_MESSAGE_HAS("rmm_binning_add_bin");
  EXPECT_STATUS(rmm_binning_add_bin(b, (size_t)2 << 20, stats), RMM_ERROR_INVALID_ARGUMENT); /* through an adaptor */
  EXPECT_STATUS(rmm_binning_add_bin(a, (size_t)4 << 20, stats), RMM_ERROR_INVALID_ARGUMENT);

  /* Both still serve: a's 1 MiB bin is b, which sends 300000 bytes upstream. */
  EXPECT_OK(rmm_allocate(a, NULL, 300000, 256, &p));
  EXPECT_OK(rmm_deallocate(a, NULL, p, 300000, 256));
  EXPECT_OK(rmm_allocate(stats, NULL, 1000, 256, &p));
  EXPECT_OK(rmm_deallocate(stats, NULL, p, 1000, 256));

  EXPECT_OK(rmm_resource_release(stats));
  EXPECT_OK(rmm_resource_release(b)); /* a holds it as a bin */
  EXPECT_OK(rmm_resource_release(a));
  st.struct_size = sizeof st;
  EXPECT_OK(rmm_statistics_get(counted, &st));
  EXPECT(st.bytes.value == 0); /* every byte back upstream */
  EXPECT_OK(rmm_resource_release(counted));
}

static int setup(void) { return rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS; }

static void teardown(void) {
  EXPECT_OK(rmm_resource_release(cuda));
  EXPECT_STATUS(rmm_resource_release(cuda), RMM_ERROR_INVALID_HANDLE);
}

static const test_case tests[] = {
    TEST(test_null_out_parameters),
    TEST(test_bad_create_options),
    TEST(test_bad_arguments),
    TEST(test_copies_fills_prefetch),
    TEST(test_wrong_kind),
    TEST(test_forged_handles),
    TEST(test_released_handles),
    TEST(test_zero_bytes),
    TEST(test_bad_alignment),
    TEST(test_out_of_memory),
    TEST(test_foreign_and_double_frees),
    TEST(test_statistics_levels),
    TEST(test_missing_devices),
    TEST(test_wrong_device),
    TEST(test_messages),
    TEST(test_streams),
    TEST(test_struct_sizes),
    TEST(test_option_validation),
    TEST(test_forged_pool_handle),
    TEST(test_per_device_wrong_device),
    TEST(test_no_cycles),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
