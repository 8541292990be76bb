/*
 * same_bytes_test.c -- never the same bytes twice (issue 24): frees the
 * library must refuse because accepting them lets it hand out memory that
 * someone still holds.
 *
 *   - interior pointers (offsets 1..255 and multiples of 256) of every
 *     sub-allocator, and of every adaptor over one: refused, and the next
 *     allocation does not overlap the block;
 *   - a block handed out by a cached handle and freed through an adaptor
 *     over it, then through the handle (and the other way round): the
 *     second free is refused, with the thread cache on and off alike;
 *   - size 0 for a live pointer, sizes of another class, and alignments
 *     that are no power of two: refused on every kind, the block untouched;
 *     a zero-byte allocation from a statistics adaptor counts as RMM counts
 *     it, and its free (NULL, 0) uncounts it;
 *   - the chunk a sub-allocator holds, freed through its upstream: refused;
 *   - a pool that grew until its upstream ran out, with every block freed,
 *     serves a large request (it gives back its free chunks and retries).
 *
 * make test-c runs it with the thread cache on and off.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "test_util.h"

static rmm_resource_t cuda;

static bool cache_on(void) {
  const char* v = getenv("RMMGO_THREAD_CACHE");
  return !(v != NULL && (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "false") == 0 ||
                         strcasecmp(v, "no") == 0));
}

/* A refused free: the block stays where it was. */
static bool refused(rmm_status s) {
  return s == RMM_ERROR_INVALID_POINTER || s == RMM_ERROR_INVALID_ARGUMENT || s == RMM_ERROR_BAD_ALIGNMENT;
}

#define EXPECT_REFUSED(call)                                                                                    \
  do {                                                                                                          \
    rmm_status got_ = (call);                                                                                   \
    if (refused(got_)) {                                                                                        \
      test_passed_count++;                                                                                      \
    } else {                                                                                                    \
      test_failed_count++;                                                                                      \
      fprintf(stderr, "FAIL %s:%d: %s\n  got %s, want a refusal (%s)\n", __FILE__, __LINE__, #call,            \
              rmm_status_string(got_), case_name);                                                              \
    }                                                                                                           \
  } while (0)

static const char* case_name = "";

static void* never_alloc(size_t bytes, rmm_stream_t stream, void* arg) {
  (void)bytes;
  (void)stream;
  (void)arg;
  return NULL;
}

static int no_retry(size_t bytes, void* arg) {
  (void)bytes;
  (void)arg;
  return 0;
}

/* ------------------------------------------------------------- chains */

/* What a case is made of: a sub-allocator (or base resource) and an
 * adaptor over it (0: none). */
typedef struct {
  rmm_resource_kind sub;
  rmm_resource_kind adaptor;
} chain_kind;

typedef struct {
  rmm_resource_t under; /* the sub-allocator or base resource */
  rmm_resource_t top;   /* the handle the test uses (under, or the adaptor over it) */
  char name[96];
} chain;

static const char* kind_name(rmm_resource_kind k) {
  switch (k) {
    case RMM_RESOURCE_CUDA: return "cuda";
    case RMM_RESOURCE_MANAGED: return "managed";
    case RMM_RESOURCE_PINNED_HOST: return "pinned_host";
    case RMM_RESOURCE_SYSTEM: return "system";
    case RMM_RESOURCE_SAM_HEADROOM: return "sam_headroom";
    case RMM_RESOURCE_CUDA_ASYNC: return "cuda_async";
    case RMM_RESOURCE_CUDA_ASYNC_VIEW: return "cuda_async_view";
    case RMM_RESOURCE_CUDA_ASYNC_MANAGED: return "cuda_async_managed";
    case RMM_RESOURCE_POOL: return "pool";
    case RMM_RESOURCE_ARENA: return "arena";
    case RMM_RESOURCE_FIXED_SIZE: return "fixed_size";
    case RMM_RESOURCE_BINNING: return "binning";
    case RMM_RESOURCE_EXPANDABLE: return "expandable";
    case RMM_RESOURCE_ALIGNED: return "aligned";
    case RMM_RESOURCE_CALLBACK: return "callback";
    case RMM_RESOURCE_FAILURE_CALLBACK: return "failure_callback";
    case RMM_RESOURCE_LIMITING: return "limiting";
    case RMM_RESOURCE_LOGGING: return "logging";
    case RMM_RESOURCE_PREFETCH: return "prefetch";
    case RMM_RESOURCE_STATISTICS: return "statistics";
    case RMM_RESOURCE_THREAD_SAFE: return "thread_safe";
    case RMM_RESOURCE_TRACKING: return "tracking";
    default: break;
  }
  return "?";
}

static rmm_resource_t view_owners[64];
static int nview_owners;

/* The resource of kind k over up (NULL: none needed), or NULL when this
 * device does not support it (a note says so). */
static rmm_resource_t make_kind(rmm_resource_kind k, rmm_resource_t up) {
  rmm_resource_options o;
  rmm_resource_t mr = NULL;
  rmm_mem_pool_t pool = NULL;
  rmm_resource_t owner = NULL;
  rmm_resource_options_init(&o);
  o.upstream = up;
  switch (k) {
    case RMM_RESOURCE_POOL: o.initial_pool_size = 0; break;
    case RMM_RESOURCE_ARENA: o.arena_size = (size_t)64 << 20; break;
    case RMM_RESOURCE_FIXED_SIZE: o.block_size = (size_t)64 << 10; o.blocks_to_preallocate = 16; break;
    case RMM_RESOURCE_BINNING: o.min_size_exponent = 8; o.max_size_exponent = 16; break;
    case RMM_RESOURCE_LIMITING: o.allocation_limit = (size_t)512 << 20; break;
    case RMM_RESOURCE_LOGGING: o.log_file = "same_bytes_test.csv"; break;
    case RMM_RESOURCE_SAM_HEADROOM: o.headroom = (size_t)1 << 20; break;
    case RMM_RESOURCE_FAILURE_CALLBACK: o.failure_callback = no_retry; break;
    case RMM_RESOURCE_CALLBACK: o.allocate_callback = never_alloc; break;
    case RMM_RESOURCE_CUDA_ASYNC_VIEW:
      /* A view of a cuda_async resource's pool. */
      if (rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC, NULL, &owner) != RMM_SUCCESS) {
        printf("note: %s is not supported here (%s): skipped\n", kind_name(k), rmm_last_error_message());
        return NULL;
      }
      if (rmm_cuda_async_pool_handle(owner, &pool) != RMM_SUCCESS) {
        rmm_resource_release(owner);
        return NULL;
      }
      o.pool_handle = pool;
      break;
    default: break;
  }
  rmm_status s = rmm_resource_create(k, &o, &mr);
  if (owner != NULL) {
    /* A view does not keep its pool's owner: the owners live till teardown. */
    if (s == RMM_SUCCESS && nview_owners < (int)(sizeof view_owners / sizeof view_owners[0])) {
      view_owners[nview_owners++] = owner;
    } else {
      rmm_resource_release(owner);
    }
  }
  if (s == RMM_ERROR_NOT_SUPPORTED) {
    printf("note: %s is not supported here (%s): skipped\n", kind_name(k), rmm_last_error_message());
    return NULL;
  }
  if (s != RMM_SUCCESS) {
    test_failed_count++;
    fprintf(stderr, "FAIL: creating %s: %s: %s\n", kind_name(k), rmm_status_string(s), rmm_last_error_message());
    return NULL;
  }
  return mr;
}

static bool is_base(rmm_resource_kind k) { return k < RMM_RESOURCE_POOL; }

static bool chain_make(chain* c, chain_kind ck) {
  memset(c, 0, sizeof *c);
  c->under = make_kind(ck.sub, is_base(ck.sub) || ck.sub == RMM_RESOURCE_EXPANDABLE ? NULL : cuda);
  if (c->under == NULL) {
    return false;
  }
  c->top = c->under;
  if (ck.adaptor != 0) {
    c->top = make_kind(ck.adaptor, c->under);
    if (c->top == NULL) {
      rmm_resource_release(c->under);
      return false;
    }
  }
  snprintf(c->name, sizeof c->name, "%s%s%s", ck.adaptor != 0 ? kind_name(ck.adaptor) : "",
           ck.adaptor != 0 ? " over " : "", kind_name(ck.sub));
  case_name = c->name;
  return true;
}

static void chain_release(chain* c) {
  if (c->top != c->under) {
    EXPECT_OK(rmm_resource_release(c->top));
  }
  EXPECT_OK(rmm_resource_release(c->under));
  case_name = "";
}

static const rmm_resource_kind sub_kinds[] = {RMM_RESOURCE_POOL, RMM_RESOURCE_EXPANDABLE, RMM_RESOURCE_ARENA,
                                              RMM_RESOURCE_FIXED_SIZE, RMM_RESOURCE_BINNING};
static const rmm_resource_kind base_kinds[] = {
    RMM_RESOURCE_CUDA,         RMM_RESOURCE_MANAGED,         RMM_RESOURCE_PINNED_HOST,
    RMM_RESOURCE_SAM_HEADROOM, RMM_RESOURCE_CUDA_ASYNC,      RMM_RESOURCE_CUDA_ASYNC_VIEW,
    RMM_RESOURCE_CUDA_ASYNC_MANAGED};
/* 0: no adaptor. */
static const rmm_resource_kind adaptor_kinds[] = {
    0, RMM_RESOURCE_STATISTICS, RMM_RESOURCE_LIMITING, RMM_RESOURCE_TRACKING, RMM_RESOURCE_LOGGING,
    RMM_RESOURCE_THREAD_SAFE, RMM_RESOURCE_PREFETCH, RMM_RESOURCE_ALIGNED, RMM_RESOURCE_FAILURE_CALLBACK};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y + bn && y < x + an;
}

/* ------------------------------------------------------ interior pointers */

/* Interior pointers of a live block of `bytes`: every offset 1..255, and a
 * few multiples of 256, with the block's size and with the rest of it. All
 * refused; the next allocations do not overlap the block, which is then
 * freed once. */
static void check_interior(rmm_resource_t mr, size_t bytes) {
  void *p = NULL, *q = NULL, *r = NULL;
  if (rmm_allocate(mr, NULL, bytes, 256, &p) != RMM_SUCCESS) {
    test_failed_count++;
    fprintf(stderr, "FAIL: %s: allocating %zu bytes: %s\n", case_name, bytes, rmm_last_error_message());
    return;
  }
  for (size_t off = 1; off < 256; off++) {
    EXPECT_REFUSED(rmm_deallocate(mr, NULL, (char*)p + off, bytes, 256));
    EXPECT_REFUSED(rmm_deallocate(mr, NULL, (char*)p + off, bytes - off, 256));
  }
  for (size_t off = 256; off < bytes && off <= 1024; off += 256) {
    EXPECT_REFUSED(rmm_deallocate(mr, NULL, (char*)p + off, bytes - off, 256));
  }
  EXPECT_REFUSED(rmm_deallocate_sync(mr, (char*)p + 1, bytes, 256));
  EXPECT_OK(rmm_allocate(mr, NULL, bytes, 256, &q));
  EXPECT_OK(rmm_allocate(mr, NULL, 256, 256, &r));
  EXPECT((uintptr_t)q % 256 == 0 && (uintptr_t)r % 256 == 0);
  EXPECT(!overlaps(p, bytes, q, bytes) && !overlaps(p, bytes, r, 256));
  EXPECT_OK(rmm_deallocate(mr, NULL, r, 256, 256));
  EXPECT_OK(rmm_deallocate(mr, NULL, q, bytes, 256));
  EXPECT_OK(rmm_deallocate(mr, NULL, p, bytes, 256));
  EXPECT_REFUSED(rmm_deallocate(mr, NULL, p, bytes, 256));
}

static void test_interior_pointers(void) {
  for (size_t i = 0; i < COUNT(sub_kinds); i++) {
    for (size_t j = 0; j < COUNT(adaptor_kinds); j++) {
      chain c;
      if (!chain_make(&c, (chain_kind){sub_kinds[i], adaptor_kinds[j]})) {
        continue;
      }
      check_interior(c.top, 1000);
      check_interior(c.top, 5000);
      if (sub_kinds[i] == RMM_RESOURCE_ARENA || sub_kinds[i] == RMM_RESOURCE_POOL ||
          sub_kinds[i] == RMM_RESOURCE_EXPANDABLE) {
        check_interior(c.top, (size_t)300 << 10); /* the arena's blocks above 256 KiB */
      }
      chain_release(&c);
    }
  }
}

/* ------------------------------------------- sizes and alignments of frees */

/* Frees of a live block of `bytes` with size 0, with a size of another
 * class (larger, and smaller unless blocks carry no size: fixed_size and a
 * binning bin take any size up to the block, as in RMM) and with
 * alignments that are no power of two: all refused, nothing freed. */
static void check_sizes(rmm_resource_t mr, size_t bytes, bool any_smaller) {
  void *p = NULL, *q = NULL;
  if (rmm_allocate(mr, NULL, bytes, 256, &p) != RMM_SUCCESS) {
    test_failed_count++;
    fprintf(stderr, "FAIL: %s: allocating %zu bytes: %s\n", case_name, bytes, rmm_last_error_message());
    return;
  }
  EXPECT_OK(rmm_memset(p, 0x5a, bytes, NULL));
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, 0, 256), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_STATUS(rmm_deallocate_sync(mr, p, 0, 256), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_REFUSED(rmm_deallocate(mr, NULL, p, bytes * 2 + ((size_t)1 << 20), 256));
  if (!any_smaller) {
    EXPECT_REFUSED(rmm_deallocate(mr, NULL, p, 1, 256));
  }
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, bytes, 3), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_deallocate(mr, NULL, p, bytes, 0), RMM_ERROR_BAD_ALIGNMENT);
  EXPECT_STATUS(rmm_deallocate_sync(mr, p, bytes, 48), RMM_ERROR_BAD_ALIGNMENT);
  /* Still live and its own: the next allocation is elsewhere. */
  EXPECT_OK(rmm_allocate(mr, NULL, bytes, 256, &q));
  EXPECT(q != NULL && !overlaps(p, bytes, q, bytes));
  EXPECT_OK(rmm_deallocate(mr, NULL, q, bytes, 256));
  EXPECT_OK(rmm_deallocate(mr, NULL, p, bytes, 256));
  EXPECT_REFUSED(rmm_deallocate(mr, NULL, p, bytes, 256));
}

static void test_sizes_and_alignments(void) {
  for (size_t i = 0; i < COUNT(sub_kinds) + COUNT(base_kinds); i++) {
    rmm_resource_kind k = i < COUNT(sub_kinds) ? sub_kinds[i] : base_kinds[i - COUNT(sub_kinds)];
    for (size_t j = 0; j < COUNT(adaptor_kinds); j++) {
      chain c;
      if (!chain_make(&c, (chain_kind){k, adaptor_kinds[j]})) {
        continue;
      }
      bool any_smaller = k == RMM_RESOURCE_FIXED_SIZE || k == RMM_RESOURCE_BINNING;
      check_sizes(c.top, 1000, any_smaller);
      check_sizes(c.top, 40000, any_smaller);
      chain_release(&c);
    }
  }
}

/* A zero-byte allocation from a statistics adaptor counts one allocation
 * of zero bytes, as RMM's statistics_resource_adaptor does; freeing it
 * (NULL, 0) uncounts it. A free of a live block with size 0 is refused and
 * leaves the counters alone, so that the block's own free still works. */
static void test_statistics_zero_bytes(void) {
  for (size_t i = 0; i < COUNT(sub_kinds) + 1; i++) {
    rmm_resource_kind k = i < COUNT(sub_kinds) ? sub_kinds[i] : RMM_RESOURCE_CUDA;
    chain c;
    rmm_statistics st;
    void* p = &c;
    if (!chain_make(&c, (chain_kind){k, RMM_RESOURCE_STATISTICS})) {
      continue;
    }
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    EXPECT_OK(rmm_allocate(c.top, NULL, 0, 256, &p));
    EXPECT(p == NULL);
    EXPECT_OK(rmm_statistics_get(c.top, &st));
    EXPECT(st.count.value == 1 && st.count.total == 1 && st.bytes.value == 0);
    EXPECT_OK(rmm_deallocate(c.top, NULL, NULL, 0, 256));
    EXPECT_OK(rmm_statistics_get(c.top, &st));
    EXPECT(st.count.value == 0 && st.count.total == 1);
    EXPECT_OK(rmm_deallocate_sync(c.top, NULL, 0, 256)); /* none outstanding: nothing to uncount */
    EXPECT_OK(rmm_statistics_get(c.top, &st));
    EXPECT(st.count.value == 0);

    EXPECT_OK(rmm_allocate(c.top, NULL, 1000, 256, &p));
    EXPECT_STATUS(rmm_deallocate(c.top, NULL, p, 0, 256), RMM_ERROR_INVALID_ARGUMENT);
    EXPECT_OK(rmm_statistics_get(c.top, &st));
    EXPECT(st.count.value == 1 && st.bytes.value == 1000);
    EXPECT_OK(rmm_deallocate(c.top, NULL, p, 1000, 256));
    EXPECT_OK(rmm_statistics_get(c.top, &st));
    EXPECT(st.count.value == 0 && st.bytes.value == 0);
    chain_release(&c);
  }
}

/* ---------------------------------------- a cached handle and its adaptors */

/* A block of the pool (a cached handle) freed through an adaptor over the
 * pool and then through the pool, or the other way round: one free is
 * accepted, the other refused, and the block is handed out once. */
static void test_free_through_adaptor_then_handle(void) {
  static const rmm_resource_kind ads[] = {RMM_RESOURCE_TRACKING,   RMM_RESOURCE_LOGGING,
                                          RMM_RESOURCE_THREAD_SAFE, RMM_RESOURCE_PREFETCH,
                                          RMM_RESOURCE_STATISTICS, RMM_RESOURCE_LIMITING,
                                          RMM_RESOURCE_FAILURE_CALLBACK, RMM_RESOURCE_ALIGNED};
  static const rmm_resource_kind subs[] = {RMM_RESOURCE_POOL, RMM_RESOURCE_ARENA, RMM_RESOURCE_BINNING,
                                           RMM_RESOURCE_EXPANDABLE};
  static const size_t sizes[] = {1000, 4096, 20000};
  for (size_t i = 0; i < COUNT(subs); i++) {
    for (size_t j = 0; j < COUNT(ads); j++) {
      for (size_t z = 0; z < COUNT(sizes); z++) {
        for (int order = 0; order < 2; order++) {
          chain c;
          void *p = NULL, *a = NULL, *b = NULL;
          size_t n = sizes[z];
          if (!chain_make(&c, (chain_kind){subs[i], ads[j]})) {
            continue;
          }
          REQUIRE_OK(rmm_allocate(c.under, NULL, n, 256, &p));
          rmm_status first, second;
          if (order == 0) {
            first = rmm_deallocate(c.top, NULL, p, n, 256);
            second = rmm_deallocate(c.under, NULL, p, n, 256);
          } else {
            first = rmm_deallocate(c.under, NULL, p, n, 256);
            second = rmm_deallocate(c.top, NULL, p, n, 256);
          }
          /* Exactly one accepted (which one depends on what the adaptor
           * can check), the other refused. */
          if (!((first == RMM_SUCCESS && refused(second)) || (refused(first) && second == RMM_SUCCESS))) {
            test_failed_count++;
            fprintf(stderr, "FAIL: %s, %zu bytes, %s first: got %s then %s, want one success and one refusal\n",
                    c.name, n, order == 0 ? "adaptor" : "handle", rmm_status_string(first),
                    rmm_status_string(second));
            if (first == RMM_SUCCESS && second == RMM_SUCCESS) {
              /* The block went back twice: show what that does. */
              if (rmm_allocate(c.under, NULL, n, 256, &a) == RMM_SUCCESS &&
                  rmm_allocate(c.under, NULL, n, 256, &b) == RMM_SUCCESS) {
                fprintf(stderr, "  the next two allocations: %p and %p\n", a, b);
              }
            }
          } else {
            test_passed_count++;
          }
          if (a == NULL && b == NULL) {
            EXPECT_OK(rmm_allocate(c.under, NULL, n, 256, &a));
            EXPECT_OK(rmm_allocate(c.under, NULL, n, 256, &b));
            EXPECT(a != b);
            EXPECT_OK(rmm_deallocate(c.under, NULL, a, n, 256));
            EXPECT_OK(rmm_deallocate(c.under, NULL, b, n, 256));
          }
          chain_release(&c);
        }
      }
    }
  }
}

/* ------------------------------------------------ chunks of sub-allocators */

/* A block that fills the chunk its sub-allocator took from its upstream
 * starts where the chunk does; freeing it through the upstream with the
 * chunk's size would give the chunk back while the sub-allocator holds it. */
static void check_chunk(rmm_resource_t up, rmm_resource_t sub, size_t bytes) {
  void *p = NULL, *q = NULL;
  REQUIRE_OK(rmm_allocate(sub, NULL, bytes, 256, &p));
  EXPECT_OK(rmm_memset(p, 0x3c, bytes, NULL));
  EXPECT_REFUSED(rmm_deallocate(up, NULL, p, bytes, 256));
  EXPECT_REFUSED(rmm_deallocate_sync(up, p, bytes, 256));
  EXPECT_OK(rmm_allocate(up, NULL, bytes, 256, &q));
  EXPECT(q != NULL && !overlaps(p, bytes, q, bytes));
  EXPECT_OK(rmm_deallocate(up, NULL, q, bytes, 256));
  EXPECT_OK(rmm_deallocate(sub, NULL, p, bytes, 256));
}

static void test_chunks_through_upstream(void) {
  rmm_resource_options o;
  rmm_resource_t pool = NULL, inner = NULL, outer = NULL, fixed = NULL, stats = NULL, async = NULL;
  rmm_resource_options_init(&o);
  /* A pool that grows by exactly the request: 4 MiB from an empty pool. */
  o.upstream = cuda;
  o.initial_pool_size = 0;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  case_name = "pool over cuda";
  check_chunk(cuda, pool, (size_t)4 << 20);
  EXPECT_OK(rmm_resource_release(pool));
  /* Its initial chunk, through an adaptor over the upstream. */
  o.upstream = cuda;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_STATISTICS, &o, &stats));
  o.upstream = stats;
  o.initial_pool_size = (size_t)1 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  case_name = "pool over statistics over cuda";
  check_chunk(stats, pool, (size_t)1 << 20);
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT_OK(rmm_resource_release(stats));
  /* A pool over a pool: the outer pool's chunk is a block of the inner. */
  o.upstream = cuda;
  o.initial_pool_size = 0;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &inner));
  o.upstream = inner;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &outer));
  case_name = "pool over pool";
  check_chunk(inner, outer, (size_t)4 << 20);
  EXPECT_OK(rmm_resource_release(outer));
  EXPECT_OK(rmm_resource_release(inner));
  /* A fixed-size resource whose chunk is one block. */
  o.upstream = cuda;
  o.block_size = (size_t)64 << 10;
  o.blocks_to_preallocate = 1;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_FIXED_SIZE, &o, &fixed));
  case_name = "fixed_size over cuda";
  check_chunk(cuda, fixed, (size_t)64 << 10);
  EXPECT_OK(rmm_resource_release(fixed));
  /* A pool over cuda_async (whose frees run in C). */
  if (rmm_resource_create(RMM_RESOURCE_CUDA_ASYNC, NULL, &async) == RMM_SUCCESS) {
    o.upstream = async;
    o.initial_pool_size = 0;
    REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
    case_name = "pool over cuda_async";
    check_chunk(async, pool, (size_t)4 << 20);
    EXPECT_OK(rmm_resource_release(pool));
    EXPECT_OK(rmm_resource_release(async));
  }
  case_name = "";
}

/* ------------------------------------------------ a pool that ran out */

/* A pool with no maximum grows until its upstream is out of memory; every
 * block freed, a request of half the device must succeed: the pool gives
 * its free chunks back and asks again before it reports out of memory. */
static void test_pool_gives_back_before_failing(void) {
  rmm_resource_options o;
  rmm_resource_t pool = NULL;
  size_t free0 = 0, total = 0, step;
  void* blocks[64];
  int n = 0;
  void* big = NULL;
  REQUIRE_OK(rmm_mem_get_info(&free0, &total));
  step = (free0 / 16) & ~(size_t)255;
  rmm_resource_options_init(&o);
  o.upstream = cuda;
  o.initial_pool_size = 0;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  while (n < 64 && rmm_allocate(pool, NULL, step, 256, &blocks[n]) == RMM_SUCCESS) {
    n++;
  }
  EXPECT(n >= 8 && n < 64); /* it ran out */
  for (int i = 0; i < n; i++) {
    EXPECT_OK(rmm_deallocate(pool, NULL, blocks[i], step, 256));
  }
  EXPECT_OK(rmm_allocate(pool, NULL, step * 8 + 256, 256, &big));
  if (big != NULL) {
    EXPECT_OK(rmm_deallocate(pool, NULL, big, step * 8 + 256, 256));
  }
  EXPECT_OK(rmm_resource_release(pool));
}

/* ----------------------------------------------------------------- main */

static size_t free_before;

/* warm_driver makes, once, what the driver keeps per process after the
 * first managed memory (a managed pool's UVM state outlives the pool while
 * the process has a context: docs/gpu-verification.md, Run 17), so that the
 * teardown's count measures this test's memory, not the driver's. */
static void warm_driver(void) {
  static const rmm_resource_kind kinds[] = {RMM_RESOURCE_MANAGED, RMM_RESOURCE_CUDA_ASYNC_MANAGED};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    rmm_resource_t r = NULL;
    void* p = NULL;
    if (rmm_resource_create(kinds[i], NULL, &r) != RMM_SUCCESS) {
      continue; /* not supported here: nothing to warm */
    }
    if (rmm_allocate_sync(r, 1 << 20, 256, &p) == RMM_SUCCESS) {
      (void)rmm_deallocate_sync(r, p, 1 << 20, 256);
    }
    (void)rmm_resource_release(r);
  }
  (void)rmm_device_synchronize();
}

static int setup(void) {
  size_t total = 0;
  printf("thread cache %s\n", cache_on() ? "on" : "off");
  if (!test_simulated()) {
    warm_driver();
  }
  if (rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS) {
    return 1;
  }
  return rmm_mem_get_info(&free_before, &total) == RMM_SUCCESS ? 0 : 1;
}

static void teardown(void) {
  size_t free_after = 0, total = 0;
  for (int i = 0; i < nview_owners; i++) {
    EXPECT_OK(rmm_resource_release(view_owners[i]));
  }
  EXPECT_OK(rmm_resource_release(cuda));
  remove("same_bytes_test.csv");
  EXPECT_OK(rmm_device_synchronize());
  EXPECT_OK(rmm_mem_get_info(&free_after, &total));
  if (free_after != free_before) {
    printf("device memory free: %zu bytes before the tests, %zu after\n", free_before, free_after);
  }
  /* Exact on the simulated device. On a GPU the driver may give back
   * memory of its own meanwhile (Run 28: 94 MiB more free after than
   * before), so a loss is what fails there. */
  EXPECT(test_simulated() ? free_after == free_before : free_after >= free_before);
}

static const test_case tests[] = {
    TEST(test_interior_pointers),
    TEST(test_sizes_and_alignments),
    TEST(test_statistics_zero_bytes),
    TEST(test_free_through_adaptor_then_handle),
    TEST(test_chunks_through_upstream),
    TEST(test_pool_gives_back_before_failing),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
