/* test_measure.c: the timer's engine (host/measure/) on the fake backend, without CUDA or Lua:
 * sample counts and stopping rules, eviction placement, graph groups and their splitting, time =
 * kernel time (timestamps) or event time, the fallbacks, throttled clocks, and errors that reach
 * the caller with what failed. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "measure_fixture.h"
#include "measure/measure.h"

static int failures;
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)
#define NEAR(a, b, tol) CHECK(fabs((a) - (b)) <= (tol))
#define CHECKF(cond, ...)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__);        \
      fprintf(stderr, __VA_ARGS__);                                        \
      fprintf(stderr, "\n");                                              \
      failures++;                                                          \
    }                                                                      \
  } while (0)

/* ---- the host kernels and the work, as fake kernels ------------------------------------------ */

static unsigned long long last_evict_n16;
static gpu_status evict_read(const fake_launch *l) {
  last_evict_n16 = FAKE_ARG(l, 1, unsigned long long);
  return GPU_OK;
}

static const fake_kernel host_kernels[] = {
  {.name = "tb_evict_read", .run = evict_read, .duration_ns = 700, .nargs = 4, .arg_bytes = {8, 8, 8, 4}},
  {.name = "tb_evict_pages", .duration_ns = 100, .nargs = 5, .arg_bytes = {8, 8, 8, 8, 4}},
  {.name = "tb_clock_probe", .run = fixture_clock_probe, .duration_ns = 2000, .nargs = 2, .arg_bytes = {8, 4}},
  {.name = "work", .duration_ns = 3000},
  {.name = "work2", .duration_ns = 1000},
  {.name = "tb_evict_lookalike", .duration_ns = 1000},
  {NULL},
};

static gpu_function *fn_evict, *fn_pages, *fn_probe, *fn_work, *fn_work2, *fn_pages_as_work;
static int plan_kernels = 1;

static gpu_status run_plan(void *self, gpu_stream s) {
  unsigned one[3] = {1, 1, 1};
  gpu_status st = fake_backend()->launch(fn_work, one, one, 0, s, NULL);
  if (st == GPU_OK && plan_kernels == 2) st = fake_backend()->launch(fn_work2, one, one, 0, s, NULL);
  if (st == GPU_OK && plan_kernels == 3) /* a kernel named like the eviction: a marker to the split */
    st = fake_backend()->launch(fn_pages_as_work, one, one, 0, s, NULL);
  return st;
}

static measure_cache cache;
static gpu_device_props props;

/* A fresh fake device and engine cache; the default environment of a measurement. */
static measure_env setup(void) {
  measure_cache_free(&cache, NULL); /* fake_reset frees the backend's objects */
  fake_reset();
  props = fake.props;
  const gpu_backend *g = fake_backend();
  gpu_module *m = NULL;
  g->module_load_image(&m, host_kernels, 0);
  g->function_get(&fn_evict, m, "tb_evict_read");
  g->function_get(&fn_pages, m, "tb_evict_pages");
  g->function_get(&fn_probe, m, "tb_clock_probe");
  g->function_get(&fn_work, m, "work");
  g->function_get(&fn_work2, m, "work2");
  g->function_get(&fn_pages_as_work, m, "tb_evict_lookalike");
  gpu_stream s = NULL;
  g->stream_create(&s);
  plan_kernels = 1;
  fixture_probe_mhz = 1500;
  measure_env env = {.gpu = g, .props = &props, .stream = s, .buffer_sync_timeout_s = 1, .cache = &cache,
                     .kernels = {fn_evict, fn_pages, fn_probe}, .work = {run_plan, NULL, 1}};
  return env;
}

static measure_opts fixed_opts(int repeat, int warmup) {
  measure_opts o = measure_default_opts;
  o.mode = 1;
  o.repeat = repeat;
  o.warmup = warmup;
  return o;
}

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_fixed_timestamps_eager(void) {
  measure_env env = setup();
  measure_opts o = fixed_opts(7, 2);
  o.graph = 0;
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK);
  CHECK(r.code == NULL);
  CHECK(r.n == 7 && r.warmup == 2 && strcmp(r.stop_reason, "repeat") == 0 && strcmp(r.mode, "fixed") == 0);
  CHECK(strcmp(r.clock, "cupti") == 0 && r.clock_reason[0] == '\0');
  NEAR(r.summary.median, 3e-3, 1e-12); /* the work kernel's 3000 ns */
  NEAR(r.summary.stdev, 0, 1e-15);
  NEAR(r.events_summary.median, 3e-3, 1e-9);
  CHECK(fake_count(FAKE_OP_KERNEL, "work") == 9); /* warm-up + kept */
  /* an eviction right before every run: the kernel before each 'work' is tb_evict_read */
  size_t before_work_is_evict = 0, works = 0;
  const char *prev = NULL;
  for (size_t i = 0; i < fake.n_ops; i++) {
    if (fake.ops[i].kind != FAKE_OP_KERNEL) continue;
    if (strcmp(fake.ops[i].kernel, "work") == 0) {
      works++;
      before_work_is_evict += prev && strcmp(prev, "tb_evict_read") == 0;
    }
    prev = fake.ops[i].kernel;
  }
  CHECK(works == 9 && before_work_is_evict == 9);
  CHECK(last_evict_n16 == 2 * props.l2_bytes / 16); /* default eviction: 2 x L2 */
  CHECK(r.flush_bytes == 2 * props.l2_bytes && strcmp(r.flush_mode, "read") == 0);
  NEAR(r.evict_s, 9 * 700e-9, 1e-12); /* (float milliseconds) */ /* the evictions' kernel time, warm-up included */
  NEAR(r.gpu_busy_s, 9 * 3700e-9, 1e-12);
  CHECK(r.clock_checked && r.sm_clock_mhz == 1500 && strcmp(r.throttle_filter, "on") == 0);
  CHECK(r.graph == 0 && r.graph_group == 1);
  CHECK(r.kernels_per_run_median == 1);
  measure_result_free(&r);

  /* a plan of two kernels: their sum, counted as two */
  env = setup();
  plan_kernels = 2;
  env.work.kernels = 2;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  NEAR(r.summary.median, 4e-3, 1e-12);
  CHECK(r.kernels_per_run_median == 2);
  measure_result_free(&r);
}

static void test_events_and_fallbacks(void) {
  measure_env env = setup();
  measure_opts o = fixed_opts(5, 0);
  o.clock = 1; /* events */
  o.graph = 0;
  fake.gap_ns = 50; /* events see the launch gap, timestamps do not */
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(strcmp(r.clock, "events") == 0 && r.clock_reason[0] == '\0' && r.n == 5);
  NEAR(r.summary.median, 3.05e-3, 1e-9);
  measure_result_free(&r);

  env = setup();
  fake.timestamps_absent = 1;
  o.clock = 0;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(strcmp(r.clock, "events") == 0 && strstr(r.clock_reason, "fake.timestamps_absent"));
  measure_result_free(&r);

  /* records that carry no id: trace every API once, then fall back to events, keeping samples */
  env = setup();
  fake.timestamps_untagged = 1;
  o = fixed_opts(5, 1);
  o.graph = 0;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(fake.trace_all_api == 1);
  CHECK(strcmp(r.clock, "events") == 0 && strstr(r.clock_reason, "no kernel record tagged"));
  CHECK(r.n == 5);
  measure_result_free(&r);

  /* a run whose record lacks timestamps is dropped as incomplete and replaced */
  env = setup();
  o = fixed_opts(5, 0);
  o.graph = 0;
  o.clock_check = 0;
  fake.timestamps_incomplete_at = 4; /* kernels: evict, work, evict, work: the second run */
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(r.dropped_incomplete == 1 && r.n == 5 && strcmp(r.clock, "cupti") == 0);
  NEAR(r.summary.max, 3e-3, 1e-12);
  measure_result_free(&r);

  /* the memset eviction: a memset, not a kernel, before every run */
  env = setup();
  o = fixed_opts(4, 0);
  o.graph = 0;
  o.flush_mode = 1;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(fake_count(FAKE_OP_KERNEL, "tb_evict_read") == 0 && fake_count(FAKE_OP_MEMSET, NULL) == 4 + 1 /* fill */);
  CHECK(strcmp(r.flush_mode, "write") == 0);
  measure_result_free(&r);
}

static void test_graph_groups(void) {
  measure_env env = setup();
  measure_opts o = fixed_opts(8, 1);
  o.graph_group = 4;
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(r.graph == 1 && r.graph_group == 4 && r.group_reason[0] == '\0');
  CHECK(r.n == 8);
  NEAR(r.summary.median, 3e-3, 1e-12); /* each sample's own kernel, split at the evictions */
  NEAR(r.summary.max, 3e-3, 1e-12);
  CHECK(strcmp(r.clock, "cupti") == 0);
  /* two launches of the group graph (8 samples), one of the plain graph (warm-up) */
  CHECK(fake.graph_launches == 2 + 1);
  CHECK(fake_count(FAKE_OP_KERNEL, "work") == 9);
  /* in a group launch, every run follows its eviction */
  size_t evict_then_work = 0;
  for (size_t i = 1; i < fake.n_ops; i++)
    if (fake.ops[i].kind == FAKE_OP_KERNEL && fake.ops[i].in_graph && strcmp(fake.ops[i].kernel, "work") == 0) {
      size_t j = i - 1;
      while (j > 0 && fake.ops[j].kind != FAKE_OP_KERNEL) j--;
      evict_then_work += strcmp(fake.ops[j].kernel, "tb_evict_read") == 0;
    }
  CHECK(evict_then_work == 9); /* the warm-up's plain graph launches too */
  measure_result_free(&r);

  /* records that do not split into samples (the plan's kernel looks like an eviction): back to a
   * graph launch per run, saying why, and still 8 samples */
  env = setup();
  plan_kernels = 3;
  o.graph_group = 4;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(r.graph_group == 1 && strstr(r.group_reason, "split into samples for 0 of 8 samples"));
  CHECK(r.n == 8 && r.graph == 1);
  NEAR(r.summary.median, 4e-3, 1e-12); /* work + the look-alike */
  measure_result_free(&r);

  /* a record without timestamps in a group launch spoils that launch's samples only */
  env = setup();
  o = fixed_opts(8, 1);
  o.graph_group = 4;
  o.clock_check = 0;
  fake.timestamps_incomplete_at = 5; /* warm-up: kernels 1-2; the first group launch: 3-10 */
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(r.graph_group == 4 && r.dropped_incomplete == 4 && r.n == 8);
  measure_result_free(&r);

  /* groups need timestamps: with events, the reason is given */
  env = setup();
  o.clock = 1;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(r.graph_group == 1 && strstr(r.group_reason, "CUPTI clock"));
  measure_result_free(&r);
}

static double noisy_duration(const char *kernel, uint64_t nth, void *user) {
  if (strcmp(kernel, "work") != 0) return 500;
  return 3000 + (double)(nth % 7) * 100;
}

static void test_adaptive(void) {
  measure_env env = setup();
  measure_opts o = measure_default_opts;
  o.min_time = 0;
  o.min_samples = 12;
  fake.busy_polls = 3; /* the stream looks busy for a few queries after each submission */
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(strcmp(r.mode, "adaptive") == 0 && r.warmup == 3);
  CHECK(strcmp(r.stop_reason, "converged") == 0); /* no noise: converged at min_samples */
  CHECK(r.n >= 12);
  NEAR(r.summary.median, 3e-3, 1e-12);
  measure_result_free(&r);

  /* noisy durations and a sample cap: stops at max_samples */
  env = setup();
  o.max_noise = 1e-9;
  o.noise_plateau = 0;
  o.max_samples = 40;
  o.graph = 0; /* graph groups would round batches up to whole launches */
  o.min_samples = 10;
  fake.duration = noisy_duration;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(strcmp(r.stop_reason, "max_samples") == 0 && r.n == 40);
  CHECK(r.summary.stdev > 0);
  measure_result_free(&r);
}

static void test_throttle(void) {
  measure_env env = setup();
  measure_opts o = fixed_opts(20, 0);
  o.sustained_clock = 0;
  o.timeout = 1;
  fixture_probe_mhz = 700; /* under 90 % of 1500 */
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK);
  CHECK(r.code && strcmp(r.code, "throttled") == 0 && strstr(r.message, "under 90% of the 1500 MHz"));
  measure_result_free(&r);

  env = setup();
  o.sustained_clock = 1;
  fixture_probe_mhz = 700;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL);
  CHECK(strcmp(r.throttle_filter, "sustained") == 0 && r.n == 20 && r.sm_clock_mhz == 700);
  measure_result_free(&r);
}

static void test_errors(void) {
  /* a launch that fails mid-measurement: the status and what failed reach the caller */
  measure_env env = setup();
  measure_opts o = fixed_opts(10, 2);
  o.graph = 0;
  o.clock_check = 0;
  fake.fail_launch_at = 10; /* kernels: evict, work per sample; the 10th is a run */
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_ERR_FAULT);
  CHECK(strstr(r.message, "running the plan: fakeLaunchKernel") != NULL);
  CHECK(strcmp(r.error_api, "fakeLaunchKernel") == 0); /* for the structured error (tb_raise) */
  measure_result_free(&r);

  env = setup();
  o.graph = 0;
  fake.fail_kernel = "tb_evict_read";
  fake.fail_launch_at = 0;
  CHECK(measure_run(&env, &o, &r) == GPU_ERR_FAULT);
  CHECK(strncmp(r.message, "cache eviction (evict.cu): ", 27) == 0);

  /* a hung batch: "timeout:" first, within sync_timeout */
  env = setup();
  o.sync_timeout = 0.01;
  fake.hang = 1;
  CHECK(measure_run(&env, &o, &r) == GPU_ERR_TIMEOUT);
  CHECK(strncmp(r.message, "timeout: waiting for the plan's runs: ", 38) == 0);
  CHECK(strstr(r.message, "did not finish within sync_timeout = 0.01 s") != NULL);

  /* no memory for the eviction buffer: a case status, not an error */
  env = setup();
  fake.mem_limit = props.l2_bytes;
  o = fixed_opts(3, 0);
  CHECK(measure_run(&env, &o, &r) == GPU_OK);
  CHECK(r.code && strcmp(r.code, "oom") == 0 && strstr(r.message, "eviction buffer"));

  /* a plan that does not capture runs eagerly, saying why */
  env = setup();
  o = fixed_opts(3, 0);
  fake.fail_kernel = "work";
  fake.fail_status = GPU_ERR_INVALID;
  /* capture records, it does not run: the failure comes at the first replay */
  CHECK(measure_run(&env, &o, &r) == GPU_ERR_INVALID);
  CHECK(strstr(r.message, "running the plan's graph: ") != NULL);
}

static void test_clock_probe(void) {
  measure_env env = setup();
  fixture_probe_mhz = 1234;
  measure_probe_result p;
  measure_result err;
  CHECK(measure_clock_probe(&env, 2000, &p, &err) == GPU_OK);
  NEAR(p.mhz, 1234, 1e-9);
  CHECK(p.sms == (size_t)props.sm_count && p.window_ns == 2000);
}

static void test_option_table(void) {
  /* the 'mode' option's choices are the modes, in order */
  const measure_opt_desc *mode = measure_option_find("mode");
  CHECK(mode && mode->type == MEASURE_OPT_CHOICE);
  char want[256] = "";
  for (size_t i = 0; i < measure_n_modes; i++) {
    if (i) strcat(want, " ");
    strcat(want, measure_modes[i].name);
  }
  CHECK(strcmp(mode->choices, want) == 0);
  measure_opts o = measure_default_opts;
  char msg[256];
  CHECK(measure_option_set_choice(&o, mode, "fixed", msg, sizeof msg) == 0 && o.mode == 1);
  CHECK(measure_option_set_choice(&o, mode, "slow", msg, sizeof msg) == -1 &&
        strcmp(msg, "option 'mode' must be one of: adaptive fixed") == 0);
  const measure_opt_desc *rep = measure_option_find("repeat");
  CHECK(measure_option_set_number(&o, rep, 2.5, msg, sizeof msg) == -1 &&
        strcmp(msg, "option 'repeat' must be an integer in [1, 1e+07]") == 0);
  CHECK(measure_option_set_number(&o, rep, NAN, msg, sizeof msg) == -1);
  CHECK(measure_option_set_number(&o, rep, 5, msg, sizeof msg) == 0 && o.repeat == 5);
  CHECK(measure_option_set_boolean(&o, rep, 1, msg, sizeof msg) == -1);
  CHECK(measure_option_find("nope") == NULL);
  o = measure_default_opts;
  o.flush_mode = 1;
  o.flush_tlb_bytes = 1 << 21;
  CHECK(measure_opts_check(&o, msg, sizeof msg) == -1 && strstr(msg, "flush_tlb_bytes"));
  /* every row names a field of the right width inside measure_opts */
  for (size_t i = 0; i < measure_n_options; i++) {
    const measure_opt_desc *d = &measure_options[i];
    size_t width = d->type == MEASURE_OPT_BOOLEAN || d->type == MEASURE_OPT_CHOICE ? sizeof(int) : sizeof(double);
    CHECK(d->offset + width <= sizeof(measure_opts));
    CHECK(d->desc && strlen(d->desc) > 10 && d->def);
  }
  /* the default each row declares (what --help and the docs show) is measure_default_opts' value,
   * where the declaration is a plain value: a choice's name, true/false, or a number */
  for (size_t i = 0; i < measure_n_options; i++) {
    const measure_opt_desc *d = &measure_options[i];
    const char *field = (const char *)&measure_default_opts + d->offset;
    if (d->type == MEASURE_OPT_CHOICE) {
      int v = *(const int *)field, k = 0;
      const char *c = d->choices;
      char name[64] = "";
      while (*c) { /* the v-th space-separated choice */
        size_t len = strcspn(c, " ");
        if (k == v && len < sizeof name) { memcpy(name, c, len); name[len] = '\0'; }
        c += len;
        while (*c == ' ') c++;
        k++;
      }
      CHECKF(strcmp(name, d->def) == 0, "option %s: default %s, declared %s", d->name, name, d->def);
    } else if (d->type == MEASURE_OPT_BOOLEAN) {
      int v = *(const int *)field;
      CHECKF(strcmp(d->def, v ? "true" : "false") == 0, "option %s: default %d, declared %s", d->name, v, d->def);
    } else {
      char *end;
      double declared = strtod(d->def, &end);
      if (end != d->def && *end == '\0') {
        double v = *(const double *)field;
        CHECKF(fabs(v - declared) <= 1e-12 * fabs(declared), "option %s: default %g, declared %s", d->name, v, d->def);
      }
    }
  }
}

int main(void) {
  test_option_table();
  test_fixed_timestamps_eager();
  test_events_and_fallbacks();
  test_graph_groups();
  test_adaptive();
  test_throttle();
  test_errors();
  test_clock_probe();
  measure_cache_free(&cache, NULL);
  fake_reset();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("measure engine on the fake backend: ok\n");
  return 0;
}
