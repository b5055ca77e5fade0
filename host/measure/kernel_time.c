/* kernel_time.c: the kernel-time sources. The backend's kernel timestamps (CUPTI on CUDA: the
 * kernels' own start and end, launch gaps excluded) are the reported clock when available; each
 * run is tagged with its own id. Without them, the events around each run time it (measure.c
 * reads those for every sample anyway). The fallbacks are decided here, once per measurement. */
#include <stdio.h>

#include "measure/internal.h"

void kernel_time_say_fallback(measure *m) {
  if (m->R->said_fallback) return;
  m->R->said_fallback = 1;
  fprintf(stderr, "tilebench: timing with CUDA events instead of CUPTI: %s\n", m->r->clock_reason);
}

void kernel_time_setup(measure *m) {
  m->cupti = 0;
  m->r->clock_reason[0] = '\0';
  if (m->o.clock == 1) return; /* events asked for: no fallback to report */
  gpu_status st = m->ts ? m->ts->start()
                        : gpu_set_error(GPU_ERR_NO_LIBRARY, "the %s backend has no kernel timestamps", m->gpu->name);
  if (st == GPU_OK) {
    m->cupti = 1;
    /* Records of earlier launches (verification, other plans) are not ours: they carry no id of
     * this measurement (ids are never reused), so the collect skips them. No synchronize-and-
     * flush here: that cost one round trip per measurement for nothing. */
    m->ts->discard();
    return;
  }
  snprintf(m->r->clock_reason, sizeof m->r->clock_reason, "%s", gpu_last_error());
  kernel_time_say_fallback(m);
}

gpu_status kernel_time_push(measure *m, uint64_t id) { return m->ts->push(id); }

/* Pops the id pushed around a launch. The launch's own failure, if any, wins and keeps its message. */
gpu_status kernel_time_pop(measure *m, gpu_status launch) {
  char keep[2048], api[64];
  snprintf(keep, sizeof keep, "%s", gpu_last_error());
  snprintf(api, sizeof api, "%s", gpu_last_error_api());
  gpu_status pop = m->ts->pop();
  if (launch == GPU_OK) return pop;
  gpu_set_api_error(launch, api, "%s", keep);
  return launch;
}

gpu_status kernel_time_collect(measure *m, size_t n, uint64_t ext_base, int *use, int *keep) {
  measure_cache *R = m->R;
  *use = m->cupti;
  if (!m->cupti) return GPU_OK;
  /* The batch's last launch: its last group graph, else its last run. */
  uint64_t last = m->group > 1 ? ext_base + n / m->group - 1 : ext_base + n - 1;
  double t0 = measure_wall_now();
  TRY(m, m->ts->flush_until(last), "reading CUPTI records");
  m->r->flush_s += measure_wall_now() - t0;
  double clipped0 = m->ts->clipped_ns();
  gpu_status st = m->group > 1
    ? m->ts->collect_groups(ext_base, n / m->group, m->group, R->kernel_ns, R->kernel_count, R->incomplete)
    : m->ts->collect(ext_base, 2 * n, R->kernel_ns, R->kernel_count, R->incomplete);
  m->r->overlap_s += (m->ts->clipped_ns() - clipped0) * 1e-9;
  if (st != GPU_OK) return measure_fail(m, st, "reading CUPTI records");
  size_t tagged = 0, split = 0;
  for (size_t i = 0; i < n; i++) {
    tagged += R->kernel_count[i] > 0 || R->incomplete[i] > 0;
    split += R->kernel_count[i] > 0 && R->incomplete[i] == 0;
  }
  if (m->group > 1 && 2 * split < n) {
    /* The records of the graph launches did not split into samples: run a launch per run from the
     * next batch on; this batch counts as warm-up (its busy time by events). */
    char why[256];
    snprintf(why, sizeof why, "CUPTI records of the graph launches split into samples for %zu of %zu samples; "
             "a graph launch per run instead", split, n);
    graph_drop_groups(m, why);
    *keep = 0;
    *use = 0;
  } else if (tagged == 0 && m->env->work.kernels > 0) {
    /* No launch of this batch carried our id. Trace every API once; then give up on timestamps. */
    if (!m->cupti_all_api && m->ts->trace_all_api() == GPU_OK) {
      m->cupti_all_api = 1;
      *keep = 0;
      *use = 0;
    } else {
      m->cupti = *use = 0;
      snprintf(m->r->clock_reason, sizeof m->r->clock_reason,
               "CUPTI delivered no kernel record tagged with the plan's launches");
      kernel_time_say_fallback(m);
    }
  }
  return GPU_OK;
}

void kernel_time_done(measure *m) {
  if (m->cupti) m->ts->discard();
}
