/* test_backend_seam.c: the layers above host/gpu/ run on any backend. With the fake backend
 * (tests/c/fake_backend.h) chosen at run time, and no CUDA: host kernels compile through the
 * backend's compiler table into the verified on-disk cache; a launch plan runs kernel and library
 * steps in order and names a failing step; the timer's engine measures a plan (eager and as a
 * graph, eviction before every run); verification finds planted mismatches through the
 * compare kernel's result layout, frees its scratch on every path and reports a failed or hung
 * kernel the way tb.verify raises it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_backend.h"
#include "host_kernels.h"
#include "launch_plan.h"
#include "measure/measure.h"
#include "verify.h"

#include "check.h"

/* ---- verify.cu on the host: the rule and the result layout of host/kernels/verify.cu --------- */

typedef struct header { uint64_t mismatches, max_abs, max_rel, nfirst; } header;

static uint64_t double_bits(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* One launch does the whole compare (the real kernel splits it over blocks and lets
 * tb_compare_finish gather the lists; the layout the engine reads back is the same). */
static gpu_status compare_run(const fake_launch *l, int is_float) {
  uint64_t n = FAKE_ARG(l, 2, unsigned long long);
  double atol = FAKE_ARG(l, 3, double), rtol = FAKE_ARG(l, 4, double);
  int exact = FAKE_ARG(l, 5, int);
  unsigned char *res = FAKE_PTR(l, 8, unsigned char);
  unsigned K = FAKE_ARG(l, 9, unsigned);
  header *h = (header *)res;
  verify_mismatch *first = (verify_mismatch *)(res + sizeof *h);
  double max_abs = 0, max_rel = 0;
  for (uint64_t i = 0; i < n; i++) {
    double o, r;
    uint64_t got, expected;
    int bad;
    if (is_float) {
      o = FAKE_PTR(l, 0, float)[i], r = FAKE_PTR(l, 1, float)[i];
      got = double_bits(o), expected = double_bits(r);
    } else {
      int32_t a = FAKE_PTR(l, 0, int32_t)[i], b = FAKE_PTR(l, 1, int32_t)[i];
      o = a, r = b, got = (uint64_t)(int64_t)a, expected = (uint64_t)(int64_t)b;
    }
    if (isnan(o) || isnan(r)) bad = !(isnan(o) && isnan(r));
    else if (isinf(o) || isinf(r)) bad = o != r;
    else if (exact) bad = o != r;
    else bad = !(fabs(o - r) <= atol + rtol * fabs(r));
    if (isfinite(o) && isfinite(r)) {
      double e = fabs(o - r);
      if (e > max_abs) max_abs = e;
      if (r != 0 && e / fabs(r) > max_rel) max_rel = e / fabs(r);
    }
    if (bad) {
      if (h->nfirst < K) first[h->nfirst++] = (verify_mismatch){i, got, expected};
      h->mismatches++;
    }
  }
  h->max_abs = double_bits(max_abs);
  h->max_rel = double_bits(max_rel);
  return GPU_OK;
}
static gpu_status compare_fp32(const fake_launch *l) { return compare_run(l, 1); }
static gpu_status compare_int32(const fake_launch *l) { return compare_run(l, 0); }

static const fake_kernel verify_kernels[] = {
  {.name = "tb_compare_fp32_fp32", .run = compare_fp32, .duration_ns = 1000},
  {.name = "tb_compare_int32_int32", .run = compare_int32, .duration_ns = 1000},
  {.name = "tb_compare_finish", .duration_ns = 100},
  {NULL},
};

/* ---- a plan's kernels ------------------------------------------------------------------------ */

/* y[i] = a * x[i] + y[i], once per thread of the grid. */
static void axpy_thread(const fake_launch *l, const unsigned b[3], const unsigned t[3]) {
  uint64_t i = (uint64_t)b[0] * l->block[0] + t[0];
  if ((int64_t)i < FAKE_ARG(l, 3, int64_t)) FAKE_PTR(l, 1, float)[i] += FAKE_ARG(l, 2, float) * FAKE_PTR(l, 0, float)[i];
}
static void scale_thread(const fake_launch *l, const unsigned b[3], const unsigned t[3]) {
  uint64_t i = (uint64_t)b[0] * l->block[0] + t[0];
  if (i < (uint64_t)FAKE_ARG(l, 2, int32_t)) FAKE_PTR(l, 0, float)[i] *= FAKE_ARG(l, 1, float);
}
static const fake_kernel plan_kernels[] = {
  {.name = "axpy", .thread = axpy_thread, .duration_ns = 2000, .nargs = 4, .arg_bytes = {8, 8, 4, 8}},
  {.name = "scale", .thread = scale_thread, .duration_ns = 500, .nargs = 3, .arg_bytes = {8, 4, 4}},
  {NULL},
};

/* The timer's host kernels: eviction (the fake reads nothing) and the clock probe (1500 MHz). */
static gpu_status clock_probe(const fake_launch *l) {
  unsigned long long *out = FAKE_PTR(l, 0, unsigned long long);
  unsigned window = FAKE_ARG(l, 1, unsigned);
  for (unsigned sm = 0; sm < l->grid[0]; sm++) out[2 * sm] = 1500ull * window / 1000, out[2 * sm + 1] = window;
  return GPU_OK;
}
static const fake_kernel evict_kernels[] = {
  {.name = "tb_evict_read", .duration_ns = 700, .nargs = 4, .arg_bytes = {8, 8, 8, 4}},
  {.name = "tb_evict_pages", .duration_ns = 100, .nargs = 5, .arg_bytes = {8, 8, 8, 8, 4}},
  {NULL},
};
static const fake_kernel probe_kernels[] = {
  {.name = "tb_clock_probe", .run = clock_probe, .duration_ns = 2000, .nargs = 2, .arg_bytes = {8, 4}},
  {NULL},
};

/* A library call step (what blas_matmul_run is to a plan): adds 1 to n floats. */
typedef struct add_one { gpu_ptr p; int n, calls; } add_one;
static gpu_status add_one_run(void *self, gpu_stream s) {
  add_one *a = self;
  for (int i = 0; i < a->n; i++) ((float *)(uintptr_t)a->p)[i] += 1;
  a->calls++;
  return GPU_OK;
}

/* ---- tests ----------------------------------------------------------------------------------- */

static const gpu_backend *B;
static gpu_stream S;

static gpu_ptr upload(const void *host, size_t bytes) {
  gpu_ptr p = 0;
  CHECK(B->mem_alloc(&p, bytes) == GPU_OK, "%s", gpu_last_error());
  CHECK(B->copy_htod(p, host, bytes) == GPU_OK, "%s", gpu_last_error());
  return p;
}

static void backend_is_chosen_at_run_time(void) {
  CHECK(gpu_backend_register(fake_backend()) == GPU_OK, "%s", gpu_last_error());
  CHECK(gpu_backend_register(fake_backend()) == GPU_ERR_INVALID, "a name registered twice");
  CHECK(gpu_backend_select("nosuch") == GPU_ERR_INVALID && strstr(gpu_last_error(), "known: cuda, fake"),
        "%s", gpu_last_error());
  CHECK(gpu_backend_select("fake") == GPU_OK, "%s", gpu_last_error());
  B = gpu_backend_get();
  CHECK(B == fake_backend() && strcmp(B->name, "fake") == 0, "backend %s", B->name);
  int major = 0, minor = 0;
  CHECK(rtc_version(&major, &minor) == GPU_OK && major == 1, "the fake compiler's version");
}

/* Host kernels compile through the backend's compiler into the checked cache, once. */
static void host_kernels_compile_through_the_backend(const char *cache) {
  gpu_function *f = NULL;
  CHECK(host_kernel(B, "fake", "verify.cu", "tb_compare_fp32_fp32", &f) == GPU_OK && f, "%s", gpu_last_error());
  CHECK(fake.compiles == 1, "compiles %llu", (unsigned long long)fake.compiles);
  CHECK(host_kernel(B, "fake", "verify.cu", "tb_compare_finish", &f) == GPU_OK && fake.compiles == 1,
        "a second kernel of the module compiled again");
  CHECK(host_kernel(B, "fake", "verify.cu", "tb_no_such_kernel", &f) != GPU_OK &&
        strstr(gpu_last_error(), "no kernel 'tb_no_such_kernel'"), "%s", gpu_last_error());
  CHECK(host_kernel(B, "fake", "nosuch.cu", "k", &f) == GPU_ERR_INVALID &&
        strstr(gpu_last_error(), "host kernel source 'nosuch.cu' is not embedded"), "%s", gpu_last_error());
  /* The cache entry and its checksum, then a hit after the module is forgotten. */
  rtc_result r;
  CHECK(rtc_compile(host_kernel_source("verify.cu", NULL), "host/kernels/verify.cu", NULL, 0, NULL, 0, "fake", &r) ==
        GPU_OK, "%s", gpu_last_error());
  char path[1200];
  snprintf(path, sizeof path, "%s/%s.fake.sum", cache, r.key);
  struct stat st;
  CHECK(stat(path, &st) == 0, "no %s", path);
  rtc_result_free(&r);
  host_kernels_forget();
  uint64_t before = fake.compiles;
  CHECK(host_kernel(B, "fake", "verify.cu", "tb_compare_fp32_fp32", &f) == GPU_OK && fake.compiles == before,
        "the cached image was not used (%llu compiles)", (unsigned long long)fake.compiles);
  CHECK(rtc_compile("FAKE_COMPILE_ERROR", "bad.cu", NULL, 0, NULL, 0, "fake", &r) == GPU_ERR_COMPILE &&
        strstr(gpu_last_error(), "bad.cu: FAKE_ERROR_COMPILATION"), "%s", gpu_last_error());
  rtc_result_free(&r);
  CHECK(rtc_compile("x", "x.cu", NULL, 0, NULL, 0, "sm_90", &r) == GPU_ERR_INVALID &&
        strstr(gpu_last_error(), "invalid architecture 'sm_90'"), "the fake's targets: %s", gpu_last_error());
}

static void plan_runs_its_steps_in_order(void) {
  enum { N = 1000 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1;
  gpu_ptr px = upload(x, sizeof x), py = upload(y, sizeof y);
  rtc_result r;
  gpu_module *m = NULL;
  gpu_function *axpy = NULL, *scale = NULL;
  CHECK(rtc_compile("axpy and scale", "plan.cu", NULL, 0, NULL, 0, NULL, &r) == GPU_OK, "%s", gpu_last_error());
  CHECK(B->module_load_image(&m, r.image, r.size) == GPU_OK, "%s", gpu_last_error());
  rtc_result_free(&r);
  CHECK(B->function_get(&axpy, m, "axpy") == GPU_OK && B->function_get(&scale, m, "scale") == GPU_OK, "%s",
        gpu_last_error());

  /* Arguments packed once, in 8-byte slots, as tb.launch packs them. */
  unsigned char axpy_args[4][LAUNCH_PLAN_SLOT] = {{0}}, scale_args[3][LAUNCH_PLAN_SLOT] = {{0}};
  float a = 2, factor = 0.5f;
  int64_t n64 = N;
  int32_t n32 = N;
  memcpy(axpy_args[0], &px, 8), memcpy(axpy_args[1], &py, 8), memcpy(axpy_args[2], &a, 4);
  memcpy(axpy_args[3], &n64, 8);
  memcpy(scale_args[0], &py, 8), memcpy(scale_args[1], &factor, 4), memcpy(scale_args[2], &n32, 4);
  add_one lib = {py, N, 0};
  unsigned grid[3] = {(N + 127) / 128, 1, 1}, block[3] = {128, 1, 1};
  launch_plan *p = launch_plan_new(3);
  CHECK(p != NULL, "launch_plan_new");
  CHECK(launch_plan_add_kernel(p, axpy, "axpy", grid, block, 0, axpy_args, 4) == GPU_OK, "%s", gpu_last_error());
  CHECK(launch_plan_add_call(p, add_one_run, &lib, "add_one") == GPU_OK, "%s", gpu_last_error());
  CHECK(launch_plan_add_kernel(p, scale, "scale", grid, block, 0, scale_args, 3) == GPU_OK, "%s", gpu_last_error());
  CHECK(launch_plan_add_call(p, add_one_run, &lib, "one too many") == GPU_ERR_INVALID, "a fourth step in 3");
  CHECK(launch_plan_steps(p) == 3 && launch_plan_kernels(p) == 3, "%d steps", launch_plan_steps(p));
  /* The packed bytes are the plan's own: changing ours now changes nothing. */
  memset(axpy_args, 0, sizeof axpy_args);

  for (int run = 0; run < 2; run++) CHECK(launch_plan_run(p, B, S) == GPU_OK, "run: %s", gpu_last_error());
  CHECK(B->copy_dtoh(y, py, sizeof y) == GPU_OK, "%s", gpu_last_error());
  int good = lib.calls == 2;
  for (int i = 0; i < N; i++) {
    float once = ((1 + 2.0f * i) + 1) * 0.5f;
    good = good && y[i] == ((once + 2.0f * i) + 1) * 0.5f;
  }
  CHECK(good, "plan result: y[3] = %g, library calls %d", y[3], lib.calls);
  CHECK(fake_count(FAKE_OP_KERNEL, "axpy") == 2 && fake_count(FAKE_OP_KERNEL, "scale") == 2, "launches");
  launch_plan_step_info info;
  launch_plan_step(p, 1, &info);
  CHECK(info.native == 1 && strcmp(info.name, "add_one") == 0, "step 2: %s", info.name);
  launch_plan_step(p, 0, &info);
  CHECK(!info.native && info.nargs == 4 && info.grid[0] == grid[0] && strcmp(info.name, "axpy") == 0, "step 1");

  fake.fail_kernel = "scale";
  gpu_status st = launch_plan_run(p, B, S);
  CHECK(st == GPU_ERR_FAULT && strncmp(gpu_last_error(), "plan step 3 ('scale'): fakeLaunchKernel: FAKE_ERROR", 51) == 0,
        "failing step: %d %s", st, gpu_last_error());
  fake.fail_kernel = NULL;
  launch_plan_free(p);
  launch_plan_free(NULL);
  B->mem_free(px), B->mem_free(py);
}

/* A copy step: the driver's device-to-device copy, in plan order with a library call. */
static void plan_copies_through_the_driver(void) {
  enum { N = 300 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = -1;
  gpu_ptr px = upload(x, sizeof x), py = upload(y, sizeof y);
  add_one lib = {py, N, 0};
  launch_plan *p = launch_plan_new(2);
  CHECK(p != NULL, "launch_plan_new");
  CHECK(launch_plan_add_copy(p, py, px, (N - 1) * sizeof(float), "memcpy dtod") == GPU_OK, "%s", gpu_last_error());
  CHECK(launch_plan_add_call(p, add_one_run, &lib, "add_one") == GPU_OK, "%s", gpu_last_error());
  CHECK(launch_plan_add_copy(p, py, px, 4, "one too many") == GPU_ERR_INVALID, "a third step in 2");
  CHECK(launch_plan_run(p, B, S) == GPU_OK, "run: %s", gpu_last_error());
  CHECK(B->copy_dtoh(y, py, sizeof y) == GPU_OK, "%s", gpu_last_error());
  int good = 1;
  for (int i = 0; i < N - 1; i++) good = good && y[i] == (float)i + 1;
  CHECK(good && y[N - 1] == 0, "copy then add: y[5] = %g, y[last] = %g", y[5], y[N - 1]);
  launch_plan_step_info info;
  launch_plan_step(p, 0, &info);
  CHECK(info.copy == 1 && info.native == 1 && info.copy_bytes == (N - 1) * sizeof(float) &&
        strcmp(info.name, "memcpy dtod") == 0, "step 1: copy %d, %zu bytes", info.copy, info.copy_bytes);
  launch_plan_step(p, 1, &info);
  CHECK(info.copy == 0 && info.native == 1, "step 2 is the call");
  launch_plan_free(p);
  B->mem_free(px), B->mem_free(py);
}

static gpu_status run_launch_plan(void *plan, gpu_stream s) { return launch_plan_run(plan, gpu_backend_get(), s); }

/* The timer's engine times a launch plan: two kernels per run, eviction before each, eager and
 * replayed as a graph, with the backend's kernel timestamps. */
static void timer_measures_a_plan(void) {
  enum { N = 256 };
  float x[N] = {0}, y[N] = {0};
  gpu_ptr px = upload(x, sizeof x), py = upload(y, sizeof y);
  gpu_module *m = NULL;
  gpu_function *axpy = NULL, *scale = NULL;
  rtc_result r;
  CHECK(rtc_compile("axpy and scale", "plan.cu", NULL, 0, NULL, 0, "fake", &r) == GPU_OK, "%s", gpu_last_error());
  CHECK(B->module_load_image(&m, r.image, r.size) == GPU_OK, "%s", gpu_last_error());
  rtc_result_free(&r);
  B->function_get(&axpy, m, "axpy"), B->function_get(&scale, m, "scale");
  unsigned char axpy_args[4][LAUNCH_PLAN_SLOT] = {{0}}, scale_args[3][LAUNCH_PLAN_SLOT] = {{0}};
  float a = 1, factor = 1;
  int64_t n64 = N;
  int32_t n32 = N;
  memcpy(axpy_args[0], &px, 8), memcpy(axpy_args[1], &py, 8), memcpy(axpy_args[2], &a, 4);
  memcpy(axpy_args[3], &n64, 8);
  memcpy(scale_args[0], &py, 8), memcpy(scale_args[1], &factor, 4), memcpy(scale_args[2], &n32, 4);
  unsigned grid[3] = {N / 128, 1, 1}, block[3] = {128, 1, 1};
  launch_plan *p = launch_plan_new(2);
  launch_plan_add_kernel(p, axpy, "axpy", grid, block, 0, axpy_args, 4);
  launch_plan_add_kernel(p, scale, "scale", grid, block, 0, scale_args, 3);

  measure_kernels k = {0};
  CHECK(host_kernel(B, "fake", "evict.cu", "tb_evict_read", &k.evict_read) == GPU_OK, "%s", gpu_last_error());
  CHECK(host_kernel(B, "fake", "clock_probe.cu", "tb_clock_probe", &k.clock_probe) == GPU_OK, "%s", gpu_last_error());
  static measure_cache cache;
  measure_env env = {.gpu = B, .props = &fake.props, .stream = S, .buffer_sync_timeout_s = 1, .cache = &cache,
                     .kernels = k, .work = {run_launch_plan, p, launch_plan_kernels(p)}};
  for (int graph = 0; graph <= 1; graph++) {
    measure_opts o = measure_default_opts;
    o.mode = 1, o.repeat = 5, o.warmup = 1, o.graph = graph;
    char msg[256];
    CHECK(measure_opts_check(&o, msg, sizeof msg) == 0, "%s", msg);
    size_t ops_before = fake.n_ops;
    measure_result res;
    gpu_status st = measure_run(&env, &o, &res);
    CHECK(st == GPU_OK && res.code == NULL, "graph %d: %d %s", graph, st, res.message);
    CHECK(res.n == 5 && strcmp(res.clock, "cupti") == 0 && res.clock_reason[0] == '\0',
          "graph %d: %zu samples, clock %s (%s)", graph, res.n, res.clock, res.clock_reason);
    CHECK(fabs(res.summary.median - 2.5e-3) < 1e-9, "graph %d: median %g ms (axpy 2000 ns + scale 500 ns)", graph,
          res.summary.median);
    CHECK(res.kernels_per_run_median == 2 && res.graph == graph, "graph %d: %g kernels per run, graph %d", graph,
          res.kernels_per_run_median, res.graph);
    measure_result_free(&res);
    if (graph) break;
    /* eager: warm-up and kept runs, each right after an eviction */
    size_t runs = 0, evicted = 0;
    const char *prev = NULL;
    for (size_t i = ops_before; i < fake.n_ops; i++) {
      if (fake.ops[i].kind != FAKE_OP_KERNEL) continue;
      if (strcmp(fake.ops[i].kernel, "axpy") == 0) runs++, evicted += prev && strcmp(prev, "tb_evict_read") == 0;
      prev = fake.ops[i].kernel;
    }
    CHECK(runs == 6 && evicted == runs, "%zu of %zu runs evicted first", evicted, runs);
  }
  measure_cache_free(&cache, B);
  launch_plan_free(p);
  B->mem_free(px), B->mem_free(py);
}

static void verify_finds_planted_mismatches(void) {
  enum { N = 5000 };
  static float out[N], ref[N];
  for (int i = 0; i < N; i++) out[i] = ref[i] = (float)i * 0.25f;
  out[7] += 1.0f;              /* off by 1 */
  out[4000] = NAN;             /* NaN against a number */
  out[4999] += 0.005f;         /* past fp32's defaults: 1e-5 + 1.3e-6 * 1249.75 = 1.6e-3 */
  gpu_ptr po = upload(out, sizeof out), pr = upload(ref, sizeof ref);
  size_t in_use = fake.bytes_in_use;
  verify_device dev = {B, "fake", fake.props.sm_count, S, 1000};
  verify_operand o = {po, N, "fp32", 4, 1}, e = {pr, N, "fp32", 4, 1};
  verify_result *r = malloc(sizeof *r);
  gpu_status st = verify_compare(&dev, &o, &e, 1e-5, 1.3e-6, 2, r);
  CHECK(st == GPU_OK, "%s", gpu_last_error());
  CHECK(r->mismatches == 3 && r->nfirst == 2 && r->first[0].index == 7 && r->first[1].index == 4000, "%llu: %llu %llu",
        (unsigned long long)r->mismatches, (unsigned long long)r->first[0].index, (unsigned long long)r->first[1].index);
  double got;
  memcpy(&got, &r->first[0].got, sizeof got);
  CHECK(got == 1.0f + 7 * 0.25f && fabs(r->max_abs - 1.0) < 1e-3, "got %g max_abs %g", got, r->max_abs);
  CHECK(fake.bytes_in_use == in_use, "scratch not freed: %zu bytes", fake.bytes_in_use - in_use);
  /* The tolerances are the caller's: a looser one passes what a tight one fails. */
  CHECK(verify_compare(&dev, &o, &e, 2.0, 0, 8, r) == GPU_OK && r->mismatches == 1 && r->first[0].index == 4000,
        "atol 2: %llu", (unsigned long long)r->mismatches);

  /* Integers with atol = rtol = 0 are compared exactly (the exact flag reaches the kernel). */
  int32_t ia[4] = {1, 2, 3, 4}, ib[4] = {1, 2, 3, 5};
  gpu_ptr pa = upload(ia, sizeof ia), pb = upload(ib, sizeof ib);
  verify_operand ioa = {pa, 4, "int32", 4, 0}, iob = {pb, 4, "int32", 4, 0};
  CHECK(verify_compare(&dev, &ioa, &iob, 0, 0, 8, r) == GPU_OK && r->mismatches == 1 && r->first[0].expected == 5,
        "int32: %llu", (unsigned long long)r->mismatches);
  CHECK(verify_compare(&dev, &ioa, &iob, 1, 0, 8, r) == GPU_OK && r->mismatches == 0, "int32 within atol 1");
  /* No elements: nothing runs. */
  uint64_t ops = fake.n_ops;
  verify_operand none = {0, 0, "fp32", 4, 1};
  CHECK(verify_compare(&dev, &none, &none, 0, 0, 8, r) == GPU_OK && r->mismatches == 0 && fake.n_ops == ops, "empty");

  /* A failing compare names the kernel; a hung one says timeout; the scratch is freed either way. */
  fake.fail_kernel = "tb_compare_finish";
  st = verify_compare(&dev, &o, &e, 1e-5, 1.3e-6, 8, r);
  CHECK(st == GPU_ERR_FAULT && strncmp(gpu_last_error(), "compare tb_compare_fp32_fp32: fakeLaunchKernel: FAKE_ERROR", 57) == 0,
        "%s", gpu_last_error());
  fake.fail_kernel = NULL;
  fake.hang = 1;
  st = verify_compare(&dev, &o, &e, 1e-5, 1.3e-6, 8, r);
  CHECK(st == GPU_ERR_TIMEOUT && strncmp(gpu_last_error(), "timeout: compare tb_compare_fp32_fp32: ", 39) == 0, "%s",
        gpu_last_error());
  fake.hang = 0;
  CHECK(fake.bytes_in_use == in_use + sizeof ia + sizeof ib, "scratch leaked on failure");
  /* Out of memory for the scratch: the backend's own message. */
  fake.mem_limit = fake.bytes_in_use + 64;
  CHECK(verify_compare(&dev, &o, &e, 0, 0, 8, r) == GPU_ERR_OOM && strstr(gpu_last_error(), "fakeMemAlloc"), "%s",
        gpu_last_error());
  fake.mem_limit = 0;
  free(r);
}

int main(void) {
  char cache[] = "/tmp/tb-test-seam-XXXXXX";
  if (mkdtemp(cache) == NULL) return 1;
  setenv("TILEBENCH_CACHE_DIR", cache, 1);
  fake_reset();
  fake_register_module("host/kernels/verify.cu", verify_kernels);
  fake_register_module("plan.cu", plan_kernels);
  fake_register_module("host/kernels/evict.cu", evict_kernels);
  fake_register_module("host/kernels/clock_probe.cu", probe_kernels);
  backend_is_chosen_at_run_time();
  CHECK(B->stream_create(&S) == GPU_OK, "%s", gpu_last_error());
  host_kernels_compile_through_the_backend(cache);
  plan_runs_its_steps_in_order();
  plan_copies_through_the_driver();
  timer_measures_a_plan();
  verify_finds_planted_mismatches();
  fake_reset();
  host_kernels_forget();

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", cache);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
