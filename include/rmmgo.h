/*
 * rmmgo.h -- the C interface of rmmgo, the RAPIDS Memory Manager with a Go core.
 *
 * One library, librmmgo.so, holds every memory resource of the process. C, C++,
 * Python (through ctypes) and Go programs in one process share one registry of
 * resources and one current resource per device: a resource set current here is
 * the one every other language sees.
 *
 * Conventions
 *   - Resources are opaque handles (rmm_resource_t). A handle is a number that
 *     the library looks up, never a pointer it follows: a forged, stale or
 *     released handle is answered with RMM_ERROR_INVALID_HANDLE.
 *   - Handles are reference counted. Every function that hands out a handle
 *     (through an rmm_resource_t* out-parameter) hands out a new reference that
 *     the caller gives back with rmm_resource_release. A sub-allocator or
 *     adaptor holds a reference to its upstream, and a per-device slot to its
 *     resource, so releasing your reference early never leaves anything
 *     dangling.
 *   - Every function that can fail returns an rmm_status; results go to
 *     out-parameters, which are written only on success. On failure,
 *     rmm_last_error_message() gives a readable message for the calling thread.
 *   - Streams are cudaStream_t values (rmm_stream_t is the same type); NULL,
 *     that is 0, is the default stream. A stream made by rmm_stream_create*
 *     and destroyed by rmm_stream_destroy is refused afterwards by every call
 *     (RMM_ERROR_INVALID_ARGUMENT); any other stream, and any CUDA memory
 *     pool, must be valid, as CUDA requires: the library hands it to CUDA,
 *     which may crash on a forged or destroyed one (see "Streams" below).
 *   - Like CUDA, the current device belongs to the calling thread. A resource
 *     must be used while the device that was current when it was made is
 *     current (RMM's rule); base resources check it.
 *   - Every function is safe to call from many threads at once, including
 *     threads the library did not create, unless its comment says otherwise.
 *   - fork(): the library cannot be used in the child of a fork() (without
 *     exec). Go, which the library runs on, and CUDA do not survive a fork:
 *     locks the parent's other threads held -- including the Go runtime's
 *     own threads, which exist whether or not the program made any -- stay
 *     held in the child. So in such a child every call that would enter the
 *     library's core fails at once with RMM_ERROR_NOT_SUPPORTED and the
 *     message "<function>: rmmgo cannot be used in a child process created
 *     by fork(): ..." (calls that return no status return NULL, 0 or
 *     nothing and set rmm_last_error_status). rmm_last_error_message,
 *     rmm_last_error_status, rmm_status_string, rmm_version*,
 *     rmm_last_out_of_memory_report, rmm_string_free and
 *     rmm_resource_options_init keep working there. Start children with
 *     exec (Python: multiprocessing's "spawn" or "forkserver" method).
 *
 * The backend: by default the library loads the CUDA runtime (libcudart.so.13,
 * .12, or the file named by RMMGO_CUDART_LIBRARY). With RMMGO_BACKEND=simulated
 * it runs on a simulated device instead (for machines without a GPU). It never
 * switches by itself; rmm_backend_name() says which one runs.
 */
#ifndef RMMGO_H
#define RMMGO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

#define RMMGO_VERSION_MAJOR 0
#define RMMGO_VERSION_MINOR 1
#define RMMGO_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define RMMGO_VERSION_NUMBER 100
#define RMMGO_VERSION_STRING "0.1.0"

/* The library's version string, e.g. "0.1.0"; compare with
 * RMMGO_VERSION_STRING to detect a header/library mismatch. Never NULL. */
const char* rmm_version(void);
/* The library's version as MAJOR * 10000 + MINOR * 100 + PATCH. */
int rmm_version_number(void);

/* ----------------------------------------------------------------- status */

typedef enum rmm_status {
  RMM_SUCCESS = 0,
  RMM_ERROR_INVALID_ARGUMENT = 1,  /* NULL out-parameter, bad option, bad size  */
  RMM_ERROR_INVALID_HANDLE = 2,    /* forged, stale or released handle          */
  RMM_ERROR_OUT_OF_MEMORY = 3,     /* no room: RMM's out_of_memory              */
  RMM_ERROR_BAD_ALLOC = 4,         /* allocation failed otherwise: bad_alloc    */
  RMM_ERROR_BAD_ALIGNMENT = 5,     /* alignment not a power of two, or too big  */
  RMM_ERROR_INVALID_POINTER = 6,   /* memory not from this resource, or freed   */
  RMM_ERROR_INVALID_DEVICE = 7,    /* no such device                            */
  RMM_ERROR_WRONG_DEVICE = 8,      /* resource used with another device current */
  RMM_ERROR_NOT_SUPPORTED = 9,     /* the device or runtime lacks a feature     */
  RMM_ERROR_CUDA = 10,             /* a CUDA call failed; message names it      */
  RMM_ERROR_BACKEND_UNAVAILABLE = 11, /* no CUDA runtime/driver/device found    */
  RMM_ERROR_OUT_OF_RANGE = 12,     /* e.g. popping the last statistics level    */
  RMM_ERROR_INTERNAL = 13          /* a bug in rmmgo; the message says where    */
} rmm_status;

/* A short constant name for a status, e.g. "RMM_ERROR_OUT_OF_MEMORY". Never NULL. */
const char* rmm_status_string(rmm_status status);

/* The message of the last failed call made by the calling thread: what
 * failed and why, with the CUDA error name where CUDA failed. "" when this
 * thread has seen no failure. The string stays valid until the thread's next
 * call into the library. Never NULL. */
const char* rmm_last_error_message(void);

/* ---------------------------------------------------------------- handles */

/* A resource handle. Opaque; never dereferenced by anyone. */
typedef struct rmm_resource_handle_s* rmm_resource_t;

/* A CUDA stream; the same type as cudaStream_t, so either passes for the
 * other without a cast. NULL is the default stream. */
typedef struct CUstream_st* rmm_stream_t;

/* A CUDA memory pool; the same type as cudaMemPool_t. */
typedef struct CUmemPoolHandle_st* rmm_mem_pool_t;

/* The alignment every resource guarantees, and the usual argument. */
#define RMM_DEFAULT_ALIGNMENT ((size_t)256)

/* As a size option: "not given, use RMM's default" (see each option). */
#define RMM_SIZE_DEFAULT ((size_t)-1)

/* --------------------------------------------------------------- backend */

/* "cuda" or "simulated": which backend this process runs on. Opens the
 * backend if it is not open yet (RMM_ERROR_BACKEND_UNAVAILABLE if it cannot). */
rmm_status rmm_backend_name(const char** name);
rmm_status rmm_runtime_version(int* version); /* e.g. 13000 */
rmm_status rmm_driver_version(int* version);

rmm_status rmm_get_device_count(int* count);
rmm_status rmm_get_device(int* device);    /* the calling thread's current device */
rmm_status rmm_set_device(int device);
/* The value of CUDA device attribute `attribute` (a cudaDeviceAttr, e.g. 88
 * for cudaDevAttrPageableMemoryAccess) of `device`, as cudaDeviceGetAttribute
 * gives it. The simulated device answers the attributes rmmgo reads and
 * fails any other with RMM_ERROR_CUDA. */
rmm_status rmm_device_get_attribute(int* value, int attribute, int device);
/* Free and total memory of the current device, in bytes. */
rmm_status rmm_mem_get_info(size_t* free_bytes, size_t* total_bytes);

/* Streams and copies, enough to use memory without the CUDA headers (and on
 * the simulated device, where no CUDA exists). Copies and fills are
 * stream-ordered on `stream`; the copy kind is inferred from the pointers.
 *
 * Streams: the library knows the streams rmm_stream_create* made. After
 * rmm_stream_destroy, every call that names such a stream fails with
 * RMM_ERROR_INVALID_ARGUMENT ("... was destroyed by rmm_stream_destroy")
 * and CUDA is never asked about it. To tell it from a new stream for
 * certain, rmm_stream_destroy keeps the CUDA stream alive, parked (work
 * queued on it completes as after cudaStreamDestroy), so CUDA cannot give
 * its handle to another stream; rmm_stream_create reuses a parked stream of
 * the same device and flags, whose handle is then valid again. Beyond 4096
 * parked streams the oldest is destroyed for real and forgotten. A stream
 * the library did not make (cudaStreamCreate, CuPy's, PyTorch's) must be
 * valid, as in CUDA; rmm_stream_destroy destroys it in CUDA. */
rmm_status rmm_stream_create(rmm_stream_t* stream); /* a non-blocking stream */
/* A stream with flags: RMM_STREAM_SYNC_DEFAULT (it synchronizes with the
 * legacy default stream, like RMM's cuda_stream by default) or
 * RMM_STREAM_NON_BLOCKING (as rmm_stream_create). Other bits:
 * RMM_ERROR_INVALID_ARGUMENT. */
#define RMM_STREAM_SYNC_DEFAULT 0u
#define RMM_STREAM_NON_BLOCKING 1u
rmm_status rmm_stream_create_with_flags(rmm_stream_t* stream, unsigned int flags);
rmm_status rmm_stream_destroy(rmm_stream_t stream);
rmm_status rmm_stream_synchronize(rmm_stream_t stream);
rmm_status rmm_device_synchronize(void);
rmm_status rmm_memcpy(void* dst, const void* src, size_t bytes, rmm_stream_t stream);
rmm_status rmm_memset(void* ptr, int value, size_t bytes, rmm_stream_t stream);

/* Ask CUDA to migrate bytes of managed memory at ptr to device (or, with
 * RMM_PREFETCH_HOST, to host memory), in stream order on stream, as
 * rmm::prefetch does. A hint: memory that is not managed, and a device
 * without concurrent managed access, make it succeed without effect.
 * RMM_ERROR_INVALID_ARGUMENT for a device that does not exist. */
#define RMM_PREFETCH_HOST (-1)
rmm_status rmm_prefetch(const void* ptr, size_t bytes, int device, rmm_stream_t stream);

/* ------------------------------------------------------------- resources */

typedef enum rmm_resource_kind {
  /* base resources */
  RMM_RESOURCE_CUDA = 1,               /* cudaMalloc                              */
  RMM_RESOURCE_MANAGED = 2,            /* cudaMallocManaged                       */
  RMM_RESOURCE_PINNED_HOST = 3,        /* cudaHostAlloc                           */
  RMM_RESOURCE_SYSTEM = 4,             /* host memory the device can use (HMM/ATS)*/
  RMM_RESOURCE_SAM_HEADROOM = 5,       /* system memory, keeping a headroom free  */
  RMM_RESOURCE_CUDA_ASYNC = 6,         /* cudaMallocFromPoolAsync on its own pool */
  RMM_RESOURCE_CUDA_ASYNC_VIEW = 7,    /* the same on a pool it does not own      */
  RMM_RESOURCE_CUDA_ASYNC_MANAGED = 8, /* stream-ordered managed memory           */
  /* sub-allocators */
  RMM_RESOURCE_POOL = 20,
  RMM_RESOURCE_ARENA = 21,
  RMM_RESOURCE_FIXED_SIZE = 22,
  RMM_RESOURCE_BINNING = 23,
  RMM_RESOURCE_EXPANDABLE = 24, /* one reserved address range, mapped in granules (CUDA 12.5+) */
  /* adaptors */
  RMM_RESOURCE_ALIGNED = 40,
  RMM_RESOURCE_CALLBACK = 41,
  RMM_RESOURCE_FAILURE_CALLBACK = 42,
  RMM_RESOURCE_LIMITING = 43,
  RMM_RESOURCE_LOGGING = 44,
  RMM_RESOURCE_PREFETCH = 45,
  RMM_RESOURCE_STATISTICS = 46,
  RMM_RESOURCE_THREAD_SAFE = 47,
  RMM_RESOURCE_TRACKING = 48,
  /* a resource whose functions are the caller's (rmm_resource_create_external) */
  RMM_RESOURCE_EXTERNAL = 60
} rmm_resource_kind;

/* Accessibility properties. */
typedef enum rmm_property {
  RMM_PROPERTY_DEVICE_ACCESSIBLE = 1,
  RMM_PROPERTY_HOST_ACCESSIBLE = 2
} rmm_property;

/* Export handle types for RMM_RESOURCE_CUDA_ASYNC (bit set). */
typedef enum rmm_mem_handle_type {
  RMM_MEM_HANDLE_NONE = 0,
  RMM_MEM_HANDLE_POSIX_FILE_DESCRIPTOR = 1,
  RMM_MEM_HANDLE_FABRIC = 8
} rmm_mem_handle_type;

/* User callbacks.
 * allocate: return the memory, or NULL when there is none (reported as
 *   RMM_ERROR_OUT_OF_MEMORY).
 * failure:  called when an allocation ran out of memory; return nonzero to
 *   try again, zero to give up. */
typedef void* (*rmm_allocate_callback)(size_t bytes, rmm_stream_t stream, void* arg);
typedef void (*rmm_deallocate_callback)(void* ptr, size_t bytes, rmm_stream_t stream, void* arg);
typedef int (*rmm_failure_callback)(size_t bytes, void* arg);

/* Options for rmm_resource_create. Start from rmm_resource_options_init,
 * which sets struct_size and every default, then set what the kind uses.
 * struct_size lets the structure grow: fields added later go at the end, and
 * the library reads only the fields the caller's struct_size covers. A
 * struct_size smaller than this first version of the structure, or larger
 * than 4096 bytes (a field never set), is refused with
 * RMM_ERROR_INVALID_ARGUMENT before anything is read or written; so is the
 * struct_size of an rmm_statistics.
 *
 * Options a kind cannot work with are refused when the resource is made,
 * with RMM_ERROR_INVALID_ARGUMENT (RMM_ERROR_BAD_ALIGNMENT for alignments)
 * and a message naming the option. Size options take RMM_SIZE_DEFAULT for
 * the default; an explicit 0 where it would mean nothing (block_size,
 * blocks_to_preallocate, arena_size, maximum_pool_size) is refused, not read
 * as the default. */
typedef struct rmm_resource_options {
  size_t struct_size;          /* sizeof(rmm_resource_options)                  */

  rmm_resource_t upstream;     /* sub-allocators and adaptors (not callback)    */

  /* pool: initial size (RMM_SIZE_DEFAULT: half the free device memory;
   * 0: grow on first use) and maximum size (RMM_SIZE_DEFAULT: no maximum);
   * both multiples of 256.
   * cuda_async: initial_pool_size primes the pool (RMM_SIZE_DEFAULT or 0:
   * no priming). */
  size_t initial_pool_size;
  size_t maximum_pool_size;
  /* cuda_async: bytes the pool keeps when idle (RMM_SIZE_DEFAULT: all).
   * expandable: maximum_pool_size bounds the device memory it maps
   * (RMM_SIZE_DEFAULT: the device's memory; a multiple of 256 of at least
   * the device's granularity, 2 MiB on current GPUs); release_threshold is
   * the mapped size above which it gives back wholly free granules before it
   * maps more (RMM_SIZE_DEFAULT: only at the maximum; 0: whenever it grows;
   * else a multiple of 256). initial_pool_size is not used. */
  size_t release_threshold;
  /* cuda_async: rmm_mem_handle_type bits the pool can export (other bits are
   * refused). */
  unsigned int export_handle_types;
  /* cuda_async_view: the pool to allocate from (not owned; must not be NULL).
   * The library asks CUDA whether it is a pool when the view is made, and
   * refuses a handle CUDA reports as none. Like every CUDA handle the library
   * did not make, it must be valid: a forged handle is undefined behaviour in
   * CUDA (the simulated device reports it). */
  rmm_mem_pool_t pool_handle;
  /* sam_headroom: device bytes to keep free. */
  size_t headroom;

  /* arena: size of the global arena (RMM_SIZE_DEFAULT: half the free device
   * memory); dump_log_on_failure nonzero writes rmm_arena_memory_dump.log
   * when an allocation fails. */
  size_t arena_size;
  int dump_log_on_failure;

  /* fixed_size: block size (RMM_SIZE_DEFAULT: 1 MiB), rounded up to a
   * multiple of 256 bytes as RMM does (rmm_fixed_size_block_size tells the
   * result), and blocks fetched at a time (RMM_SIZE_DEFAULT: 128). */
  size_t block_size;
  size_t blocks_to_preallocate;

  /* binning: power-of-two fixed-size bins from 2^min to 2^max bytes; -1 for
   * both: no bins (add them with rmm_binning_add_bin). */
  int min_size_exponent;
  int max_size_exponent;

  /* aligned: alignment (default 256) for allocations of at least
   * alignment_threshold bytes (default 0). limiting: the alignment sizes are
   * rounded to when counted (default 256). A power of two of at most 2^56
   * bytes (no allocation could have a larger one). */
  size_t alignment;
  size_t alignment_threshold;

  /* limiting: the most bytes outstanding at once; must be set, and not 0. */
  size_t allocation_limit;

  /* logging: the CSV file to write, made with its folders (NULL: the
   * RMM_LOG_FILE environment variable); auto_flush nonzero flushes after
   * every row. */
  const char* log_file;
  int auto_flush;

  /* tracking: nonzero records where each allocation was made. */
  int capture_stacks;

  /* callback: the functions and their arguments. */
  rmm_allocate_callback allocate_callback;
  rmm_deallocate_callback deallocate_callback;
  void* allocate_arg;
  void* deallocate_arg;

  /* failure_callback: the function and its argument. */
  rmm_failure_callback failure_callback;
  void* failure_arg;
} rmm_resource_options;

/* Fill *options with every default and set struct_size. Call it as
 * rmm_resource_options_init(&options): the macro passes the size of the
 * structure your program was compiled with, so a newer library never writes
 * past an older program's structure (it fills what both know, zeroes the
 * rest, and sets struct_size to the smaller of the two sizes). */
rmm_status rmm_resource_options_init_sized(rmm_resource_options* options, size_t struct_size);
#define rmm_resource_options_init(options) \
  rmm_resource_options_init_sized((options), sizeof *(options))

/* Make a resource of `kind` on the current device. options may be NULL for
 * kinds that need none (the base resources other than sam_headroom and
 * cuda_async_view). *out receives a new reference. */
rmm_status rmm_resource_create(rmm_resource_kind kind, const rmm_resource_options* options,
                               rmm_resource_t* out);

/* Take another reference to a resource. */
rmm_status rmm_resource_retain(rmm_resource_t mr);
/* Give back one reference. When the last one goes, the resource is closed
 * (a pool returns its memory upstream, a log is flushed and closed) and then
 * lets go of its upstream. Releasing more often than retaining is answered
 * with RMM_ERROR_INVALID_HANDLE. Calls other threads are making on the
 * handle as its last reference goes finish, or fail with
 * RMM_ERROR_INVALID_HANDLE; the memory a sub-allocator or cuda_async
 * resource holds goes back when it closes, blocks still allocated from it
 * included (do not use them after the release). */
rmm_status rmm_resource_release(rmm_resource_t mr);

/* Allocate `bytes` aligned to `alignment` (a power of two; 256 is the usual)
 * in stream order on `stream`. bytes == 0 gives *ptr = NULL and success. */
rmm_status rmm_allocate(rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment,
                        void** ptr);
/* Give back memory in stream order; bytes and alignment as allocated.
 * ptr == NULL is a no-op. Deallocating memory the resource did not hand out,
 * or twice, is answered with RMM_ERROR_INVALID_POINTER where the resource
 * can know (base resources and sub-allocators can), and a size other than
 * was allocated with RMM_ERROR_INVALID_ARGUMENT where it can (base resources,
 * pool and arena; fixed_size and binning bins accept any size up to the
 * block, as RMM does); nothing is freed then. */
rmm_status rmm_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes,
                          size_t alignment);
/* The same without a stream: memory is ready for any use on return. */
rmm_status rmm_allocate_sync(rmm_resource_t mr, size_t bytes, size_t alignment, void** ptr);
rmm_status rmm_deallocate_sync(rmm_resource_t mr, void* ptr, size_t bytes, size_t alignment);

/* Queries. */
rmm_status rmm_resource_has_property(rmm_resource_t mr, rmm_property property, int* has);
/* *equal is nonzero when memory from one can be deallocated by the other. */
rmm_status rmm_resource_is_equal(rmm_resource_t a, rmm_resource_t b, int* equal);
rmm_status rmm_resource_kind_of(rmm_resource_t mr, rmm_resource_kind* kind);
/* The kind's name as RMM spells the class, e.g. "pool_memory_resource";
 * a static string. */
rmm_status rmm_resource_name(rmm_resource_t mr, const char** name);
/* The device that was current when the resource was made. */
rmm_status rmm_resource_device(rmm_resource_t mr, int* device);
/* A new reference to an adaptor's or sub-allocator's upstream;
 * RMM_ERROR_INVALID_ARGUMENT for resources without one. */
rmm_status rmm_resource_upstream(rmm_resource_t mr, rmm_resource_t* upstream);

/* ------------------------------------------------ per-device resources */

/* Each device has a current resource; until one is set it is a cuda
 * resource for that device, made on first use. Getters give a new
 * reference. Setters take a reference of their own to mr and, when
 * `previous` is not NULL, hand the previous resource back through it as a
 * new reference. A resource belongs to the device that was current when it
 * was made (an adaptor to its upstream's): setting it for another device is
 * refused with RMM_ERROR_WRONG_DEVICE. Pinned host and system memory, and
 * callback resources, serve any device. All are safe from many threads. */
rmm_status rmm_get_current_device_resource(rmm_resource_t* out);
rmm_status rmm_set_current_device_resource(rmm_resource_t mr, rmm_resource_t* previous);
rmm_status rmm_reset_current_device_resource(rmm_resource_t* previous);
rmm_status rmm_get_per_device_resource(int device, rmm_resource_t* out);
rmm_status rmm_set_per_device_resource(int device, rmm_resource_t mr, rmm_resource_t* previous);
rmm_status rmm_reset_per_device_resource(int device, rmm_resource_t* previous);

/* ------------------------------------------------ calls for bindings */
/* Shapes of the calls above for language bindings that pay for every
 * argument and every out-parameter (Python's ctypes converts each one on
 * every call): one allocation is one call of three arguments. */

/* rmm_allocate(mr, stream, bytes, RMM_DEFAULT_ALIGNMENT, &ptr) returning
 * ptr: NULL when bytes is 0 and on failure; rmm_last_error_status() then
 * says which (RMM_SUCCESS for bytes == 0), as rmm_last_error_message() says
 * why. */
void* rmm_allocate_direct(rmm_resource_t mr, rmm_stream_t stream, size_t bytes);
/* rmm_deallocate(mr, stream, ptr, bytes, RMM_DEFAULT_ALIGNMENT). */
rmm_status rmm_deallocate_direct(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes);
/* The status of the calling thread's last call among those that return
 * none: rmm_allocate_direct and the framework allocators (rmm_cupy_malloc,
 * rmm_torch_allocate). */
rmm_status rmm_last_error_status(void);

/* A nonzero number naming what rmm_get_current_device_resource() would give
 * the calling thread: it is made of the thread's current device and a
 * generation that every set and reset of any device's resource advances,
 * from any language: the device in the low 16 bits, the generation above.
 * While it is unchanged the current resource is the same, so a binding
 * that keeps that resource compares tokens on each use instead of asking
 * for the resource, and may drop what it kept for older generations. 0
 * when the current device cannot be read (ask
 * rmm_get_current_device_resource, which says why). */
uint64_t rmm_current_resource_token(void);

/* ------------------------------------------------ resource-specific calls */
/* Each answers RMM_ERROR_INVALID_ARGUMENT when mr is of another kind. */

/* pool, and expandable (for which the pool size is the device memory
 * mapped, and release gives back to the device every wholly free granule,
 * live memory staying where it is) */
rmm_status rmm_pool_size(rmm_resource_t mr, size_t* bytes);       /* bytes taken from upstream */
/* The most bytes taken from upstream at once (the pool gives chunks back
 * before it grows when its free memory is in pieces: rmm_pool_size falls). */
rmm_status rmm_pool_peak_size(rmm_resource_t mr, size_t* bytes);
/* Bytes handed out and not given back, each rounded up to 256: the same
 * number Go's Pool.UsedBytes and Python's used_bytes give. Blocks the
 * per-thread caches keep are not in use. */
rmm_status rmm_pool_used_bytes(rmm_resource_t mr, size_t* bytes);
/* Give back to the upstream every upstream chunk that is wholly free. */
rmm_status rmm_pool_release(rmm_resource_t mr);

/* fixed_size */
rmm_status rmm_fixed_size_block_size(rmm_resource_t mr, size_t* bytes);

/* binning: add a bin for allocations up to allocation_size bytes, served by
 * bin (a new fixed-size resource over the upstream when bin is NULL). A bin
 * that is mr, or is built over mr (mr is its upstream, or its upstream's, or
 * a bin of a binning resource below it), is refused with
 * RMM_ERROR_INVALID_ARGUMENT: mr would be its own descendant. Not safe while
 * other threads allocate from mr. */
rmm_status rmm_binning_add_bin(rmm_resource_t mr, size_t allocation_size, rmm_resource_t bin);

/* cuda_async, cuda_async_view, cuda_async_managed: the CUDA pool. */
rmm_status rmm_cuda_async_pool_handle(rmm_resource_t mr, rmm_mem_pool_t* pool);

/* limiting */
rmm_status rmm_limiting_allocated_bytes(rmm_resource_t mr, size_t* bytes);
rmm_status rmm_limiting_allocation_limit(rmm_resource_t mr, size_t* bytes);

/* logging */
rmm_status rmm_logging_flush(rmm_resource_t mr);
/* Copy the log file's name into buf (NUL-terminated, truncated to buf_size);
 * *needed (if not NULL) receives the full length plus one. */
rmm_status rmm_logging_file_name(rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed);

/* statistics: current value, peak and total of bytes and of allocations. */
typedef struct rmm_counter {
  int64_t value;
  int64_t peak;
  int64_t total;
} rmm_counter;
typedef struct rmm_statistics {
  size_t struct_size; /* sizeof(rmm_statistics), set by the caller (checked) */
  rmm_counter bytes;
  rmm_counter count;
} rmm_statistics;
/* The counters of the innermost level. */
rmm_status rmm_statistics_get(rmm_resource_t mr, rmm_statistics* stats);
/* Start a new level of counters at zero; *top (if not NULL) receives the
 * level that was innermost. */
rmm_status rmm_statistics_push(rmm_resource_t mr, rmm_statistics* top);
/* End the innermost level, fold it into its parent and return it;
 * RMM_ERROR_OUT_OF_RANGE when only one level is left. */
rmm_status rmm_statistics_pop(rmm_resource_t mr, rmm_statistics* popped);

/* tracking */
rmm_status rmm_tracking_allocated_bytes(rmm_resource_t mr, size_t* bytes);
rmm_status rmm_tracking_outstanding_count(rmm_resource_t mr, size_t* count);
/* A readable report of the outstanding allocations, as for
 * rmm_logging_file_name. */
rmm_status rmm_tracking_report(rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed);
/* The outstanding allocations, by address: the first min(capacity, all)
 * pointers and requested sizes go to ptrs and sizes (which may be NULL when
 * capacity is 0); *count receives how many there are in all. */
rmm_status rmm_tracking_outstanding(rmm_resource_t mr, void** ptrs, size_t* sizes, size_t capacity, size_t* count);

/* ------------------------------------------------ external resources */
/* A resource written outside rmmgo (a C++ class satisfying CCCL's resource
 * concept, a C allocator) registered as a handle: it can then be an upstream,
 * a per-device resource, and is seen by C, C++, Python and Go like any other.
 * Unlike RMM_RESOURCE_CALLBACK, the functions get the alignment, report a
 * status and a message, decide equality, and are told when the last
 * reference goes.
 *
 * The functions may be called from any thread, concurrently, and must not
 * throw or longjmp. allocate and allocate_sync write the memory to *ptr and
 * return RMM_SUCCESS, or return a failure status (RMM_ERROR_OUT_OF_MEMORY
 * when there was no room, RMM_ERROR_BAD_ALLOC otherwise, or any other
 * status) after writing a NUL-terminated message of at most message_size
 * bytes into message (it may leave it empty). Zero-byte requests and
 * zero-byte frees reach them, as RMM passes them on (a binning resource sends
 * them to its smallest bin when that is an external resource); a NULL free of
 * more than 0 bytes does not. The address returned is passed on as it is (as
 * RMM passes a resource's addresses on), except NULL for a request of more
 * than 0 bytes, which is out of memory; a pool, arena or fixed_size resource
 * over it gives back a chunk not aligned to 256 bytes and reports
 * RMM_ERROR_BAD_ALLOC. */
/* rmm_status, spelled so that tools listing the header's functions do not
 * take the function-pointer types for functions. */
typedef rmm_status rmmgo_status_t;
typedef rmmgo_status_t (*rmm_external_allocate_fn)(void* self, size_t bytes, size_t alignment, rmm_stream_t stream,
                                               void** ptr, char* message, size_t message_size);
typedef rmmgo_status_t (*rmm_external_deallocate_fn)(void* self, void* ptr, size_t bytes, size_t alignment,
                                                 rmm_stream_t stream, char* message, size_t message_size);
typedef rmmgo_status_t (*rmm_external_allocate_sync_fn)(void* self, size_t bytes, size_t alignment, void** ptr,
                                                    char* message, size_t message_size);
typedef rmmgo_status_t (*rmm_external_deallocate_sync_fn)(void* self, void* ptr, size_t bytes, size_t alignment,
                                                      char* message, size_t message_size);

typedef struct rmm_external_resource {
  size_t struct_size;  /* sizeof(rmm_external_resource) (checked)              */
  void* self;          /* passed to every function                            */
  rmm_external_allocate_fn allocate;         /* required                       */
  rmm_external_deallocate_fn deallocate;     /* required                       */
  /* NULL: allocate on the default stream, then synchronize it (and
   * deallocate on the default stream). */
  rmm_external_allocate_sync_fn allocate_sync;
  rmm_external_deallocate_sync_fn deallocate_sync;
  /* Whether memory of one can be given back to the other, asked only of two
   * external resources with the same is_equal function (their selves may
   * be equal); NULL: equal only when self is the same pointer. */
  int (*is_equal)(void* self, void* other_self);
  /* Called once, when the last reference to the handle goes (NULL: none). */
  void (*release)(void* self);
  /* rmm_property bits: RMM_PROPERTY_DEVICE_ACCESSIBLE and/or
   * RMM_PROPERTY_HOST_ACCESSIBLE. */
  unsigned int properties;
  /* The device the memory belongs to (it may then be that device's
   * resource only), or -1: any device. */
  int device;
} rmm_external_resource;

/* Registers *ops as a new resource of kind RMM_RESOURCE_EXTERNAL; *out
 * receives its first reference. ops is copied; self must stay valid until
 * release is called. */
rmm_status rmm_resource_create_external(const rmm_external_resource* ops, rmm_resource_t* out);
/* The self and is_equal function of an external resource (either out
 * pointer may be NULL): lets a binding recognise its own objects.
 * RMM_ERROR_INVALID_ARGUMENT for resources of other kinds. */
rmm_status rmm_resource_external_self(rmm_resource_t mr, void** self, void** is_equal_fn);

/* -------------------------------------------------- framework allocators */
/* Entry points shaped for other allocators' plug-in interfaces. They serve
 * from the given device's current resource with 256-byte alignment. They
 * cannot return a status; on failure they return NULL (or do nothing) and set
 * the thread's message. */

/* CuPy's CFunctionAllocator: param is an rmm_resource_t to use instead of the
 * per-device resource, or NULL. rmm_cupy_free needs no size: the library
 * remembers it. */
void* rmm_cupy_malloc(void* param, size_t bytes, int device);
void rmm_cupy_free(void* param, void* ptr, int device);

/* PyTorch's CUDAPluggableAllocator shape. PyTorch ignores NULL from an
 * allocator, so use these through librmmgo_torch.so, whose C++ wrappers
 * throw on failure. */
void* rmm_torch_allocate(size_t bytes, int device, void* stream);
void rmm_torch_deallocate(void* ptr, size_t bytes, int device, void* stream);

/* ------------------------------------- out of memory: why, and what to do */
/* docs/out-of-memory.md. Every failed allocation's message (rmm_last_error_message)
 * ends with a report: the request, the resource chain, live, reserved and
 * free bytes, the largest free block (per stream), what thread caches and
 * magazines hold, the device's free memory and a one-line reading. */

/* The calling thread's last out-of-memory report as JSON (keys: bytes,
 * alignment, stream, chain, resources [{kind, live, reserved, maximum, free,
 * free_blocks, largest_free, streams, magazine_held, cache_held, max_request,
 * note}], device, device_free, device_total, reading, message); "" when the
 * thread's last failed allocation was not out of memory. Valid until the
 * thread's next failed allocation. */
const char* rmm_last_out_of_memory_report(void);

/* Writes a snapshot of mr's memory (every block of its first block-keeping
 * resource: address, size, live or free, stream, where cached; origins from
 * a tracking adaptor with stacks; the trace of a pressure resource with
 * history) to path: JSON when path ends in ".json", else the pickle that
 * torch.cuda.memory._dump_snapshot writes and torch/cuda/_memory_viz.py
 * reads. */
rmm_status rmm_memory_snapshot(rmm_resource_t mr, const char* path);
/* The same snapshot as JSON in a buffer the caller frees with
 * rmm_string_free. */
rmm_status rmm_memory_snapshot_json(rmm_resource_t mr, char** json);
void rmm_string_free(char* s);

/* Pressure resource: an adaptor over upstream that calls on_cross when its
 * live bytes reach a threshold (up = 1) or fall below it again (up = 0), and
 * on_failure when upstream runs out of memory, with the number of retries so
 * far (0 first): nonzero retries (after spilling, say). Either callback may be
 * NULL; callbacks run on the thread whose call crossed, one at a time, and
 * may allocate through the resource. history > 0 keeps that many events for
 * snapshots' traces. Release it with rmm_resource_release. */
typedef void (*rmm_pressure_callback)(size_t threshold, size_t live_bytes, int up, void* arg);
typedef int (*rmm_pressure_failure_callback)(size_t bytes, int retry, void* arg);
rmm_status rmm_pressure_resource_create(rmm_resource_t upstream, const size_t* thresholds, size_t count,
                                        rmm_pressure_callback on_cross, rmm_pressure_failure_callback on_failure,
                                        void* arg, size_t history, rmm_resource_t* out);
/* Live bytes allocated through a pressure resource. */
rmm_status rmm_pressure_live_bytes(rmm_resource_t mr, size_t* bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RMMGO_H */
