/*
 * external_test.c -- rmm_resource_create_external: a resource whose
 * functions are the caller's gets the alignment and stream, reports its
 * status and message, decides equality, is told when it goes, and can be an
 * upstream and the current device resource.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmmgo.h"
#include "test_util.h"

/* A C allocator over a cuda resource, counting what it sees. */
typedef struct counter {
  rmm_resource_t upstream;
  int id; /* equal when ids are equal */
  size_t live;
  size_t last_alignment;
  rmm_stream_t last_stream;
  int released;
  int fail_next; /* the next allocation fails with this status */
} counter;

static rmm_status c_allocate(void* self, size_t bytes, size_t alignment, rmm_stream_t stream, void** ptr, char* msg,
                             size_t msg_size) {
  counter* c = self;
  c->last_alignment = alignment;
  c->last_stream = stream;
  if (c->fail_next != 0) {
    rmm_status st = (rmm_status)c->fail_next;
    c->fail_next = 0;
    snprintf(msg, msg_size, "counter %d: no room for %zu bytes", c->id, bytes);
    return st;
  }
  rmm_status st = rmm_allocate(c->upstream, stream, bytes, alignment, ptr);
  if (st == RMM_SUCCESS) { c->live += bytes; }
  return st;
}

static rmm_status c_deallocate(void* self, void* ptr, size_t bytes, size_t alignment, rmm_stream_t stream, char* msg,
                               size_t msg_size) {
  counter* c = self;
  (void)msg;
  (void)msg_size;
  c->live -= bytes;
  return rmm_deallocate(c->upstream, stream, ptr, bytes, alignment);
}

static int c_is_equal(void* a, void* b) { return ((counter*)a)->id == ((counter*)b)->id; }

static void c_release(void* self) { ((counter*)self)->released++; }

static rmm_resource_t cuda;

static int setup(void) { return rmm_resource_create(RMM_RESOURCE_CUDA, NULL, &cuda) != RMM_SUCCESS; }
static void teardown(void) { EXPECT_OK(rmm_resource_release(cuda)); }

static rmm_external_resource ops_for(counter* c) {
  rmm_external_resource ops;
  memset(&ops, 0, sizeof ops);
  ops.struct_size = sizeof ops;
  ops.self = c;
  ops.allocate = c_allocate;
  ops.deallocate = c_deallocate;
  ops.is_equal = c_is_equal;
  ops.release = c_release;
  ops.properties = RMM_PROPERTY_DEVICE_ACCESSIBLE;
  ops.device = -1;
  return ops;
}

static void test_allocate_passes_alignment_and_stream(void) {
  counter c = {cuda, 1, 0, 0, NULL, 0, 0};
  rmm_external_resource ops = ops_for(&c);
  rmm_resource_t ext = NULL;
  rmm_stream_t s = NULL;
  void* p = NULL;
  rmm_resource_kind kind;
  const char* name = NULL;
  void* self = NULL;
  REQUIRE_OK(rmm_resource_create_external(&ops, &ext));
  REQUIRE_OK(rmm_stream_create(&s));
  EXPECT_OK(rmm_allocate(ext, s, 1000, 128, &p));
  EXPECT(p != NULL && ((uintptr_t)p & 127) == 0);
  EXPECT(c.last_alignment == 128 && c.last_stream == s && c.live == 1000);
  EXPECT_OK(rmm_deallocate(ext, s, p, 1000, 128));
  EXPECT(c.live == 0);
  EXPECT_OK(rmm_allocate_sync(ext, 10, 256, &p));
  EXPECT(c.last_stream == NULL);
  EXPECT_OK(rmm_deallocate_sync(ext, p, 10, 256));
  EXPECT_OK(rmm_resource_kind_of(ext, &kind));
  EXPECT(kind == RMM_RESOURCE_EXTERNAL);
  EXPECT_OK(rmm_resource_name(ext, &name));
  EXPECT(name != NULL && strcmp(name, "external_memory_resource") == 0);
  EXPECT_OK(rmm_resource_external_self(ext, &self, NULL));
  EXPECT(self == &c);
  EXPECT_STATUS(rmm_resource_external_self(cuda, &self, NULL), RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_OK(rmm_stream_destroy(s));
  EXPECT(c.released == 0);
  EXPECT_OK(rmm_resource_release(ext));
  EXPECT(c.released == 1);
}

static void test_status_and_message(void) {
  counter c = {cuda, 2, 0, 0, NULL, 0, RMM_ERROR_OUT_OF_MEMORY};
  rmm_external_resource ops = ops_for(&c);
  rmm_resource_t ext = NULL;
  void* p = NULL;
  REQUIRE_OK(rmm_resource_create_external(&ops, &ext));
  EXPECT_STATUS(rmm_allocate(ext, NULL, 64, 256, &p), RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_MESSAGE_HAS("counter 2: no room for 64 bytes");
  c.fail_next = RMM_ERROR_CUDA;
  EXPECT_STATUS(rmm_allocate(ext, NULL, 64, 256, &p), RMM_ERROR_CUDA);
  EXPECT_OK(rmm_resource_release(ext));
}

static void test_equality(void) {
  counter a = {cuda, 7, 0, 0, NULL, 0, 0}, b = {cuda, 7, 0, 0, NULL, 0, 0}, d = {cuda, 8, 0, 0, NULL, 0, 0};
  rmm_external_resource oa = ops_for(&a), ob = ops_for(&b), od = ops_for(&d);
  rmm_resource_t ha, hb, hd;
  int eq = -1;
  REQUIRE_OK(rmm_resource_create_external(&oa, &ha));
  REQUIRE_OK(rmm_resource_create_external(&ob, &hb));
  REQUIRE_OK(rmm_resource_create_external(&od, &hd));
  EXPECT_OK(rmm_resource_is_equal(ha, hb, &eq));
  EXPECT(eq == 1);
  EXPECT_OK(rmm_resource_is_equal(ha, hd, &eq));
  EXPECT(eq == 0);
  EXPECT_OK(rmm_resource_is_equal(ha, cuda, &eq));
  EXPECT(eq == 0);
  EXPECT_OK(rmm_resource_release(ha));
  EXPECT_OK(rmm_resource_release(hb));
  EXPECT_OK(rmm_resource_release(hd));
}

/* An external resource under a pool and as the current resource; released
 * only when the pool and the slot let go of it. */
static void test_upstream_and_current(void) {
  counter c = {cuda, 3, 0, 0, NULL, 0, 0};
  rmm_external_resource ops = ops_for(&c);
  rmm_resource_t ext = NULL, pool = NULL, cur = NULL;
  rmm_resource_options o;
  void* p = NULL;
  REQUIRE_OK(rmm_resource_create_external(&ops, &ext));
  rmm_resource_options_init(&o);
  o.upstream = ext;
  o.initial_pool_size = 1 << 20;
  REQUIRE_OK(rmm_resource_create(RMM_RESOURCE_POOL, &o, &pool));
  EXPECT(c.live == (1u << 20));
  EXPECT_OK(rmm_set_current_device_resource(ext, NULL));
  EXPECT_OK(rmm_resource_release(ext));
  EXPECT_OK(rmm_get_current_device_resource(&cur));
  EXPECT(cur == ext);
  EXPECT_OK(rmm_allocate(cur, NULL, 512, 256, &p));
  EXPECT_OK(rmm_deallocate(cur, NULL, p, 512, 256));
  EXPECT_OK(rmm_resource_release(cur));
  EXPECT_OK(rmm_reset_current_device_resource(NULL));
  EXPECT(c.released == 0);
  EXPECT_OK(rmm_resource_release(pool));
  EXPECT(c.live == 0);
  EXPECT(c.released == 1);
}

static void test_bad_input(void) {
  counter c = {cuda, 4, 0, 0, NULL, 0, 0};
  rmm_external_resource ops = ops_for(&c);
  rmm_resource_t ext = NULL;
  EXPECT_STATUS(rmm_resource_create_external(NULL, &ext), RMM_ERROR_INVALID_ARGUMENT);
  ops.allocate = NULL;
  EXPECT_STATUS(rmm_resource_create_external(&ops, &ext), RMM_ERROR_INVALID_ARGUMENT);
  ops = ops_for(&c);
  ops.struct_size = 8;
  EXPECT_STATUS(rmm_resource_create_external(&ops, &ext), RMM_ERROR_INVALID_ARGUMENT);
  ops = ops_for(&c);
  ops.properties = 64;
  EXPECT_STATUS(rmm_resource_create_external(&ops, &ext), RMM_ERROR_INVALID_ARGUMENT);
  ops = ops_for(&c);
  ops.device = 999;
  EXPECT_STATUS(rmm_resource_create_external(&ops, &ext), RMM_ERROR_INVALID_DEVICE);
}

static const test_case tests[] = {
    TEST(test_allocate_passes_alignment_and_stream),
    TEST(test_status_and_message),
    TEST(test_equality),
    TEST(test_upstream_and_current),
    TEST(test_bad_input),
};

int main(int argc, char** argv) { return TEST_MAIN(argc, argv, tests, setup, teardown); }
