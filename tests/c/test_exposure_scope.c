/* test_exposure_scope.c: exposure_scope = "case" on the fake backend (host/measure/exposure.c): the
 * heavy loads of an interleaved group share one preload and one exposure of their total GPU time
 * and stop together by "exposure"; a light load of a heavy case joins it while it still samples,
 * and keeps its own result when it stopped before; a load of long kernels extends the rounds for
 * all until it has min_samples; the timeout still bounds it all; "load" and a single measurement
 * (sequential) are unchanged; with preload_scope = "device" the device's streak may end the shared
 * preload; graph groups round the shares to whole launches. The setup is measure_fixture.h's (1 ms
 * gemm, 0.5 ms gemm_b, 50 us light, 20 ms long). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "measure_fixture.h"

#define PRELOAD 0.1
#define EXPOSURE 0.2
#define MAXK 4

static measure_opts case_opts(void) {
  measure_opts o = fixture_opts(); /* every sample kept: the rule under test is the exposure */
  o.capped_exposure = EXPOSURE;
  o.capped_preload = PRELOAD;
  o.exposure_scope = 1;
  o.preload_scope = 0; /* each load's own preload time: the device's streak is tested on its own below */
  return o;
}

static const char *str(const char *s) { return s ? s : "(none)"; }
static int is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

/* The fixture's work of that name (after its setup, which loads them anew). */
static gpu_function *fn(const char *name) {
  const fixture_fns *f = &fixture;
  return is(name, "gemm") ? f->gemm : is(name, "gemm_b") ? f->gemm_b : is(name, "light") ? f->light : f->long_;
}

/* Measures k loads interleaved (works[i] names the fixture's work) under o; readings by power_fn
 * (NULL: all heavy); busy_polls as fixture_setup takes it. */
static void group(measure_result *r, size_t k, const char *const *works, const measure_opts *o,
                  void (*power_fn)(uint64_t, gpu_power_reading *, void *), int busy_polls) {
  measure_env envs[MAXK];
  envs[0] = fixture_setup(FIXTURE_HEAVY, busy_polls);
  fake.power_fn = power_fn;
  for (size_t i = 0; i < k; i++) {
    envs[i] = envs[0];
    envs[i].work.self = fn(works[i]);
  }
  size_t failed = 99;
  CHECK(measure_run_group(envs, k, o, r, &failed) == GPU_OK, "group of %zu measured: %s", k, r[failed % k].message);
  for (size_t i = 0; i < k; i++) CHECK(r[i].code == NULL, "load %zu kept samples: %s", i, r[i].message);
}

static void free_all(measure_result *r, size_t k) {
  for (size_t i = 0; i < k; i++) measure_result_free(&r[i]);
}

/* The sequence of work kernels after the warm-ups as letters, one per block (batch) of a work:
 * gemm 'a', gemm_b 'b', light 'l', long 'L'. */
static void blocks(char *out, size_t len) {
  size_t n = 0;
  const char *prev = NULL;
  for (size_t i = 0; i < fake.n_ops && n + 1 < len; i++) {
    const fake_op *op = &fake.ops[i];
    if (op->kind != FAKE_OP_KERNEL || strncmp(op->kernel, "tb_", 3) == 0) continue;
    if (prev && strcmp(prev, op->kernel) == 0) continue;
    prev = op->kernel;
    out[n++] = is(op->kernel, "gemm") ? 'a' : is(op->kernel, "gemm_b") ? 'b' : is(op->kernel, "light") ? 'l' : 'L';
  }
  out[n] = '\0';
}

/* 2 to 4 heavy loads (gemm and gemm_b alternating): one preload and one exposure for the case */
static void test_shared(void) {
  const char *works[MAXK] = {"gemm", "gemm_b", "gemm", "gemm_b"};
  for (size_t k = 2; k <= MAXK; k++) {
    measure_opts o = case_opts();
    measure_result r[MAXK];
    group(r, k, works, &o, NULL, 0);
    double pre = 0, exp = 0;
    for (size_t i = 0; i < k; i++) {
      CHECK(r[i].exposure && is(r[i].stop_reason, "exposure") && is(r[i].exposure_scope, "case"),
            "k %zu load %zu: exposure %d stop %s scope %s", k, i, r[i].exposure, r[i].stop_reason,
            str(r[i].exposure_scope));
      /* load 0 found the case heavy; the others joined it and read heavy on their own too */
      CHECK(is(r[i].exposure_by, "load") && is(r[i].preload_by, "case"), "k %zu load %zu: exposure_by %s preload_by %s",
            k, i, str(r[i].exposure_by), str(r[i].preload_by));
      CHECK(r[i].rounds == r[0].rounds && r[i].rounds >= 4, "k %zu load %zu: rounds %zu (load 0: %zu)", k, i,
            r[i].rounds, r[0].rounds);
      /* equal shares of the window in GPU time, whatever each one's sample */
      CHECK(fabs(r[i].exposed_s - EXPOSURE / (double)k) < 0.1 * EXPOSURE / (double)k + 0.0011,
            "k %zu load %zu: exposed %g s of %g", k, i, r[i].exposed_s, EXPOSURE / (double)k);
      CHECK(r[i].n >= 10, "k %zu load %zu: n %zu", k, i, r[i].n);
      pre += r[i].preloaded_s, exp += r[i].exposed_s;
    }
    /* dropped: the preload and load 0's first batch (about MEASURE_ROUND_S, before it was found heavy) */
    CHECK(pre >= PRELOAD && pre < PRELOAD + MEASURE_ROUND_S + 0.0011 * (double)k, "k %zu: preloads %g s in all", k,
          pre);
    CHECK(exp >= EXPOSURE * (1 - 1e-9) && exp < EXPOSURE + 0.0011 * (double)k, "k %zu: exposures %g s in all", k, exp);
    if (k == 2) { /* warm-ups a, b, then one batch of each per round to the end */
      char seq[256];
      blocks(seq, sizeof seq);
      size_t len = strlen(seq), alt = 1;
      for (size_t i = 1; i < len; i++) alt &= seq[i] != seq[i - 1];
      CHECK(alt && len == 2 + 2 * r[0].rounds, "alternating blocks to the end: %s (%zu rounds)", seq, r[0].rounds);
    }
    free_all(r, k);

    o.exposure_scope = 0; /* "load": each its own preload and exposure, as before */
    CHECK(measure_default_opts.exposure_scope == 1, "case is the default (session 13)");
    group(r, k, works, &o, NULL, 0);
    for (size_t i = 0; i < k; i++) {
      CHECK(is(r[i].stop_reason, "exposure") && is(r[i].exposure_scope, "load") && is(r[i].preload_by, "load") &&
                is(r[i].exposure_by, "load"),
            "load scope, k %zu load %zu: stop %s scope %s preload_by %s", k, i, r[i].stop_reason,
            str(r[i].exposure_scope), str(r[i].preload_by));
      CHECK(r[i].exposed_s >= EXPOSURE * (1 - 1e-9) && r[i].exposed_s < EXPOSURE + 0.0011 &&
                r[i].preloaded_s >= PRELOAD,
            "load scope, k %zu load %zu: exposed %g preloaded %g", k, i, r[i].exposed_s, r[i].preloaded_s);
    }
    free_all(r, k);
  }
}

/* the default protocol's graph groups (several samples per graph launch): the shares are rounded to
 * whole launches, the case still ends after one exposure */
static void test_graph_groups(void) {
  measure_opts o = case_opts();
  o.graph = 1;
  measure_result r[2];
  const char *works[2] = {"gemm", "gemm_b"};
  group(r, 2, works, &o, NULL, 0);
  double exp = r[0].exposed_s + r[1].exposed_s;
  CHECK(r[0].graph_group > 1 && r[1].graph_group > 1, "graph groups %zu %zu", r[0].graph_group, r[1].graph_group);
  CHECK(is(r[0].stop_reason, "exposure") && is(r[1].stop_reason, "exposure") && r[0].rounds == r[1].rounds,
        "stop %s %s rounds %zu %zu", r[0].stop_reason, r[1].stop_reason, r[0].rounds, r[1].rounds);
  /* at most one launch over each share: 5 samples of 1 ms, 10 of 0.5 ms (clock_interval 5 ms) */
  CHECK(exp >= EXPOSURE * (1 - 1e-9) && exp < EXPOSURE + 0.011, "one exposure: %g s", exp);
  CHECK(fabs(r[0].summary.median - 1) < 1e-9 && fabs(r[1].summary.median - 0.5) < 1e-9, "times %g %g",
        r[0].summary.median, r[1].summary.median);
  free_all(r, 2);
}

/* heavy and light loads in one case */
static void test_mixed(void) {
  measure_opts o = case_opts();
  o.max_noise = 1; /* a load not held by the exposure converges once min_samples and min_time are in */
  measure_result r[3];
  const char *works[3] = {"gemm", "light", "gemm_b"};
  /* the case is found heavy by gemm in the first round: light, still sampling, joins it */
  group(r, 3, works, &o, fixture_by_kernel, 0);
  CHECK(is(r[1].exposure_by, "case") && r[1].exposure && is(r[1].stop_reason, "exposure") &&
            is(r[1].preload_by, "case"),
        "light joined: exposure_by %s stop %s preload_by %s", str(r[1].exposure_by), r[1].stop_reason,
        str(r[1].preload_by));
  CHECK(r[1].heavy_by == NULL, "light: not heavy on its own (heavy_by %s)", str(r[1].heavy_by));
  CHECK(is(r[0].exposure_by, "load") && is(r[2].exposure_by, "load") && is(r[0].heavy_by, "power") &&
            is(r[2].heavy_by, "power"),
        "gemm, gemm_b: exposure_by %s %s, heavy_by %s %s", str(r[0].exposure_by), str(r[2].exposure_by),
        str(r[0].heavy_by), str(r[2].heavy_by));
  CHECK(r[1].rounds == r[0].rounds && r[2].rounds == r[0].rounds, "rounds %zu %zu %zu", r[0].rounds, r[1].rounds,
        r[2].rounds);
  double exp = r[0].exposed_s + r[1].exposed_s + r[2].exposed_s;
  CHECK(exp >= EXPOSURE * (1 - 1e-9) && exp < EXPOSURE + 0.004, "one exposure in all: %g s", exp);
  CHECK(fabs(r[1].summary.median - 0.05) < 1e-9, "light's time: %g ms", r[1].summary.median);
  free_all(r, 3);

  /* light first: it converges in the first round, before the case is found heavy, and keeps that
   * result; gemm alone takes the case's preload and exposure */
  const char *late[2] = {"light", "gemm"};
  group(r, 2, late, &o, fixture_by_kernel, 0);
  CHECK(!r[0].exposure && r[0].exposure_by == NULL && r[0].preload_by == NULL && is(r[0].stop_reason, "converged") &&
            r[0].rounds == 1,
        "light before: exposure %d stop %s rounds %zu", r[0].exposure, r[0].stop_reason, r[0].rounds);
  CHECK(is(r[1].stop_reason, "exposure") && is(r[1].preload_by, "case") && r[1].exposed_s >= EXPOSURE * (1 - 1e-9) &&
            r[1].exposed_s < EXPOSURE + 0.0011 && r[1].preloaded_s >= PRELOAD,
        "gemm: stop %s exposed %g preloaded %g", r[1].stop_reason, r[1].exposed_s, r[1].preloaded_s);
  free_all(r, 2);
}

/* a load of 20 ms samples gets fewer than min_samples in the window: the rounds go on, for both,
 * until it has them; both stop together by exposure */
static void test_long_kernels(void) {
  measure_opts o = case_opts();
  measure_result r[2];
  const char *works[2] = {"gemm", "long"};
  group(r, 2, works, &o, NULL, 0);
  CHECK(is(r[0].stop_reason, "exposure") && is(r[1].stop_reason, "exposure") && r[0].rounds == r[1].rounds,
        "stop %s %s rounds %zu %zu", r[0].stop_reason, r[1].stop_reason, r[0].rounds, r[1].rounds);
  CHECK(r[1].n >= (size_t)o.min_samples && r[1].n <= (size_t)o.min_samples + 1, "long: n %zu", r[1].n);
  CHECK(r[0].exposed_s + r[1].exposed_s > EXPOSURE + 0.05, "the window extended: %g s",
        r[0].exposed_s + r[1].exposed_s);
  CHECK(fabs(r[1].summary.median - 20) < 1e-6, "long: %g ms", r[1].summary.median);
  free_all(r, 2);
}

/* the timeout bounds the case: an exposure it cannot reach, and rounds extended for a min_samples
 * no load reaches */
static void test_timeout(void) {
  for (int which = 0; which < 2; which++) {
    measure_opts o = case_opts();
    o.timeout = 0.2;
    if (which == 0) o.capped_exposure = 1000;
    else o.min_samples = 1e7;
    measure_result r[2];
    const char *works[2] = {"gemm", "gemm_b"};
    double t0 = measure_wall_now();
    group(r, 2, works, &o, NULL, 0);
    double wall = measure_wall_now() - t0;
    CHECK(is(r[0].stop_reason, "timeout") && is(r[1].stop_reason, "timeout"), "%s: stop %s %s",
          which ? "min_samples" : "exposure", r[0].stop_reason, r[1].stop_reason);
    CHECK(wall < 2, "%s: %g s", which ? "min_samples" : "exposure", wall);
    free_all(r, 2);
  }
}

/* one load (measure_run: sequential conditions, or a case of one) measures as "load" does */
static void test_single(void) {
  measure_result a, b;
  measure_opts o = case_opts();
  measure_env env = fixture_setup(FIXTURE_HEAVY, 0);
  CHECK(measure_run(&env, &o, &a) == GPU_OK && a.code == NULL, "case: %s", a.message);
  o.exposure_scope = 0;
  env = fixture_setup(FIXTURE_HEAVY, 0);
  CHECK(measure_run(&env, &o, &b) == GPU_OK && b.code == NULL, "load: %s", b.message);
  CHECK(is(a.exposure_scope, "load") && is(a.preload_by, "load") && is(a.stop_reason, "exposure"),
        "single: scope %s preload_by %s stop %s", str(a.exposure_scope), str(a.preload_by), a.stop_reason);
  CHECK(a.n == b.n && a.exposed_s == b.exposed_s && a.preloaded_s == b.preloaded_s && a.batches == b.batches,
        "as load: n %zu/%zu exposed %g/%g preloaded %g/%g", a.n, b.n, a.exposed_s, b.exposed_s, a.preloaded_s,
        b.preloaded_s);
  measure_result_free(&a);
  measure_result_free(&b);
}

/* with preload_scope = "device", a case right after a heavy load: the device's streak ends the
 * shared preload after the round that found it heavy */
static void test_device_preload(void) {
  measure_opts o = case_opts();
  o.preload_scope = 1;
  measure_result light, before, r[2];
  measure_env env = fixture_setup(FIXTURE_LIGHT, 0);
  CHECK(measure_run(&env, &o, &light) == GPU_OK && !light.exposure, "a light load ends any streak");
  env = fixture_setup(FIXTURE_HEAVY, 40);
  CHECK(measure_run(&env, &o, &before) == GPU_OK && before.exposure, "a heavy load before");
  const char *works[2] = {"gemm", "gemm_b"};
  group(r, 2, works, &o, NULL, 40);
  CHECK(is(r[0].preload_by, "device") && is(r[1].preload_by, "device"), "preload_by %s %s", str(r[0].preload_by),
        str(r[1].preload_by));
  double pre = r[0].preloaded_s + r[1].preloaded_s, exp = r[0].exposed_s + r[1].exposed_s;
  CHECK(pre < PRELOAD, "the first round only: %g s", pre);
  CHECK(exp >= EXPOSURE * (1 - 1e-9) && exp < EXPOSURE + 0.0022 && is(r[0].stop_reason, "exposure"),
        "one exposure: %g s, stop %s", exp, r[0].stop_reason);
  measure_result_free(&light);
  measure_result_free(&before);
  free_all(r, 2);
}

/* the option as the CLI and campaigns see it */
static void test_options(void) {
  const measure_opt_desc *d = measure_option_find("exposure_scope");
  measure_opts o = measure_default_opts;
  char msg[256];
  CHECK(d && d->type == MEASURE_OPT_CHOICE && strcmp(d->def, "case") == 0, "exposure_scope: a choice, case");
  CHECK(d && measure_option_set_choice(&o, d, "case", msg, sizeof msg) == 0 && o.exposure_scope == 1, "case");
  CHECK(d && measure_option_set_choice(&o, d, "device", msg, sizeof msg) == -1 && strstr(msg, "load case"), "%s",
        msg);
}

int main(void) {
  test_options();
  test_shared();
  test_graph_groups();
  test_mixed();
  test_long_kernels();
  test_timeout();
  test_single();
  test_device_preload();
  fixture_done();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures != 0;
}
