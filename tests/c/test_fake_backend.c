/* test_fake_backend.c: the fake backend (fake_backend.h) behaves as the engine's tests rely on:
 * host memory, synchronous kernels, a fake clock that events and timestamps read, capture and
 * replay in order, and injected failures. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fake_backend.h"

static int failures;
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)
#define NEAR(a, b, tol) CHECK(fabs((a) - (b)) <= (tol))

/* y[i] = x[i] + 1 per thread; args: x, y, n */
static void add_one(const fake_launch *l, const unsigned b[3], const unsigned t[3]) {
  unsigned long long i = (unsigned long long)b[0] * l->block[0] + t[0];
  if (i < FAKE_ARG(l, 2, unsigned long long)) FAKE_PTR(l, 1, float)[i] = FAKE_PTR(l, 0, float)[i] + 1;
}
static int calls;
static gpu_status count_call(const fake_launch *l) {
  calls++;
  return GPU_OK;
}

static const fake_kernel kernels[] = {
  {.name = "add_one", .thread = add_one, .duration_ns = 1000, .nargs = 3},
  {.name = "mark_evict", .run = count_call, .duration_ns = 500, .nargs = 1, .arg_bytes = {4}},
  {.name = "work", .run = count_call, .duration_ns = 2000},
  {NULL},
};

static void test_memory_and_kernels(const gpu_backend *g) {
  fake_reset();
  fake_register_module("mod.cubin", kernels);
  gpu_module *m = NULL;
  gpu_function *f = NULL;
  CHECK(g->module_load_file(&m, "mod.cubin") == GPU_OK);
  CHECK(g->function_get(&f, m, "add_one") == GPU_OK);
  gpu_function *missing = NULL;
  CHECK(g->function_get(&missing, m, "nope") == GPU_ERR_INVALID && strstr(gpu_last_error(), "nope"));
  gpu_ptr x = 0, y = 0;
  CHECK(g->mem_alloc(&x, 100 * sizeof(float)) == GPU_OK);
  CHECK(g->mem_alloc(&y, 100 * sizeof(float)) == GPU_OK);
  float host[100];
  for (int i = 0; i < 100; i++) host[i] = (float)i;
  CHECK(g->copy_htod(x, host, sizeof host) == GPU_OK);
  unsigned long long n = 100;
  void *args[] = {&x, &y, &n};
  unsigned grid[3] = {4, 1, 1}, block[3] = {32, 1, 1};
  CHECK(g->launch(f, grid, block, 0, NULL, args) == GPU_OK);
  CHECK(g->copy_dtoh(host, y, sizeof host) == GPU_OK);
  CHECK(host[0] == 1 && host[99] == 100);
  CHECK(fake.kernels_run == 1 && fake_count(FAKE_OP_KERNEL, "add_one") == 1);
  NEAR(fake.now_ns, 1000, 0);
  fake.mem_limit = fake.bytes_in_use + 10;
  gpu_ptr z = 0;
  CHECK(g->mem_alloc(&z, 11) == GPU_ERR_OOM && z == 0);
  CHECK(g->mem_free(x) == GPU_OK && g->mem_free(x) == GPU_ERR_INVALID);
}

static void test_events_and_failures(const gpu_backend *g) {
  fake_reset();
  gpu_module *m = NULL;
  gpu_function *w = NULL;
  CHECK(g->module_load_image(&m, kernels, 0) == GPU_OK && g->function_get(&w, m, "work") == GPU_OK);
  gpu_stream s = NULL;
  gpu_event a = NULL, b = NULL;
  CHECK(g->stream_create(&s) == GPU_OK && g->event_create(&a) == GPU_OK && g->event_create(&b) == GPU_OK);
  unsigned one[3] = {1, 1, 1};
  float ms = -1;
  CHECK(g->event_elapsed_ms(&ms, a, b) == GPU_ERR_INVALID); /* not recorded yet */
  CHECK(g->event_record(a, s) == GPU_OK);
  CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_OK);
  CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_OK);
  CHECK(g->event_record(b, s) == GPU_OK);
  CHECK(g->event_elapsed_ms(&ms, a, b) == GPU_OK);
  NEAR(ms, 4e-3, 1e-9);
  /* a stream stays busy for busy_polls queries after a submission */
  fake.busy_polls = 2;
  CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_OK);
  CHECK(g->stream_wait_timeout(s, 0) == GPU_ERR_TIMEOUT);
  CHECK(g->stream_wait_timeout(s, 0) == GPU_ERR_TIMEOUT);
  CHECK(g->stream_wait_timeout(s, 0) == GPU_OK);
  fake.hang = 1;
  CHECK(g->stream_wait_timeout(s, 100) == GPU_ERR_TIMEOUT);
  fake.hang = 0;
  /* the 5th kernel execution fails, with the kernel's name in the message */
  fake.fail_launch_at = 5;
  CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_OK);
  CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_ERR_FAULT && strstr(gpu_last_error(), "'work'"));
  CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_OK);
  fake.fail_kernel = "work";
  fake.fail_status = GPU_ERR_TIMEOUT;
  CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_ERR_TIMEOUT);
}

/* Capture [event, mark_evict, event, work] x 2 + event; replay re-pointed events in order; the
 * timestamps of the replay carry the pushed id and split into two samples at the markers. */
static void test_graph_and_timestamps(const gpu_backend *g) {
  fake_reset();
  const gpu_timestamps *ts = g->timestamps;
  CHECK(ts != NULL && ts->start() == GPU_OK);
  gpu_module *m = NULL;
  gpu_function *ev = NULL, *w = NULL;
  CHECK(g->module_load_image(&m, kernels, 0) == GPU_OK);
  CHECK(g->function_get(&ev, m, "mark_evict") == GPU_OK && g->function_get(&w, m, "work") == GPU_OK);
  gpu_stream s = NULL;
  CHECK(g->stream_create(&s) == GPU_OK);
  gpu_event e[5], r[5];
  for (int i = 0; i < 5; i++) CHECK(g->event_create(&e[i]) == GPU_OK && g->event_create(&r[i]) == GPU_OK);
  unsigned one[3] = {1, 1, 1};
  unsigned key = 7;
  void *args[] = {&key};
  CHECK(g->capture_begin(s) == GPU_OK);
  for (int j = 0; j < 2; j++) {
    CHECK(g->event_record_captured(e[2 * j], s) == GPU_OK);
    CHECK(g->launch(ev, one, one, 0, s, args) == GPU_OK);
    CHECK(g->event_record_captured(e[2 * j + 1], s) == GPU_OK);
    CHECK(g->launch(w, one, one, 0, s, NULL) == GPU_OK);
  }
  CHECK(g->event_record_captured(e[4], s) == GPU_OK);
  gpu_graph gr = NULL;
  CHECK(g->capture_end_events(s, &gr, e, 5) == GPU_OK && gr != NULL);
  calls = 0;
  CHECK(fake.kernels_run == 0); /* captured, not run */
  for (int i = 0; i < 5; i++) CHECK(g->graph_set_event(gr, (size_t)i, r[i]) == GPU_OK);
  ts->set_marker("mark_");
  CHECK(ts->push(42) == GPU_OK);
  CHECK(g->graph_launch(gr, s) == GPU_OK);
  CHECK(ts->pop() == GPU_OK);
  CHECK(calls == 4 && fake.graph_launches == 1);
  float ms = 0;
  CHECK(g->event_elapsed_ms(&ms, r[1], r[2]) == GPU_OK);
  NEAR(ms, 2e-3, 1e-9); /* the run between its events: work (2000) */
  CHECK(g->event_elapsed_ms(&ms, e[0], e[1]) == GPU_ERR_INVALID); /* re-pointed: the originals never ran */
  double ns[4];
  int k[4], inc[4];
  CHECK(ts->collect_groups(42, 1, 2, ns, k, inc) == GPU_OK);
  NEAR(ns[0], 2000, 0);
  NEAR(ns[1], 2000, 0);
  NEAR(ns[2], 500, 0);
  NEAR(ns[3], 500, 0);
  CHECK(k[0] == 1 && k[1] == 1 && k[2] == 1 && inc[0] == 0 && inc[1] == 0);
  /* plain collect: a second replay under id 43, summed as one run */
  CHECK(ts->push(43) == GPU_OK && g->graph_launch(gr, s) == GPU_OK && ts->pop() == GPU_OK);
  double one_ns = 0;
  int one_k = 0, one_inc = 0;
  CHECK(ts->collect(43, 1, &one_ns, &one_k, &one_inc) == GPU_OK);
  NEAR(one_ns, 5000, 0);
  CHECK(one_k == 4);
  /* skewed records overlap the kernel before: counted once, the overlap reported */
  fake.timestamp_skew_ns = 100;
  double before = ts->clipped_ns();
  CHECK(ts->push(44) == GPU_OK && g->graph_launch(gr, s) == GPU_OK && ts->pop() == GPU_OK);
  CHECK(ts->collect(44, 1, &one_ns, &one_k, &one_inc) == GPU_OK);
  NEAR(one_ns, 5100, 0); /* the union: the first record starts 100 early, the others are clipped */
  NEAR(ts->clipped_ns() - before, 300, 0);
  CHECK(g->graph_destroy(gr) == GPU_OK);
  fake_reset();
  fake.timestamps_absent = 1;
  CHECK(g->timestamps->start() == GPU_ERR_NO_LIBRARY);
}

int main(void) {
  const gpu_backend *g = fake_backend();
  CHECK(g->init() == GPU_OK);
  test_memory_and_kernels(g);
  test_events_and_failures(g);
  test_graph_and_timestamps(g);
  fake_reset();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("fake backend: ok\n");
  return 0;
}
