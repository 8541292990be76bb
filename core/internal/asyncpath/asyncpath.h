/*
 * asyncpath.h -- the C path of the pool-based resources (cuda_async,
 * cuda_async_managed, cuda_async_view): their block records, their
 * resources' C state, and an allocation and a free that run entirely in C.
 * doc.go says why and how; asyncpath.c implements it.
 *
 * Declarations only: the Go files of the package include this header in
 * their preambles.
 */
#ifndef RMMGO_ASYNCPATH_H
#define RMMGO_ASYNCPATH_H

#include <stddef.h>
#include <stdint.h>

/* What a call did (Result in Go). */
enum {
  RMMGO_AP_OK = 0,
  RMMGO_AP_STALE = 1,          /* the resource is closed (or the state is another's now) */
  RMMGO_AP_BUSY = 2,           /* not served here (no thread record; a call inside a call) */
  RMMGO_AP_WRONG_DEVICE = 3,   /* detail: the current device */
  RMMGO_AP_CUDA = 4,           /* a runtime call failed; detail: its error code */
  RMMGO_AP_NO_HOST_MEMORY = 5, /* the table could not grow */
  RMMGO_AP_NOT_RECORDED = 6,   /* a free of a pointer the table does not hold */
  RMMGO_AP_FOREIGN = 7,        /* a free of another pool's block */
  RMMGO_AP_SIZE = 8            /* a free with another size than was allocated */
};

/* An allocation's or a free's outcome, for Go (a struct returned by value:
 * no Go pointer crosses, nothing escapes). */
typedef struct {
  uintptr_t ptr;  /* the block (allocate) */
  int64_t detail; /* see the codes */
  int rc;
} rmmgo_ap_result;

/* A record taken out of the table, or why not (rc). */
typedef struct {
  size_t size;    /* the size it was allocated with */
  uintptr_t pool; /* its pool */
  int owned;      /* the pool's owner handed it out */
  int rc;
} rmmgo_ap_entry;

/* A resource's state. The runtime functions are the CUDA runtime's own
 * (cudaGetDevice, cudaMallocFromPoolAsync, cudaFreeAsync, cudaGetLastError),
 * or all 0: then the state calls the Go runtime behind the cgo.Handle
 * go_runtime. check_device 0 skips the device check (one device: always
 * current). Returns the state (0: no host memory) and its generation. */
uintptr_t rmmgo_ap_new(uintptr_t get_device, uintptr_t malloc_from_pool, uintptr_t free_async,
                       uintptr_t get_last_error, uintptr_t go_runtime, uintptr_t pool, int device, int owned,
                       int check_device, uint64_t* gen);
/* Closes the state: later calls get RMMGO_AP_STALE; returns once no thread
 * is inside a call on it. 1 when this call closed it, 0 when it was closed
 * already. */
int rmmgo_ap_close(uintptr_t state, uint64_t gen);
/* Gives a closed state back for reuse (its generation moves on). */
void rmmgo_ap_release(uintptr_t state, uint64_t gen);

/* The two calls, for Go. */
rmmgo_ap_result rmmgo_ap_allocate(uintptr_t state, uint64_t gen, size_t bytes, uintptr_t stream);
rmmgo_ap_result rmmgo_ap_deallocate(uintptr_t state, uint64_t gen, uintptr_t stream, uintptr_t ptr, size_t bytes);

/* The same calls for C callers (the C ABI), through the addresses
 * rmmgo_ap_c_funcs gives: they return the RMMGO_AP_* code; allocate writes
 * the block to *out. */
typedef int (*rmmgo_ap_c_allocate_fn)(uintptr_t state, uint64_t gen, size_t bytes, uintptr_t stream, uintptr_t* out);
typedef int (*rmmgo_ap_c_deallocate_fn)(uintptr_t state, uint64_t gen, uintptr_t stream, uintptr_t ptr,
                                        size_t bytes);
uintptr_t rmmgo_ap_c_allocate_addr(void);
uintptr_t rmmgo_ap_c_deallocate_addr(void);

/* The table of blocks, for the Go half (its slow path, Close, tests). */
int rmmgo_ap_record(uintptr_t ptr, size_t size, uintptr_t pool, int owned); /* 0: no host memory */
rmmgo_ap_entry rmmgo_ap_take(uintptr_t ptr, size_t size, uintptr_t pool);
/* Removes every owned record of pool and returns them: a malloc'd array of
 * *n pointers (NULL when none). *incomplete is 1 when the array could not
 * grow: records not taken stay. */
uintptr_t* rmmgo_ap_take_owned(uintptr_t pool, size_t* n, int* incomplete);
int rmmgo_ap_has(uintptr_t ptr);
size_t rmmgo_ap_count(void);
/* The number of records, and (when bytes is not NULL) their sizes summed. */
size_t rmmgo_ap_totals(uint64_t* bytes);

#endif /* RMMGO_ASYNCPATH_H */
