/* measure.c: the measurement loop. Batches of samples are enqueued (per sample: [event, eviction]
 * event, run, event; clock probes around groups of samples), waited for with halving naps, and
 * collected (kernel time, events, probes) into the kept samples until the mode's stopping rule
 * says stop. The units it calls: evict.c, clock_probe.c, kernel_time.c, graph.c, modes.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "measure/internal.h"

double measure_wall_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double measure_median(const double *x, size_t n) {
  tb_summary s;
  return tb_summarize(x, n, &s) == 0 ? s.median : 0;
}

/* A hung plan's message starts with "timeout:" so a campaign records the case as a timeout. */
gpu_status measure_fail(measure *m, gpu_status st, const char *what) {
  snprintf(m->r->message, sizeof m->r->message, "%s%s: %s", st == GPU_ERR_TIMEOUT ? "timeout: " : "", what,
           gpu_last_error());
  snprintf(m->r->error_api, sizeof m->r->error_api, "%s", gpu_last_error_api());
  return st;
}

gpu_status measure_ensure_events(measure *m, size_t need) {
  measure_cache *R = m->R;
  if (need <= R->n_events) return GPU_OK;
  gpu_event *e = realloc(R->events, need * sizeof *e);
  if (e == NULL)
    return measure_fail(m, gpu_set_error(GPU_ERR_OOM, "tb.timer: out of host memory for %zu events", need),
                        "creating events");
  R->events = e;
  for (; R->n_events < need; R->n_events++)
    TRY(m, m->gpu->event_create(&R->events[R->n_events]), "creating events");
  return GPU_OK;
}

static gpu_status grow_kept(measure *m, size_t need) {
  if (need <= m->cap) return GPU_OK;
  size_t cap = m->cap ? m->cap : 256;
  while (cap < need) cap *= 2;
  double *a = realloc(m->ms, cap * sizeof *a);
  if (a) m->ms = a;
  double *b = a ? realloc(m->ev_ms, cap * sizeof *b) : NULL;
  if (b) m->ev_ms = b;
  double *c = b ? realloc(m->clk, cap * sizeof *c) : NULL;
  if (c) m->clk = c;
  double *d = c ? realloc(m->kpr, cap * sizeof *d) : NULL;
  if (d) m->kpr = d;
  unsigned char *t = d ? realloc(m->thr, cap) : NULL;
  if (t) m->thr = t;
  double *e = t ? realloc(m->busy, cap * sizeof *e) : NULL;
  if (e) m->busy = e;
  double *f = e ? realloc(m->capfrac, cap * sizeof *f) : NULL;
  if (f) m->capfrac = f;
  if (f == NULL) return measure_fail(m, gpu_set_error(GPU_ERR_OOM, "out of host memory"), "tb.timer.measure");
  m->cap = cap;
  return GPU_OK;
}

/* Records an event unless the last one recorded has had nothing enqueued after it, in which case
 * that one is reused (the end of one run is the start of the next eviction). */
static gpu_status mark(measure *m, int *next, int *last, int *out) {
  if (*last < 0) {
    TRY(m, m->gpu->event_record(m->R->events[*next], m->s), "tb.timer.measure");
    *last = (*next)++;
  }
  *out = *last;
  return GPU_OK;
}

/* Enqueues n samples: per sample [event, eviction] event, run, event; clock probes before the
 * first sample and after every probe_stride samples (and after the last). Consecutive samples
 * share an event. The eviction sits between the first two events, outside the timed interval.
 * Under timestamps, run i is tagged ext_base + i and its eviction ext_base + n + i, so the
 * eviction's kernel time is known too (GPU busy time without launch gaps). */
static gpu_status enqueue_batch(measure *m, size_t n, uint64_t ext_base) {
  const gpu_backend *gpu = m->gpu;
  const measure_work *w = &m->env->work;
  size_t k = m->probe_stride ? m->probe_stride : 1;
  int next = 0, last = -1;
  if (m->probe_fn) TRY(m, probe_launch(m, 0), "clock probe");
  if (m->group > 1) return graph_enqueue_groups(m, n, ext_base);
  for (size_t i = 0; i < n; i++) {
    int *ev = &m->R->ev[3 * i];
    ev[0] = -1;
    if (m->flush_bytes) {
      PASS(mark(m, &next, &last, &ev[0]));
      int tag = m->cupti && m->evict_fn;
      if (tag) TRY(m, kernel_time_push(m, ext_base + n + i), "tb.timer.measure");
      gpu_status st = evict_launch(m);
      if (tag) st = kernel_time_pop(m, st);
      if (st != GPU_OK)
        return measure_fail(m, st, m->evict_fn ? "cache eviction (evict.cu)" : "cache eviction (memset)");
      last = -1;
    }
    PASS(mark(m, &next, &last, &ev[1]));
    if (m->cupti) TRY(m, kernel_time_push(m, ext_base + i), "tb.timer.measure");
    gpu_status st = m->graph ? gpu->graph_launch(m->graph, m->s) : w->run(w->self, m->s);
    if (m->cupti) st = kernel_time_pop(m, st);
    if (st != GPU_OK) return measure_fail(m, st, m->graph ? "running the plan's graph" : "running the plan");
    last = -1;
    PASS(mark(m, &next, &last, &ev[2]));
    if (m->probe_fn && ((i + 1) % k == 0 || i + 1 == n)) {
      TRY(m, probe_launch(m, i / k + 1), "clock probe");
      last = -1;
    }
  }
  return GPU_OK;
}

/* Waits for the batch. predicted_s is the batch's expected GPU time (samples x the median GPU busy
 * time per sample of the previous batch: a median, so a one-time stall such as a graph's first
 * upload does not inflate it). The host sleeps half of what is left of the prediction at a time,
 * then polls every 20 us, so it wakes within tens of microseconds of the batch's end whether the
 * prediction was long or short. sync_timeout bounds the whole wait. */
static gpu_status wait_batch(measure *m, double t_enq, double predicted_s) {
  const gpu_backend *gpu = m->gpu;
  double start = measure_wall_now(), limit = m->o.sync_timeout;
  for (;;) {
    gpu_status st = gpu->stream_wait_timeout(m->s, 0); /* one query, no sleep */
    if (st == GPU_OK) return GPU_OK;
    if (st != GPU_ERR_TIMEOUT) return measure_fail(m, st, "waiting for the plan's runs");
    double now = measure_wall_now();
    if (now - start >= limit) {
      gpu_set_error(GPU_ERR_TIMEOUT, "the batch of runs did not finish within sync_timeout = %g s", limit);
      return measure_fail(m, GPU_ERR_TIMEOUT, "waiting for the plan's runs");
    }
    double left = t_enq + predicted_s - now, nap = left > 40e-6 ? 0.5 * left : 20e-6;
    if (left > 2e-3) power_poll(m); /* not in the last 2 ms: a read must not delay the wake-up */
    if (nap > 0.1) nap = 0.1; /* a wrong prediction costs at most 0.1 s of sleep */
    /* preload_scope device: a long batch is read every 5 ms too, or its naps would break the
     * device's heavy streak (heavy_gap_s, power.c) */
    if (m->pw && m->o.preload_scope == 1 && nap > MEASURE_POLL_S) nap = MEASURE_POLL_S;
    if (nap > limit - (now - start)) nap = limit - (now - start);
    struct timespec ts = {(time_t)nap, (long)((nap - floor(nap)) * 1e9)};
    nanosleep(&ts, NULL);
  }
}

/* Keeps sample i of the batch (kernel_ms by the reported clock, run_ms by its events). */
static gpu_status keep_sample(measure *m, size_t i, double kernel_ms, double run_ms, double busy, int use_ts) {
  measure_cache *R = m->R;
  size_t k = m->probe_stride ? m->probe_stride : 1;
  double clk = 0;
  int under = 0;
  if (m->probe_fn) { /* the lower of the probes around the sample's group */
    double a = R->probe_mhz[i / k], b = R->probe_mhz[i / k + 1];
    clk = a > 0 && b > 0 ? (a < b ? a : b) : (a > 0 ? a : b);
    under = tb_sample_throttled(clk, m->max_mhz, m->o.throttle_threshold);
  }
  PASS(grow_kept(m, m->n + 1));
  m->ms[m->n] = kernel_ms;
  m->ev_ms[m->n] = run_ms;
  m->clk[m->n] = clk;
  m->kpr[m->n] = use_ts ? R->kernel_count[i] : m->env->work.kernels;
  m->thr[m->n] = (unsigned char)under;
  m->busy[m->n] = busy;
  m->capfrac[m->n] = m->batch_cap;
  m->n++;
  m->r->under_threshold += (size_t)under;
  tb_running_add(&m->run_all, kernel_ms, busy);
  if (m->sustained || !under) {
    tb_running_add(&m->run, kernel_ms, busy);
  } else {
    m->r->dropped_throttled++;
    if (tb_clock_sustained(m->run.n, m->r->dropped_throttled, m->sustained_min)) {
      m->sustained = 1; /* the samples dropped so far count again */
      m->r->dropped_throttled = 0;
      m->run = m->run_all;
    }
  }
  return GPU_OK;
}

/* Reads both clocks and the probes of a finished batch. keep = 0 for warm-up: only the GPU busy
 * time counts. *median_busy: the median GPU busy seconds per sample (for sizing the next batch).
 * Adds the batch's GPU timeline (first event to last) to gpu_span_s. */
static gpu_status collect_batch(measure *m, size_t n, uint64_t ext_base, int keep, double *median_busy) {
  const gpu_backend *gpu = m->gpu;
  measure_cache *R = m->R;
  measure_result *r = m->r;
  gpu_event *E = R->events;
  r->batches++;
  if (m->probe_fn) PASS(probe_read_batch(m, n));
  int use_ts = 0;
  PASS(kernel_time_collect(m, n, ext_base, &use_ts, &keep));
  if (n > 0) {
    float span_ms = 0;
    int first = R->ev[0] >= 0 ? R->ev[0] : R->ev[1];
    TRY(m, gpu->event_elapsed_ms(&span_ms, E[first], E[R->ev[3 * (n - 1) + 2]]), "reading events");
    r->gpu_span_s += span_ms * 1e-3;
  }
  for (size_t i = 0; i < n; i++) {
    float run_ms = 0, evict_ms = 0;
    const int *ev = &R->ev[3 * i];
    TRY(m, gpu->event_elapsed_ms(&run_ms, E[ev[1]], E[ev[2]]), "reading events");
    /* The eviction's time: its kernels by timestamps where they were recorded, else its events
     * (which also count the launch gaps around it: the memset eviction, the events clock). */
    if (ev[0] >= 0 && use_ts && R->kernel_count[n + i] > 0 && R->incomplete[n + i] == 0)
      evict_ms = (float)(R->kernel_ns[n + i] * 1e-6);
    else if (ev[0] >= 0)
      TRY(m, gpu->event_elapsed_ms(&evict_ms, E[ev[0]], E[ev[1]]), "reading events");
    double kernel_ms = use_ts ? R->kernel_ns[i] * 1e-6 : run_ms;
    double busy = (evict_ms + kernel_ms) * 1e-3;
    R->busy_tmp[i] = busy;
    r->gpu_busy_s += busy;
    r->evict_s += evict_ms * 1e-3;
    if (!keep) continue;
    if (use_ts && (R->incomplete[i] > 0 || (R->kernel_count[i] == 0 && m->env->work.kernels > 0))) {
      r->dropped_incomplete++;
      continue;
    }
    PASS(keep_sample(m, i, kernel_ms, run_ms, busy, use_ts));
  }
  *median_busy = n ? measure_median(R->busy_tmp, n) : 0;
  return GPU_OK;
}

/* One batch of n samples: enqueue, wait, collect; the host time of each step is added up. */
static gpu_status run_batch(measure *m, size_t n, int keep, double predicted_s, double *est_busy, double *est_wall) {
  measure_cache *R = m->R;
  PASS(measure_ensure_events(m, 3 * n));
  uint64_t base = R->next_ext_id;
  R->next_ext_id += 2 * n; /* runs, then their evictions */
  double t0 = measure_wall_now();
  PASS(enqueue_batch(m, n, base));
  double t1 = measure_wall_now();
  power_batch_begin(m);
  PASS(wait_batch(m, t0, predicted_s));
  power_batch_end(m, keep);
  double t2 = measure_wall_now();
  PASS(collect_batch(m, n, base, keep, est_busy));
  double t3 = measure_wall_now();
  m->r->enqueue_s += t1 - t0, m->r->wait_s += t2 - t1, m->r->collect_s += t3 - t2;
  *est_wall = (t3 - t0) / (double)n;
  return GPU_OK;
}

/* Samples for the next batch: what the mode asks, within the time left, the batch limit and
 * whole launches of the group graph. */
static size_t batch_size(measure *m, const tb_stop_rule *rule, double est_busy, double est_wall, double t_start) {
  size_t n = measure_modes[m->o.mode].next_batch(rule, &m->run, est_busy);
  if (est_wall > 0 && rule->timeout_s > 0) {
    double left = rule->timeout_s - (measure_wall_now() - t_start);
    size_t fit = left > est_wall ? (size_t)(left / est_wall) : 1;
    if (n > fit) n = fit;
  }
  if (n < 1) n = 1;
  if (n > MEASURE_BATCH_MAX) n = MEASURE_BATCH_MAX;
  if (m->group > 1) {
    n = (n + m->group - 1) / m->group * m->group;
    if (n > MEASURE_BATCH_MAX) n = MEASURE_BATCH_MAX / m->group * m->group;
  }
  return n;
}

/* Clock probes around groups of samples covering about clock_interval of GPU time. */
static void choose_probe_stride(measure *m, double est_busy) {
  m->probe_stride = 1;
  if (m->probe_fn && m->o.clock_interval > 0 && est_busy > 0) {
    double k = floor(m->o.clock_interval / est_busy);
    m->probe_stride = k < 1 ? 1 : k > MEASURE_BATCH_MAX ? MEASURE_BATCH_MAX : (size_t)k;
  }
  if (m->group > 1) m->probe_stride = (m->probe_stride + m->group - 1) / m->group * m->group;
}

/* The warm-up: runs through the same path, unkept; then the graph groups are chosen. */
static gpu_status warm_up(measure *m) {
  size_t warmup = m->o.warmup >= 0 ? (size_t)m->o.warmup : measure_modes[m->o.mode].default_warmup;
  m->r->warmup = warmup;
  for (size_t left = warmup; left > 0;) {
    size_t n = left < MEASURE_BATCH_MAX ? left : MEASURE_BATCH_MAX;
    m->probe_stride = 1;
    PASS(run_batch(m, n, 0, 0, &m->est_busy, &m->est_wall));
    left -= n;
  }
  return graph_choose_groups(m, m->est_busy);
}

/* Forgets every sample kept so far (the preload's): the counts, the running statistics and the
 * power readings start again; the GPU time spent stays in gpu_busy_s. */
void measure_drop_samples(measure *m) {
  m->n = 0;
  memset(&m->run, 0, sizeof m->run);
  memset(&m->run_all, 0, sizeof m->run_all);
  m->r->under_threshold = 0;
  m->r->dropped_throttled = 0;
  m->r->dropped_incomplete = 0;
  m->n_pw = 0;
  m->now_max = -1;
  m->exposed = 0;
}

/* GPU seconds of capped_preload still to run: the load's own, or with preload_scope = "device"
 * what the device's heavy streak still lacks (power.c) where that is less; *by_device says which. */
static double preload_left(const measure *m, int *by_device) {
  double own = m->o.capped_preload - (m->exposed - m->heavy_at);
  double dev = m->o.preload_scope == 1 ? m->o.capped_preload - power_heavy_streak(m) : own;
  *by_device = dev < own;
  return dev < own ? dev : own;
}

/* The clock test of capped_exposure: the median probe clock of the samples the last batch kept
 * (from index n0) is under heavy_clock of the max SM clock. Under the H200's power cap the clock
 * falls within milliseconds of a heavy load's start, long before NVML's power readings show its
 * draw, so a GEMM that converges in 50 ms is still found heavy (docs/MEASUREMENT.md). */
static int clock_heavy(const measure *m, size_t n0) {
  if (!(m->o.heavy_clock > 0) || !m->probe_fn || !(m->max_mhz > 0)) return 0;
  /* the median under the bar: fewer than half the known clocks at or above it */
  double bar = m->o.heavy_clock * m->max_mhz;
  size_t known = 0, above = 0;
  for (size_t i = n0; i < m->n; i++) {
    if (!(m->clk[i] > 0)) continue;
    known++;
    above += m->clk[i] >= bar;
  }
  return known > 0 && 2 * above < known;
}

/* One batch of samples and the stopping decision after it. round_s > 0 (interleaved): the batch
 * covers about that much GPU time, so the works of a group alternate at that grain and each sees
 * the power state the others leave. The cold reading takes one sample a batch, after a cool-down. */
static gpu_status step(measure *m, const tb_stop_rule *rule, double t_start, double round_s) {
  size_t n = batch_size(m, rule, m->est_busy, m->est_wall, t_start);
  /* in a heavy case (exposure_scope = "case") a load's rule does not stop it, so its needs do not
   * size its batches: each takes a round's worth, or its share of what is left (below), so the
   * loads' samples cover the case's window in equal parts of GPU time */
  if (m->cs && m->heavy && m->cs->share_s >= 0 && m->est_busy > 0) n = MEASURE_BATCH_MAX;
  if (round_s > 0 && m->est_busy > 0) {
    double fit = ceil(round_s / m->est_busy);
    size_t g = m->group > 1 ? m->group : 1;
    if ((double)n > fit) n = ((size_t)fit + g - 1) / g * g;
  }
  int cold = m->o.reading == 1;
  if (cold) {
    n = 1;
    power_cooldown(m);
  }
  /* A load on a fixed exposure takes no more samples than the exposure (or its preload) has left:
   * its own, or its share of the case's (exposure_scope = "case"). */
  int by_device = 0;
  if (m->heavy && m->est_busy > 0 && !(m->cs && m->cs->share_s < 0)) {
    double left = m->cs ? m->cs->share_s
                  : m->preload_done ? m->o.capped_exposure - m->exposed : preload_left(m, &by_device);
    size_t g = m->group > 1 ? m->group : 1, fit = left > m->est_busy ? (size_t)ceil(left / m->est_busy) : 1;
    fit = (fit + g - 1) / g * g;
    if (n > fit) n = fit;
  }
  choose_probe_stride(m, m->est_busy);
  double b = 0;
  size_t n0 = m->n;
  PASS(run_batch(m, n, 1, m->est_busy * (double)n, &b, &m->est_wall));
  if (b > 0) m->est_busy = b;
  m->exposed += (b > 0 ? b : m->est_busy) * (double)n;
  double wall = measure_wall_now() - t_start;
  /* Under a power or thermal cap (the power source says so, or the load sustains a clock under
   * the throttle threshold) the time may converge while the clock still moves: wait for both. */
  int capped = !cold && (m->sustained || m->batch_cap > 0);
  m->r->clock_settled = tb_clock_settled(m->clk, m->busy, m->n, m->o.settle_window, m->o.settle_tol);
  /* capped_exposure: a load found capped, or drawing heavy_power of the limit, is sampled for a
   * fixed GPU time instead, the same for every implementation of the case: under the cap the
   * clock keeps sliding for seconds (docs/MEASUREMENT.md), so "settled" would otherwise mean
   * "whenever the timeout comes" for one implementation and "after 10 samples" for another. */
  const char *why_heavy = capped ? "cap" : power_heavy(m) ? "power" : clock_heavy(m, n0) ? "clock" : NULL;
  int found = !cold && m->o.capped_exposure > 0 && measure_modes[m->o.mode].adaptive && why_heavy;
  if (found && m->heavy && m->r->exposure_by && strcmp(m->r->exposure_by, "case") == 0) {
    m->r->exposure_by = "load"; /* it joined its case's exposure, and reads heavy on its own too */
    m->r->heavy_by = why_heavy;
  }
  if (found && !m->heavy) {
    m->heavy = 1;
    m->r->heavy_by = why_heavy;
    m->heavy_at = m->exposed;
    m->preload_done = m->o.capped_preload <= 0;
    m->r->exposure_by = "load";
    /* exposure_scope = "case": the case is heavy, and every load of it still sampling joins */
    if (m->cs && !m->cs->heavy) case_found_heavy(m->cs);
  }
  /* capped_preload: under the cap the clock slides for seconds from the state the previous load
   * left (a cool GPU reads fast, H200 session 11): the load runs that long first and only the
   * samples after it count, so each implementation is read at its own power state. With
   * preload_scope = "device" the device's state is what counts: a heavy streak of capped_preload
   * (a heavy load just before, or the others of an interleaved group) ends it too. */
  if (m->heavy && !m->cs && !m->preload_done && preload_left(m, &by_device) <= m->o.capped_preload * 1e-9) {
    m->r->preloaded_s = m->exposed;
    m->r->preload_by = by_device ? "device" : "load";
    measure_drop_samples(m);
    m->preload_done = 1;
  }
  if (m->heavy) { /* in a case (exposure_scope = "case"), the exposure's end is case_round_end's */
    m->reason = !m->cs && m->preload_done && m->exposed >= m->o.capped_exposure * (1 - 1e-9) ? TB_STOP_EXPOSURE
                : rule->max_samples > 0 && m->run.n >= rule->max_samples ? TB_STOP_MAX_SAMPLES
                : rule->timeout_s > 0 && wall >= rule->timeout_s ? TB_STOP_TIMEOUT
                : TB_STOP_CONTINUE;
  } else {
    m->reason = tb_stop_decide_clock(rule, &m->run, wall, capped, m->r->clock_settled);
    if (m->reason != tb_stop_decide(rule, &m->run, wall)) m->r->settle_waits++;
    /* the heavy probe: a load whose power still rises toward the heavy level does not stop by
     * convergence before heavy_probe_s, so capped_exposure can see it (power.c) */
    if ((m->reason == TB_STOP_CONVERGED || m->reason == TB_STOP_PLATEAU) && power_probe_hold(m)) {
      m->reason = TB_STOP_CONTINUE;
      m->r->heavy_waits++;
    }
  }
  /* Every sample so far ran under the threshold: that is the clock this load sustains, not a
   * passing throttle, and waiting for the timeout would not change it. Give up now; the
   * caller decides (the runner re-measures with the filter off and says so). */
  size_t enough = rule->min_samples > 10 ? rule->min_samples : 10;
  if (m->reason != TB_STOP_CONTINUE || (m->run.n == 0 && m->r->dropped_throttled >= enough)) m->stopped = 1;
  if (m->stopped) m->r->wall_s = measure_wall_now() - t_start;
  return GPU_OK;
}

/* The samples that count: without the sustained switch, those not under the threshold; and in
 * fixed mode no more than repeat (the switch can bring back more). Then the summary. */
static void finish(measure *m, tb_stop_reason reason) {
  measure_result *r = m->r;
  if (!m->sustained) {
    size_t j = 0;
    for (size_t i = 0; i < m->n; i++) {
      if (m->thr[i]) continue;
      m->ms[j] = m->ms[i], m->ev_ms[j] = m->ev_ms[i], m->clk[j] = m->clk[i], m->kpr[j] = m->kpr[i];
      m->busy[j] = m->busy[i], m->capfrac[j] = m->capfrac[i];
      j++;
    }
    m->n = j;
  }
  if (!measure_modes[m->o.mode].adaptive && m->n > (size_t)m->o.repeat) m->n = (size_t)m->o.repeat;
  r->exposure = m->heavy;
  r->exposure_scope = m->cs ? "case" : "load";
  r->exposed_s = m->exposed;
  r->throttle_filter = !m->probe_fn ? "off" : m->o.reading == 1 ? "cold" : m->sustained ? "sustained" : "on";
  r->clock = m->cupti ? "cupti" : "events";
  r->graph = m->graph != NULL;
  r->graph_group = m->group > 1 ? m->group : 1;
  r->flush_bytes = m->flush_bytes;
  r->flush_tlb_bytes = m->tlb_pages * MEASURE_TLB_PAGE;
  r->stop_reason = tb_stop_reason_name(reason);
  power_finish(m);
  if (m->n == 0) {
    r->code = r->dropped_throttled ? "throttled" : "timeout";
    if (r->dropped_throttled)
      snprintf(r->message, sizeof r->message,
               "tb.timer.measure: all %zu samples ran under %.0f%% of the %.0f MHz max SM clock", r->dropped_throttled,
               m->o.throttle_threshold * 100, m->max_mhz);
    else
      snprintf(r->message, sizeof r->message, "tb.timer.measure: no sample kept within %g s (%zu incomplete)",
               m->o.timeout, r->dropped_incomplete);
    return;
  }
  r->n = m->n;
  r->samples = m->ms, r->events_ms = m->ev_ms, r->sm_clocks_mhz = m->clk, r->kernels_per_run = m->kpr;
  m->ms = m->ev_ms = m->clk = m->kpr = NULL; /* the result owns them now */
  tb_summarize(r->samples, r->n, &r->summary);
  tb_summarize(r->events_ms, r->n, &r->events_summary);
  /* a load sampled on an exposure: the mean over it by default (heavy_estimate, docs/MEASUREMENT.md) */
  int trimmed = m->heavy && m->o.heavy_estimate == 0;
  r->estimate = trimmed ? r->summary.trim_mean : r->summary.median;
  r->estimator = trimmed ? "trimmed_mean" : "median";
  r->clock_checked = m->probe_fn != NULL;
  if (r->clock_checked) r->sm_clock_mhz = measure_median(r->sm_clocks_mhz, r->n);
  r->kernels_per_run_median = measure_median(r->kernels_per_run, r->n);
}

static const char *const conditions_names[] = {"interleave", "cooldown", "sequential"};
static const char *const reading_names[] = {"sustained", "cold"};

/* Everything before the first batch: options, buffers, timestamps, the plan's graph, the power
 * source. GPU_OK with r->code set means this work cannot be measured (no memory for the buffers). */
static gpu_status setup(measure *m, const measure_env *env, const measure_opts *o, measure_result *r, double t_start) {
  memset(r, 0, sizeof *r);
  memset(m, 0, sizeof *m);
  m->o = *o;
  if (o->reading == 1) m->o.graph_group = 1; /* cold: no samples back to back in one launch */
  m->env = env, m->gpu = env->gpu, m->props = env->props, m->ts = env->gpu->timestamps;
  m->R = env->cache, m->r = r, m->s = env->stream;
  if (m->R->next_ext_id == 0) m->R->next_ext_id = 1ull << 40;
  r->mode = measure_modes[o->mode].name;
  r->conditions = conditions_names[o->conditions];
  r->reading = reading_names[o->reading];
  r->flush_mode = o->flush_mode == 0 ? "read" : "write";
  r->throttle_threshold = o->throttle_threshold;
  r->stop_reason = tb_stop_reason_name(TB_STOP_CONTINUE);
  m->probe_window = (unsigned)o->clock_window_ns;
  m->max_mhz = m->props->clock_khz / 1e3;
  r->max_clock_mhz = m->max_mhz;
  if (o->clock_check) {
    m->probe_fn = env->kernels.clock_probe;
    if (m->probe_fn == NULL)
      return measure_fail(m, gpu_set_error(GPU_ERR_INVALID, "the clock probe's kernel was not given"),
                          "tb.timer.measure");
  }
  if (o->sustained_clock) m->sustained_min = o->min_samples > 10 ? (size_t)o->min_samples : 10;
  if (o->reading == 1) m->sustained = 1; /* cold: the clock after idle is the reading; nothing is dropped */
  gpu_status st = evict_setup(m);
  if (st == GPU_OK && r->code == NULL) st = probe_setup(m);
  if (st != GPU_OK || r->code != NULL) return st;
  kernel_time_setup(m);
  graph_setup(m);
  if (o->power) power_setup(m);
  else snprintf(r->power_reason, sizeof r->power_reason, "off (option power = false)");
  r->setup_s = measure_wall_now() - t_start;
  return GPU_OK;
}

static void teardown(measure *m) {
  kernel_time_done(m);
  graph_free(m);
  power_free(m);
  free(m->ms); free(m->ev_ms); free(m->clk); free(m->kpr); free(m->thr); free(m->busy); free(m->capfrac);
  m->ms = m->ev_ms = m->clk = m->kpr = m->busy = m->capfrac = NULL;
  m->thr = NULL;
}

gpu_status measure_run_group(const measure_env *envs, size_t k, const measure_opts *o, measure_result *r,
                             size_t *failed) {
  double t_start = envs[0].started > 0 ? envs[0].started : measure_wall_now();
  measure *ms = calloc(k ? k : 1, sizeof *ms);
  *failed = 0;
  if (ms == NULL) {
    memset(r, 0, sizeof *r);
    snprintf(r->message, sizeof r->message, "tb.timer.measure: out of host memory");
    return gpu_set_error(GPU_ERR_OOM, "out of host memory");
  }
  gpu_status st = GPU_OK;
  size_t made = 0, i = 0;
  tb_stop_rule rule;
  measure_stop_rule(o, &rule);
  for (; i < k && st == GPU_OK; i++, made++) {
    st = setup(&ms[i], &envs[i], o, &r[i], t_start);
    if (st == GPU_OK && r[i].code) ms[i].stopped = 1; /* this work only: no buffers */
  }
  for (i = 0; st == GPU_OK && i < k; i++) {
    if (ms[i].stopped) continue;
    if (o->conditions == 1) power_cooldown(&ms[i]); /* cooldown: each work from an idle device */
    st = warm_up(&ms[i]);
  }
  double round_s = k > 1 ? MEASURE_ROUND_S : 0;
  /* exposure_scope = "case": the group's loads share one preload and one exposure (exposure.c) */
  measure_case cs = {.ms = ms, .k = k, .share_s = -1};
  if (st == GPU_OK && o->exposure_scope == 1 && k > 1)
    for (size_t j = 0; j < k; j++) ms[j].cs = &cs; /* i stays where a failure left it */
  for (int active = 1; st == GPU_OK && active;) {
    active = 0;
    if (ms[0].cs) case_round_begin(&cs);
    for (i = 0; st == GPU_OK && i < k; i++) {
      if (ms[i].stopped) continue;
      st = step(&ms[i], &rule, t_start, round_s);
      r[i].rounds++;
    }
    if (st == GPU_OK && ms[0].cs) case_round_end(&cs, &rule, t_start);
    for (size_t j = 0; j < k; j++) active |= !ms[j].stopped;
  }
  if (st != GPU_OK) { /* every loop above leaves i one past the work that failed */
    *failed = i > 0 ? i - 1 : 0;
    for (size_t j = 0; j < made; j++) teardown(&ms[j]);
    free(ms);
    return st;
  }
  for (i = 0; i < k; i++) {
    if (r[i].code == NULL) {
      if (r[i].wall_s == 0) r[i].wall_s = measure_wall_now() - t_start;
      finish(&ms[i], ms[i].reason);
    }
    teardown(&ms[i]);
  }
  free(ms);
  return GPU_OK;
}

gpu_status measure_run(const measure_env *env, const measure_opts *o, measure_result *r) {
  size_t failed = 0;
  return measure_run_group(env, 1, o, r, &failed);
}

void measure_result_free(measure_result *r) {
  free(r->samples); free(r->events_ms); free(r->sm_clocks_mhz); free(r->kernels_per_run);
  r->samples = r->events_ms = r->sm_clocks_mhz = r->kernels_per_run = NULL;
  r->n = 0;
}

void measure_cache_free(measure_cache *c, const gpu_backend *gpu) {
  if (gpu) {
    if (c->evict) gpu->mem_free(c->evict);
    if (c->tlb) gpu->mem_free(c->tlb);
    if (c->probe) gpu->mem_free(c->probe);
    for (size_t i = 0; i < c->n_events; i++) gpu->event_destroy(c->events[i]);
    if (c->fork) gpu->event_destroy(c->fork);
    if (c->side) gpu->stream_destroy(c->side);
  }
  free(c->events);
  free(c->kernel_ns); free(c->probe_mhz); free(c->probe_ns); free(c->busy_tmp);
  free(c->kernel_count); free(c->incomplete); free(c->ev); free(c->probe_host);
  memset(c, 0, sizeof *c);
}
