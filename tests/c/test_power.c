/* test_power.c: the power and clock state around a measurement (host/measure/power.c, nvml.c) and
 * the equal-conditions modes, on the fake backend (no GPU): NVML absent is a recorded reason and
 * never a failure, the share of samples under a cap, the cool-down's bound and its idle test,
 * the interleaved order of a group's batches (A B A B ...), the cold reading, the clock-settle
 * rule holding back a converged measurement under a cap, capped_exposure and its preload, the
 * heavy test on the instantaneous power (the average as the fallback) and the heavy probe. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "measure_fixture.h"
#include "measure/measure.h"

static const fake_kernel kernels[] = {
  {.name = "tb_evict_read", .duration_ns = 700, .nargs = 4, .arg_bytes = {8, 8, 8, 4}},
  {.name = "tb_clock_probe", .run = fixture_clock_probe, .duration_ns = 2000, .nargs = 2, .arg_bytes = {8, 4}},
  {.name = "work_a", .duration_ns = 100000},
  {.name = "work_b", .duration_ns = 200000},
  {NULL},
};

static gpu_function *fn_evict, *fn_probe, *fn_a, *fn_b;

static gpu_status run_fn(void *self, gpu_stream s) {
  unsigned one[3] = {1, 1, 1};
  return fake_backend()->launch((gpu_function *)self, one, one, 0, s, NULL);
}

static measure_cache cache;
static gpu_device_props props;

static measure_env setup(void) {
  measure_cache_free(&cache, NULL);
  fake_reset();
  props = fake.props;
  const gpu_backend *g = fake_backend();
  gpu_module *m = NULL;
  g->module_load_image(&m, kernels, 0);
  g->function_get(&fn_evict, m, "tb_evict_read");
  g->function_get(&fn_probe, m, "tb_clock_probe");
  g->function_get(&fn_a, m, "work_a");
  g->function_get(&fn_b, m, "work_b");
  gpu_stream s = NULL;
  g->stream_create(&s);
  fixture_probe_mhz = 1500;
  measure_env env = {.gpu = g, .props = &props, .stream = s, .buffer_sync_timeout_s = 1, .cache = &cache,
                     .kernels = {fn_evict, NULL, fn_probe}, .work = {run_fn, fn_a, 1}};
  return env;
}

static measure_opts quick(void) {
  measure_opts o = measure_default_opts;
  o.min_time = 0.002;
  o.timeout = 5;
  o.graph = 0; /* eager: one kernel per run in fake.ops, easy to read */
  /* the heavy level these tests' readings were written around (420 W of the fake's 700 W); the
   * default's own level is checked in test_heavy_level */
  o.heavy_power = 0.6;
  return o;
}

/* ---- NVML itself: absent library ------------------------------------------------------------ */
static void test_nvml_missing(void) {
  setenv("TILEBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  gpu_device_props p = {0};
  snprintf(p.pci_bus_id, sizeof p.pci_bus_id, "0000:19:00.0");
  gpu_status st = gpu_nvml_power.open(&p);
  CHECK(st == GPU_ERR_NO_LIBRARY, "open without NVML: status %d", (int)st);
  CHECK(strstr(gpu_last_error(), "/nonexistent/libnvidia-ml.so.1") != NULL, "message: %s", gpu_last_error());
  CHECK(gpu_nvml_power.open(&p) == GPU_ERR_NO_LIBRARY, "a second open gives the same outcome");
  gpu_power_reading rd;
  CHECK(gpu_nvml_power.read(&rd) != GPU_OK && rd.power_w < 0 && rd.sm_clock_mhz < 0, "read without a device fails");
  double w = 0;
  CHECK(gpu_nvml_power.limit_w(&w) != GPU_OK, "no limit without a device");
  unsetenv("TILEBENCH_NVML_LIB");
}

/* ---- the engine without a power source: samples as before, the reason recorded --------------- */
static void test_source_absent(void) {
  measure_env env = setup();
  fake.power_absent = 1;
  measure_opts o = quick();
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measures without a power source");
  CHECK(r.n >= 10 && !r.power_read && r.power_readings == 0, "n %zu read %d", r.n, r.power_read);
  CHECK(strstr(r.power_reason, "fake power source absent") != NULL, "reason: %s", r.power_reason);
  CHECK(fake.power_reads == 0, "no read without an open source");
  measure_result_free(&r);
}

/* ---- power = false: the source is never opened nor read, and the reason says why ----------- */
static void test_power_off(void) {
  measure_env env = setup();
  fake.power_absent = 0;
  fake.power_reads = 0;
  measure_opts o = quick();
  o.power = 0;
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measures with power = false");
  CHECK(r.n >= 10 && !r.power_read && r.power_readings == 0, "n %zu read %d", r.n, r.power_read);
  CHECK(strstr(r.power_reason, "power = false") != NULL, "reason: %s", r.power_reason);
  CHECK(fake.power_reads == 0, "no reading with power = false (%d)", (int)fake.power_reads);
  measure_result_free(&r);
  o.power = 1; /* and on again: the same source is read */
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && r.power_readings > 0 && fake.power_reads > 0,
        "readings with power = true: %zu", (size_t)r.power_readings);
  measure_result_free(&r);
}

/* ---- readings: cap share, reasons, medians ------------------------------------------------- */
static void every_other_capped(uint64_t nth, gpu_power_reading *out, void *user) {
  (void)user;
  out->reasons = nth % 2 ? GPU_CAP_SW_POWER : 0;
  out->power_w = nth % 2 ? 700 : 500;
  out->sm_clock_mhz = 1400;
}

static void test_cap_fraction(void) {
  measure_env env = setup();
  fake.power_reading = (gpu_power_reading){.reasons = GPU_CAP_SW_POWER | GPU_CAP_HW_THERMAL, .power_w = 690,
                                           .sm_clock_mhz = 1410};
  measure_opts o = quick();
  o.settle_window = 0; /* this test is about the readings, not the stopping */
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.power_read && r.power_readings >= 2, "readings %zu", r.power_readings);
  CHECK(r.cap_fraction == 1.0, "every sample capped: %g", r.cap_fraction);
  CHECK(r.cap_reasons == (GPU_CAP_SW_POWER | GPU_CAP_HW_THERMAL), "reasons %x", r.cap_reasons);
  CHECK(r.power_w == 690 && r.power_max_w == 690 && r.nvml_sm_clock_mhz == 1410, "power %g clock %g", r.power_w,
        r.nvml_sm_clock_mhz);
  char names[128];
  CHECK(strcmp(measure_cap_names(r.cap_reasons, names, sizeof names), "sw_power_cap,hw_thermal") == 0, "%s", names);
  measure_result_free(&r);

  env = setup();
  fake.power_fn = every_other_capped;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.cap_fraction > 0.2 && r.cap_fraction < 0.8, "about half capped: %g", r.cap_fraction);
  CHECK(r.power_max_w == 700 && r.power_w >= 500 && r.power_w <= 700, "power %g", r.power_w);
  measure_result_free(&r);

  env = setup(); /* nothing capped */
  fake.power_reading = (gpu_power_reading){.reasons = GPU_STATE_IDLE, .power_w = 90, .sm_clock_mhz = 1980};
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.cap_fraction == 0 && r.cap_reasons == 0, "idle is no cap");
  measure_result_free(&r);
}

/* ---- the cool-down ------------------------------------------------------------------------- */
static void test_idle_rule(void) {
  gpu_power_reading rd[20];
  for (int i = 0; i < 20; i++) rd[i] = (gpu_power_reading){.reasons = 0, .power_w = 400 - 10 * i, .sm_clock_mhz = 1980};
  CHECK(!measure_power_idle(rd, 0, 0), "no reading: not idle");
  CHECK(!measure_power_idle(rd, 5, 0), "falling, no floor: not idle");
  CHECK(measure_power_idle(rd, 5, 355), "at the floor (5 %% + 5 W)");
  rd[4].reasons = GPU_CAP_SW_POWER;
  CHECK(!measure_power_idle(rd, 5, 1000), "a cap is never idle");
  for (int i = 0; i < 20; i++) rd[i] = (gpu_power_reading){.power_w = 120 + (i % 2), .sm_clock_mhz = 1980};
  CHECK(measure_power_idle(rd, 12, 0), "flat for 0.5 s: idle");
  CHECK(!measure_power_idle(rd, 10, 0), "not yet 0.5 s of readings");
  for (int i = 0; i < 20; i++) rd[i] = (gpu_power_reading){.power_w = -1, .sm_clock_mhz = -1};
  CHECK(!measure_power_idle(rd, 5, 0) && measure_power_idle(rd, 11, 0), "no power figure: 0.5 s without a cap");
}

static void cooling(uint64_t nth, gpu_power_reading *out, void *user) {
  (void)user; /* capped for the first 4 reads, then power falling to a plateau of 100 W */
  out->reasons = nth <= 4 ? GPU_CAP_SW_POWER : 0;
  out->power_w = nth < 10 ? 700 - 60.0 * (double)nth : 100;
  out->sm_clock_mhz = 1500;
}

static void test_cooldown(void) {
  measure_env env = setup();
  fake.power_fn = cooling;
  measure_opts o = quick();
  o.conditions = 1; /* cooldown */
  o.cooldown_max = 3;
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.cooldowns == 1 && r.cooldowns_bounded == 0, "one cool-down, ended idle (%zu bounded)", r.cooldowns_bounded);
  CHECK(r.cooldown_s > 0.3 && r.cooldown_s < 2.5, "waited for the plateau: %g s", r.cooldown_s);
  CHECK(strcmp(r.conditions, "cooldown") == 0, "%s", r.conditions);
  measure_result_free(&r);

  env = setup(); /* never idle: bounded by cooldown_max */
  fake.power_reading = (gpu_power_reading){.reasons = GPU_CAP_HW_SLOWDOWN, .power_w = 700, .sm_clock_mhz = 1000};
  o.cooldown_max = 0.2;
  o.settle_window = 0;
  double t0 = measure_wall_now();
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.cooldowns == 1 && r.cooldowns_bounded == 1 && r.cooldown_s < 0.4, "bounded: %g s", r.cooldown_s);
  CHECK(measure_wall_now() - t0 < 2, "the bound holds");
  measure_result_free(&r);

  env = setup(); /* no source: a fixed pause of min(cooldown_max, 1) s */
  fake.power_absent = 1;
  o.cooldown_max = 0.1;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.cooldowns == 1 && r.cooldown_s >= 0.09 && r.cooldown_s < 0.5, "pause %g", r.cooldown_s);
  measure_result_free(&r);
}

/* ---- cold reading: one sample a batch, each after a cool-down ------------------------------- */
static void test_cold(void) {
  measure_env env = setup();
  fake.power_reading = (gpu_power_reading){.power_w = 100, .sm_clock_mhz = 1500};
  measure_opts o = quick();
  o.reading = 1;
  o.min_samples = 4;
  o.min_time = 0;
  o.graph = 1; /* graph groups would put samples back to back: the cold reading asks for none */
  fixture_probe_mhz = 500; /* a clock under the threshold after idle is the reading: nothing dropped */
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.n >= 4 && r.cooldowns == r.batches - 1, "a cool-down per sample (one warm-up batch): %zu for %zu batches",
        r.cooldowns, r.batches);
  CHECK(r.graph_group == 1 && r.dropped_throttled == 0 && strcmp(r.throttle_filter, "cold") == 0, "filter %s",
        r.throttle_filter);
  CHECK(strcmp(r.reading, "cold") == 0, "%s", r.reading);
  measure_result_free(&r);
}

/* ---- interleaved rounds -------------------------------------------------------------------- */
static void test_interleave_order(void) {
  measure_env envs[2];
  envs[0] = setup();
  envs[1] = envs[0];
  envs[1].work.self = fn_b;
  measure_opts o = quick();
  o.conditions = 0; /* interleave (the default; the runner groups a case's implementations) */
  o.min_time = 0.1; /* 100 and 200 us samples: several rounds of MEASURE_ROUND_S (20 ms) */
  o.min_samples = 10;
  o.max_noise = 1; /* converged once min_time is covered */
  measure_result r[2];
  size_t failed = 9;
  CHECK(measure_run_group(envs, 2, &o, r, &failed) == GPU_OK, "group measured");
  CHECK(r[0].code == NULL && r[1].code == NULL, "both kept samples");
  CHECK(fabs(r[0].summary.median - 0.1) < 1e-9 && fabs(r[1].summary.median - 0.2) < 1e-9, "a %g b %g",
        r[0].summary.median, r[1].summary.median);
  /* the sequence of work kernels: warm-ups a then b, then blocks alternating a, b, a, b */
  size_t blocks = 0;
  const char *prev = NULL;
  char order[64] = "";
  for (size_t i = 0; i < fake.n_ops; i++) {
    const fake_op *op = &fake.ops[i];
    if (op->kind != FAKE_OP_KERNEL || strncmp(op->kernel, "work_", 5) != 0) continue;
    if (prev == NULL || strcmp(prev, op->kernel) != 0) {
      if (blocks < sizeof order - 1) order[blocks] = op->kernel[5];
      blocks++;
      prev = op->kernel;
    }
  }
  CHECK(strncmp(order, "abababab", 8) == 0, "alternating blocks: %s", order);
  CHECK(r[0].rounds >= 3 && r[1].rounds >= 3, "rounds %zu %zu", r[0].rounds, r[1].rounds);
  CHECK(strcmp(r[0].conditions, "interleave") == 0, "%s", r[0].conditions);
  /* each batch of the interleaved rounds covers about MEASURE_ROUND_S: a of 100 us, at most ~200 */
  CHECK(r[0].n / r[0].rounds <= (size_t)(MEASURE_ROUND_S / 100e-6) + 2, "n %zu over %zu rounds", r[0].n, r[0].rounds);
  measure_result_free(&r[0]);
  measure_result_free(&r[1]);

  /* the default protocol: each plan as a graph, samples in graph groups (one launch per group,
   * split by the eviction markers), the works still alternating and timed exactly */
  envs[0] = setup();
  envs[1] = envs[0];
  envs[1].work.self = fn_b;
  measure_opts g = o;
  g.graph = 1;
  CHECK(measure_run_group(envs, 2, &g, r, &failed) == GPU_OK && r[0].code == NULL && r[1].code == NULL, "grouped");
  CHECK(r[0].graph && r[0].graph_group > 1 && r[1].graph_group > 1, "graph groups %zu %zu", r[0].graph_group,
        r[1].graph_group);
  CHECK(fabs(r[0].summary.median - 0.1) < 1e-9 && fabs(r[1].summary.median - 0.2) < 1e-9, "a %g b %g",
        r[0].summary.median, r[1].summary.median);
  CHECK(r[0].rounds >= 3 && r[1].rounds >= 3 && r[0].dropped_incomplete == 0, "rounds %zu %zu", r[0].rounds,
        r[1].rounds);
  measure_result_free(&r[0]);
  measure_result_free(&r[1]);

  /* a failure in the second work names it */
  envs[0] = setup();
  envs[1] = envs[0];
  envs[1].work.self = fn_b;
  fake.fail_kernel = "work_b";
  CHECK(measure_run_group(envs, 2, &o, r, &failed) == GPU_ERR_FAULT, "the group fails");
  CHECK(failed == 1 && strstr(r[1].message, "running the plan") != NULL, "failed %zu: %s", failed, r[1].message);
}

/* ---- the clock-settle rule in the engine ---------------------------------------------------- */
static double ramp_t0;
static gpu_status ramp_probe(const fake_launch *l) {
  /* the clock falls from 1500 to 1000 MHz over the first 50 ms of fake GPU time, then holds */
  double t = fake.now_ns * 1e-9 - ramp_t0;
  fixture_probe_mhz = t < 0.05 ? 1500 - 10000 * t : 1000;
  return fixture_clock_probe(l);
}

static void test_settle_in_engine(void) {
  static fake_kernel ramped[sizeof kernels / sizeof kernels[0]];
  memcpy(ramped, kernels, sizeof kernels);
  ramped[1].run = ramp_probe;
  measure_env env = setup();
  gpu_module *m = NULL;
  fake_backend()->module_load_image(&m, ramped, 0);
  fake_backend()->function_get(&env.kernels.clock_probe, m, "tb_clock_probe");
  fake.power_reading = (gpu_power_reading){.reasons = GPU_CAP_SW_POWER, .power_w = 700, .sm_clock_mhz = 1200};
  ramp_t0 = 0;
  measure_opts o = quick();
  o.capped_exposure = 0; /* the settle rule decides only where no fixed exposure applies */
  o.min_time = 0.002;
  o.settle_window = 0.01;
  o.throttle_threshold = 0; /* keep every sample: the rule under test is the settle rule */
  measure_result r;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(strcmp(r.stop_reason, "converged") == 0 && r.clock_settled && r.settle_waits > 0, "stop %s settled %d waits %zu",
        r.stop_reason, r.clock_settled, r.settle_waits);
  CHECK(r.gpu_busy_s > 0.05, "sampled past the ramp: %g s", r.gpu_busy_s);
  measure_result_free(&r);

  env = setup(); /* the same ramp without a cap: the time alone decides, as before */
  env.kernels.clock_probe = NULL;
  fake_backend()->module_load_image(&m, ramped, 0);
  fake_backend()->function_get(&env.kernels.clock_probe, m, "tb_clock_probe");
  ramp_t0 = fake.now_ns * 1e-9;
  fake.power_reading = (gpu_power_reading){.power_w = 300, .sm_clock_mhz = 1500};
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(strcmp(r.stop_reason, "converged") == 0 && r.settle_waits == 0 && r.gpu_busy_s < 0.05, "busy %g waits %zu",
        r.gpu_busy_s, r.settle_waits);
  measure_result_free(&r);
}

/* ---- capped_exposure: a capped or heavy load is sampled for a fixed GPU time ------------------ */
static void test_exposure(void) {
  measure_opts o = quick();
  o.capped_exposure = 0.03;
  o.capped_preload = 0; /* the preload is tested below */
  o.throttle_threshold = 0; /* every sample kept: the rule under test is the exposure */
  measure_result r;
  struct {
    gpu_power_reading rd;
    int heavy;
    const char *why;
  } loads[] = {
    {{.power_w = 600, .sm_clock_mhz = 1500}, 1, "600 W of a 700 W limit, no cap: heavy"},
    {{.reasons = GPU_CAP_SW_POWER, .power_w = 300, .sm_clock_mhz = 1200}, 1, "under the power cap"},
    {{.power_w = 300, .sm_clock_mhz = 1500}, 0, "300 W, no cap: light, the noise rule decides"},
  };
  for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
    measure_env env = setup();
    fake.power_reading = loads[i].rd;
    CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "%s: measured", loads[i].why);
    if (loads[i].heavy) {
      CHECK(r.exposure && strcmp(r.stop_reason, "exposure") == 0, "%s: exposure %d stop %s", loads[i].why, r.exposure,
            r.stop_reason);
      /* work_a is 100 us and each sample adds an eviction: the last batch may pass the exposure by one sample */
      CHECK(r.exposed_s >= 0.03 && r.exposed_s < 0.03 + 0.0002, "%s: exposed %g s", loads[i].why, r.exposed_s);
      /* the measurement's GPU busy time adds the clock probes to the samples' time */
      CHECK(r.gpu_busy_s >= r.exposed_s && r.gpu_busy_s < 1.02 * r.exposed_s, "%s: busy %g s, exposed %g s",
            loads[i].why, r.gpu_busy_s, r.exposed_s);
    } else {
      CHECK(!r.exposure && strcmp(r.stop_reason, "converged") == 0 && r.exposed_s < 0.03, "%s: exposure %d stop %s "
            "exposed %g s", loads[i].why, r.exposure, r.stop_reason, r.exposed_s);
    }
    measure_result_free(&r);
  }
  /* off: the same heavy load stops by the noise rule */
  measure_env env = setup();
  fake.power_reading = loads[0].rd;
  o.capped_exposure = 0;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && !r.exposure &&
        strcmp(r.stop_reason, "converged") == 0, "off: stop %s", r.stop_reason);
  measure_result_free(&r);
  /* capped_preload: the load runs that long first and its samples are dropped; the exposure and
   * the kept samples come after it */
  env = setup();
  fake.power_reading = loads[0].rd;
  o.capped_exposure = 0.03;
  o.capped_preload = 0.05;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && r.exposure && strcmp(r.stop_reason, "exposure") == 0,
        "preload: stop %s", r.stop_reason);
  /* dropped: the batch that found the load heavy, then the preload */
  CHECK(r.preloaded_s >= 0.05 && r.preloaded_s < 0.06, "preloaded %g s", r.preloaded_s);
  CHECK(r.exposed_s >= 0.03 && r.exposed_s < 0.03 + 0.0002, "exposed after the preload %g s", r.exposed_s);
  /* the kept samples are the exposure's only (each about 0.1 ms with its eviction) */
  CHECK(r.n > 0 && (double)r.n * 1e-4 < 0.03 * 1.1, "kept %zu samples", r.n);
  CHECK(r.gpu_busy_s >= r.preloaded_s + r.exposed_s, "busy %g s >= preload + exposure", r.gpu_busy_s);
  measure_result_free(&r);
  /* light load: no preload either */
  env = setup();
  fake.power_reading = loads[2].rd;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && !r.exposure && r.preloaded_s == 0,
        "light: preloaded %g", r.preloaded_s);
  measure_result_free(&r);
  o.capped_preload = 0;
  /* a heavy load whose exposure the timeout cuts: the timeout says so */
  env = setup();
  fake.power_reading = loads[0].rd;
  o.capped_exposure = 1000;
  o.timeout = 0.2;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && r.exposure && strcmp(r.stop_reason, "timeout") == 0,
        "cut by the timeout: stop %s", r.stop_reason);
  measure_result_free(&r);
}

/* ---- the clock test: the probe clock under heavy_clock of the max makes a load heavy -------- */
static void test_clock_heavy(void) {
  measure_opts o = quick();
  o.capped_exposure = 0.03;
  o.capped_preload = 0;
  o.throttle_threshold = 0; /* every sample kept: the rule under test is the heavy test */
  measure_result r;
  struct {
    double mhz, heavy_clock;
    int heavy;
    const char *why;
  } loads[] = {
    {1400, 0.97, 1, "1400 of 1500 MHz, the power reading still low: heavy by the clock"},
    {1500, 0.97, 0, "at the max clock: light"},
    {1460, 0.97, 0, "1460 MHz, above 0.97 of the max: light"},
    {1400, 0, 0, "1400 MHz with heavy_clock off: light"},
  };
  for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
    measure_env env = setup();
    fixture_probe_mhz = loads[i].mhz;
    /* what NVML shows of a load that started milliseconds ago: nothing heavy yet */
    fake.power_reading = (gpu_power_reading){.power_w = 150, .sm_clock_mhz = loads[i].mhz};
    o.heavy_clock = loads[i].heavy_clock;
    CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "%s: measured", loads[i].why);
    if (loads[i].heavy)
      CHECK(r.exposure && strcmp(r.stop_reason, "exposure") == 0 && r.heavy_by && strcmp(r.heavy_by, "clock") == 0 &&
                r.exposed_s >= 0.03,
            "%s: exposure %d stop %s by %s", loads[i].why, r.exposure, r.stop_reason, r.heavy_by ? r.heavy_by : "-");
    else
      CHECK(!r.exposure && r.heavy_by == NULL && strcmp(r.stop_reason, "converged") == 0, "%s: exposure %d stop %s",
            loads[i].why, r.exposure, r.stop_reason);
    /* the reported time: a heavy load's trimmed mean over its exposure, every other load's median */
    CHECK(strcmp(r.estimator, loads[i].heavy ? "trimmed_mean" : "median") == 0 &&
              r.estimate == (loads[i].heavy ? r.summary.trim_mean : r.summary.median),
          "%s: estimator %s", loads[i].why, r.estimator);
    measure_result_free(&r);
  }
  /* heavy_estimate = median: the heavy load reports its median */
  {
    measure_env e2 = setup();
    fixture_probe_mhz = 1400;
    fake.power_reading = (gpu_power_reading){.power_w = 150, .sm_clock_mhz = 1400};
    o.heavy_clock = 0.97;
    o.heavy_estimate = 1;
    CHECK(measure_run(&e2, &o, &r) == GPU_OK && r.code == NULL && r.exposure && strcmp(r.estimator, "median") == 0 &&
              r.estimate == r.summary.median,
          "heavy_estimate median: %s", r.estimator);
    measure_result_free(&r);
    o.heavy_estimate = 0;
  }
  /* a capped reading is the cap's, whatever the clock */
  measure_env env = setup();
  fixture_probe_mhz = 1400;
  fake.power_reading = (gpu_power_reading){.reasons = GPU_CAP_SW_POWER, .power_w = 700, .sm_clock_mhz = 1400};
  o.heavy_clock = 0.97;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && r.exposure && r.heavy_by &&
            strcmp(r.heavy_by, "cap") == 0,
        "capped: by %s", r.heavy_by ? r.heavy_by : "-");
  measure_result_free(&r);
}

/* ---- the instantaneous power and the heavy probe ------------------------------------------- */
/* The fake's waits end at once, so each batch takes two readings (its start and its end): the
 * warm-up reads 1 and 2, the k-th sampling batch 2k+1 and 2k+2. */
static double now_base, now_step;
static void rising(uint64_t nth, gpu_power_reading *out, void *user) {
  (void)user; /* the 1 s average still low, the instantaneous power climbing read by read */
  out->power_w = 150;
  out->power_now_w = now_base + now_step * (double)nth;
  out->sm_clock_mhz = 1500;
}

static void test_instant_heavy(void) {
  measure_opts o = quick();
  o.capped_exposure = 0.03;
  o.capped_preload = 0.05;
  o.throttle_threshold = 0;
  measure_result r;
  /* a GEMM from a cool GPU: 650 W now, the average still at 150 W (H200, session 12) */
  measure_env env = setup();
  fake.power_reading = (gpu_power_reading){.power_w = 150, .power_now_w = 650, .sm_clock_mhz = 1500};
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.exposure && strcmp(r.stop_reason, "exposure") == 0, "instant 650 W: heavy, stop %s", r.stop_reason);
  /* found heavy in the first sampling batch: the preload began right after it */
  CHECK(r.preloaded_s >= 0.05 && r.preloaded_s < 0.06, "preloaded %g s", r.preloaded_s);
  CHECK(r.power_w == 150 && r.power_now_max_w == 650, "power_w %g (the average), power_now_max_w %g", r.power_w,
        r.power_now_max_w);
  measure_result_free(&r);
  /* the same load where the instantaneous power is unknown (a read that failed, an older driver):
   * the average decides, as before, and misses it; no instantaneous figure is reported */
  env = setup();
  fake.power_reading = (gpu_power_reading){.power_w = 150, .sm_clock_mhz = 1500};
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(!r.exposure && strcmp(r.stop_reason, "converged") == 0 && r.power_now_max_w == 0 && r.heavy_waits == 0,
        "fallback: exposure %d stop %s now %g waits %zu", r.exposure, r.stop_reason, r.power_now_max_w, r.heavy_waits);
  measure_result_free(&r);
  /* the default protocol on a case's two implementations: in rounds, each found heavy on the
   * instantaneous power, preloaded, then sampled for its exposure */
  measure_env envs[2];
  envs[0] = setup();
  envs[1] = envs[0];
  envs[1].work.self = fn_b;
  fake.power_reading = (gpu_power_reading){.power_w = 150, .power_now_w = 650, .sm_clock_mhz = 1500};
  measure_opts d = measure_default_opts;
  d.heavy_power = 0.6; /* the level this test's readings were written around */
  CHECK(d.conditions == 0 && d.capped_exposure == 1 && d.capped_preload == 1 && d.heavy_probe_s == 0.1 &&
            d.exposure_scope == 1 && d.preload_scope == 1,
        "the default protocol: interleave, exposure 1 and preload 1 of the case's, device preload, probe 0.1");
  d.graph = 0, d.throttle_threshold = 0, d.capped_exposure = 0.03, d.capped_preload = 0.02; /* shorter */
  measure_result rg[2];
  size_t failed = 9;
  CHECK(measure_run_group(envs, 2, &d, rg, &failed) == GPU_OK && rg[0].code == NULL && rg[1].code == NULL, "group");
  /* the case's one exposure, shared: about half each */
  CHECK(rg[0].exposed_s + rg[1].exposed_s >= 0.03 && rg[0].exposed_s + rg[1].exposed_s < 0.03 + 0.001,
        "one exposure in all: %g + %g s", rg[0].exposed_s, rg[1].exposed_s);
  for (int i = 0; i < 2; i++) {
    CHECK(rg[i].exposure && strcmp(rg[i].stop_reason, "exposure") == 0 && rg[i].rounds >= 2 &&
          rg[i].preloaded_s > 0 && rg[i].exposed_s >= 0.014 && strcmp(rg[i].exposure_scope, "case") == 0 &&
          strcmp(rg[i].conditions, "interleave") == 0, "work %d: stop %s rounds %zu preloaded %g exposed %g", i,
          rg[i].stop_reason, rg[i].rounds, rg[i].preloaded_s, rg[i].exposed_s);
    measure_result_free(&rg[i]);
  }
  /* an average already high (what ran before) with a light instantaneous power: the instant wins */
  env = setup();
  fake.power_reading = (gpu_power_reading){.power_w = 650, .power_now_w = 200, .sm_clock_mhz = 1500};
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && !r.exposure, "instant 200 W: light");
  measure_result_free(&r);
}

static void test_heavy_probe(void) {
  measure_opts o = quick();
  o.capped_exposure = 0.03;
  o.capped_preload = 0;
  o.throttle_threshold = 0;
  measure_result r;
  /* light loads are not held: under half the heavy level (420 W of 700), or flat above it, or
   * without an instantaneous figure */
  gpu_power_reading light[] = {
    {.power_w = 150, .power_now_w = 200, .sm_clock_mhz = 1500},
    {.power_w = 150, .power_now_w = 380, .sm_clock_mhz = 1500},
    {.power_w = 380, .sm_clock_mhz = 1500},
  };
  for (size_t i = 0; i < sizeof light / sizeof light[0]; i++) {
    measure_env env = setup();
    fake.power_reading = light[i];
    CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
    CHECK(!r.exposure && r.heavy_waits == 0 && strcmp(r.stop_reason, "converged") == 0 && r.exposed_s < 0.01,
          "light %zu: exposure %d waits %zu stop %s exposed %g s", i, r.exposure, r.heavy_waits, r.stop_reason,
          r.exposed_s);
    measure_result_free(&r);
  }
  /* a load whose power still climbs when it converges (300, 340, 380 W in its first batches,
   * 420 in the fourth): held until it reads heavy, then sampled for its exposure */
  now_base = 220, now_step = 20;
  measure_env env = setup();
  fake.power_fn = rising;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(r.exposure && strcmp(r.stop_reason, "exposure") == 0 && r.heavy_waits == 3, "climbing: exposure %d stop %s "
        "waits %zu", r.exposure, r.stop_reason, r.heavy_waits);
  measure_result_free(&r);
  /* without the probe it stops at its first batch, before its power is seen */
  env = setup();
  fake.power_fn = rising;
  o.heavy_probe_s = 0;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(!r.exposure && strcmp(r.stop_reason, "converged") == 0 && r.heavy_waits == 0, "probe off: exposure %d "
        "stop %s", r.exposure, r.stop_reason);
  measure_result_free(&r);
  /* the bound: a load that keeps climbing without reaching the heavy level (700 W here) is held
   * for heavy_probe_s of GPU time, then the noise rule stops it */
  now_base = 400, now_step = 10;
  env = setup();
  fake.power_fn = rising;
  o.heavy_power = 1;
  o.heavy_probe_s = 0.02;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
  CHECK(!r.exposure && strcmp(r.stop_reason, "converged") == 0 && r.heavy_waits > 0 && r.exposed_s >= 0.02 &&
        r.exposed_s < 0.04, "bounded: exposure %d stop %s waits %zu exposed %g s", r.exposure, r.stop_reason,
        r.heavy_waits, r.exposed_s);
  measure_result_free(&r);
  /* nor is anything held with capped_exposure off */
  env = setup();
  fake.power_fn = rising;
  o.capped_exposure = 0;
  CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL && r.heavy_waits == 0, "exposure off: waits %zu",
        r.heavy_waits);
  measure_result_free(&r);
}

/* The default heavy level (0.9 of the limit): a memory-bound load drawing what the H200's read
 * 560 W at the most in session 12 (swiglu) is not heavy, a load at 660 W (capped GEMMs sit at
 * the 700 W limit) is, and a capped one is whatever it draws. */
static void test_heavy_level(void) {
  measure_opts o = quick();
  o.heavy_power = measure_default_opts.heavy_power;
  o.capped_exposure = 0.03;
  o.capped_preload = 0;
  o.throttle_threshold = 0;
  CHECK(measure_default_opts.heavy_power == 0.9, "default heavy_power %g", measure_default_opts.heavy_power);
  struct {
    gpu_power_reading rd;
    int heavy;
    const char *what;
  } cases[] = {
    {{.power_w = 560, .power_now_w = 600, .sm_clock_mhz = 1980}, 0, "memory-bound, 600 W now"},
    {{.power_w = 150, .power_now_w = 660, .sm_clock_mhz = 1500}, 1, "660 W now"},
    {{.reasons = GPU_CAP_SW_POWER, .power_w = 300, .power_now_w = 400, .sm_clock_mhz = 1400}, 1, "capped at 400 W"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    measure_env env = setup();
    measure_result r;
    fake.power_reading = cases[i].rd;
    CHECK(measure_run(&env, &o, &r) == GPU_OK && r.code == NULL, "measured");
    CHECK(r.exposure == cases[i].heavy, "%s: exposure %d, stop %s", cases[i].what, r.exposure, r.stop_reason);
    measure_result_free(&r);
  }
}

int main(void) {
  test_nvml_missing();
  test_source_absent();
  test_power_off();
  test_cap_fraction();
  test_idle_rule();
  test_cooldown();
  test_cold();
  test_interleave_order();
  test_settle_in_engine();
  test_exposure();
  test_clock_heavy();
  test_instant_heavy();
  test_heavy_probe();
  test_heavy_level();
  measure_cache_free(&cache, NULL);
  fake_reset();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures != 0;
}
