/* exposure.c: exposure_scope = "case". In an interleaved group (measure_run_group, two loads or
 * more) the preload and the exposure of capped_exposure belong to the case, not to each load: the
 * loads run in rounds and share the device's power state, so one preload brings the device to the
 * state of the case, and one exposure of their total GPU time covers every load over the same span
 * of the power controller's oscillation. A capped case then costs capped_preload +
 * capped_exposure of GPU time whatever the number of implementations (with "load", k times that).
 *
 * The rules (docs/MEASUREMENT.md, "The exposure's scope"):
 * - the case is heavy once any of its loads is found heavy (measure.c's heavy test); every load
 *   still sampling then joins (exposure_by "case" for those not found heavy on their own): in rounds
 *   a light load runs at the clock the heavy ones leave, so its reading depends on that state as
 *   much as theirs. A load that stopped before keeps its result;
 * - the preload ends after the round in which the joined loads' GPU time since the case was found
 *   heavy reaches capped_preload (or, with preload_scope = "device", the device's heavy streak
 *   does): every joined load drops its samples so far (preload_by "case" or "device");
 * - the exposure ends after the round in which the joined loads' GPU time since the preload
 *   reaches capped_exposure and every joined load still sampling has min_samples kept samples (a
 *   load of long kernels extends the rounds for all, so they still share one window): every joined
 *   load stops by "exposure". Rounds end together, so the loads' samples interleave across the
 *   whole window; each round's batches are trimmed to a share of what is left.
 * Timeout and max_samples still stop a load on their own (measure.c's step). */
#include <math.h>

#include "measure/internal.h"

/* GPU seconds the shared preload still lacks: the joined loads' own since the case was found heavy,
 * or with preload_scope = "device" what the device's heavy streak lacks where that is less. */
static double preload_left(const measure_case *cs, int *by_device) {
  double done = 0;
  const measure *any = NULL;
  for (size_t i = 0; i < cs->k; i++) {
    const measure *m = &cs->ms[i];
    if (!m->heavy) continue;
    done += m->exposed - m->heavy_at;
    if (!m->stopped) any = m;
  }
  double own = cs->ms[0].o.capped_preload - done;
  double dev = any && any->o.preload_scope == 1 ? any->o.capped_preload - power_heavy_streak(any) : own;
  *by_device = dev < own;
  return dev < own ? dev : own;
}

/* The joined loads' GPU time since the preload (all of it where there was none); *sampling: how
 * many of them still sample; *short_of: whether one of those lacks min_samples kept samples. */
static double exposed(const measure_case *cs, size_t min_samples, size_t *sampling, int *short_of) {
  double total = 0;
  *sampling = 0, *short_of = 0;
  for (size_t i = 0; i < cs->k; i++) {
    const measure *m = &cs->ms[i];
    if (!m->heavy) continue;
    if (m->preload_done) total += m->exposed; /* not those that stopped during the preload */
    if (m->stopped) continue;
    (*sampling)++;
    if (m->run.n < min_samples) *short_of = 1;
  }
  return total;
}

void case_found_heavy(measure_case *cs) {
  cs->heavy = 1;
  cs->preload_done = cs->ms[0].o.capped_preload <= 0;
  for (size_t i = 0; i < cs->k; i++) {
    measure *m = &cs->ms[i];
    if (m->stopped || m->r->code) continue;
    if (!m->heavy) {
      m->heavy = 1;
      m->r->exposure_by = "case";
    }
    m->heavy_at = m->exposed; /* the preload counts from the case's finding, for every load */
    m->preload_done = cs->preload_done;
  }
}

void case_round_begin(measure_case *cs) {
  cs->share_s = -1;
  if (!cs->heavy) return;
  size_t sampling = 0;
  int short_of = 0, by_device = 0;
  double total = exposed(cs, 0, &sampling, &short_of);
  double left = cs->preload_done ? cs->ms[0].o.capped_exposure - total : preload_left(cs, &by_device);
  /* left <= 0 (rounds extended for min_samples): one sample each */
  cs->share_s = sampling && left > 0 ? left / (double)sampling : 0;
}

void case_round_end(measure_case *cs, const tb_stop_rule *rule, double t_start) {
  if (!cs->heavy) return;
  const measure_opts *o = &cs->ms[0].o;
  if (!cs->preload_done) {
    int by_device = 0;
    if (preload_left(cs, &by_device) > o->capped_preload * 1e-9) return;
    for (size_t i = 0; i < cs->k; i++) {
      measure *m = &cs->ms[i];
      if (!m->heavy || m->stopped) continue;
      m->r->preloaded_s = m->exposed;
      m->r->preload_by = by_device ? "device" : "case";
      measure_drop_samples(m);
      m->preload_done = 1;
    }
    cs->preload_done = 1;
    return; /* the exposure starts with the next round */
  }
  size_t sampling = 0;
  int short_of = 0;
  double total = exposed(cs, rule->min_samples, &sampling, &short_of);
  if (sampling == 0 || short_of || total < o->capped_exposure * (1 - 1e-9)) return;
  double wall = measure_wall_now() - t_start;
  for (size_t i = 0; i < cs->k; i++) {
    measure *m = &cs->ms[i];
    if (!m->heavy || m->stopped) continue;
    m->reason = TB_STOP_EXPOSURE;
    m->stopped = 1;
    m->r->wall_s = wall;
  }
}
