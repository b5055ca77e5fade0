/* graph.c: graph replay. The plan captured once as a graph (graph = true), and graph groups: G
 * samples (event, eviction, event, run) captured into one graph launch whose kernel timestamps
 * split into samples at the eviction kernels, so the host launches G times less often. */
#include <math.h>
#include <stdio.h>

#include "measure/internal.h"

void graph_setup(measure *m) {
  const gpu_backend *gpu = m->gpu;
  m->graph = NULL;
  m->r->graph_reason[0] = '\0';
  if (!m->o.graph) return;
  gpu_status st = gpu->capture_begin(m->s);
  if (st == GPU_OK) {
    gpu_status run = m->env->work.run(m->env->work.self, m->s);
    char why[2048];
    snprintf(why, sizeof why, "%s", gpu_last_error());
    gpu_graph g = NULL;
    gpu_status end = gpu->capture_end(m->s, &g); /* always ends the capture */
    if (run != GPU_OK) {
      if (g) gpu->graph_destroy(g);
      gpu_set_error(run, "%s", why);
      st = run;
    } else {
      st = end;
      m->graph = end == GPU_OK ? g : NULL;
    }
  }
  if (st != GPU_OK) {
    snprintf(m->r->graph_reason, sizeof m->r->graph_reason, "capture failed, running eagerly: %s", gpu_last_error());
    m->graph = NULL;
  }
}

/* Records event e of a group graph during the capture: in line on the captured stream, or
 * beside it: on the second stream, which first waits for what the captured stream has enqueued
 * so far, and which nothing waits for until the join at the end of the graph. */
static gpu_status group_event(measure *m, gpu_event e, int beside) {
  const gpu_backend *gpu = m->gpu;
  if (!beside) return gpu->event_record_captured(e, m->s);
  gpu_status st = gpu->event_record(m->R->fork, m->s);
  if (st == GPU_OK) st = gpu->stream_wait_event(m->R->side, m->R->fork);
  if (st == GPU_OK) st = gpu->event_record_captured(e, m->R->side);
  return st;
}

/* Captures G samples (event, eviction, event, run; a closing event) into one graph. On failure
 * the measurement goes on with a launch per run, and the reason is recorded.
 * The event before each run stays in line: it is what gives the run a clean start. Launched
 * right behind the eviction, a kernel's CUPTI start falls up to ~3 us before the eviction's end
 * (an empty kernel read 4.4 us instead of 0.6 on an H200). The event after each run
 * (group_events = split, the default) goes on a branch beside the kernels, waiting on the run and
 * waited on by nothing but the graph's end, so the next eviction follows the run directly: one
 * event node less in each sample's path (GPU idle 3.7 instead of 6.0 us a sample on an H200).
 * Should CUPTI put the eviction's start before the run's end, the collect counts the overlap once
 * (overlap_s); none was seen in this layout. */
static gpu_status setup_group(measure *m, size_t G) {
  const gpu_backend *gpu = m->gpu;
  measure_cache *R = m->R;
  int split = m->o.group_events == 0;
  PASS(measure_ensure_events(m, 2 * G + 1));
  if (split && R->side == NULL) {
    TRY(m, gpu->stream_create(&R->side), "creating the graph's second stream");
    TRY(m, gpu->event_create(&R->fork), "creating events");
  }
  gpu_status st = gpu->capture_begin(m->s);
  const char *what = "beginning the capture";
  if (st == GPU_OK) {
    for (size_t j = 0; j < G && st == GPU_OK; j++) {
      what = "an event node";
      if ((st = group_event(m, R->events[2 * j], split)) != GPU_OK) break;
      what = "the eviction";
      if ((st = evict_launch(m)) != GPU_OK) break;
      what = "an event node";
      if ((st = group_event(m, R->events[2 * j + 1], 0)) != GPU_OK) break;
      what = "the plan";
      st = m->env->work.run(m->env->work.self, m->s);
    }
    if (st == GPU_OK) {
      what = "an event node";
      st = group_event(m, R->events[2 * G], split);
    }
    if (st == GPU_OK && split) { /* join the second stream back */
      what = "joining the event branch";
      st = gpu->event_record(R->fork, R->side);
      if (st == GPU_OK) st = gpu->stream_wait_event(m->s, R->fork);
    }
    char why[2048];
    snprintf(why, sizeof why, "%s", gpu_last_error());
    gpu_graph g = NULL;
    gpu_status end = gpu->capture_end_events(m->s, &g, R->events, 2 * G + 1); /* always ends the capture */
    if (st != GPU_OK) {
      if (g) gpu->graph_destroy(g);
      gpu_set_error(st, "%s", why);
    } else {
      what = "ending the capture";
      st = end;
      m->group_graph = end == GPU_OK ? g : NULL;
    }
  }
  if (st != GPU_OK) {
    snprintf(m->r->group_reason, sizeof m->r->group_reason, "graph of %zu samples not captured (%s): %s", G, what,
             gpu_last_error());
    m->group_graph = NULL;
    m->group = 1;
    return GPU_OK;
  }
  m->group = G;
  return GPU_OK;
}

/* Graph groups (graph mode with timestamps and the read eviction): samples per launch covering
 * about clock_interval of GPU time, by the warm-up's median busy time. */
gpu_status graph_choose_groups(measure *m, double est_busy) {
  m->group = 1;
  if (m->graph && m->cupti && m->evict_fn && m->o.graph_group != 1) {
    size_t G = (size_t)m->o.graph_group;
    if (G == 0) {
      double interval = m->o.clock_interval > 0 ? m->o.clock_interval : 0.005;
      double k = est_busy > 0 ? floor(interval / est_busy) : 1;
      G = k < 1 ? 1 : k > 32 ? 32 : (size_t)k;
    }
    if (G > 1) {
      double t0 = measure_wall_now();
      m->ts->set_marker("tb_evict");
      gpu_status st = setup_group(m, G);
      m->r->group_setup_s = measure_wall_now() - t0;
      return st;
    }
  } else if (m->o.graph_group > 1) {
    snprintf(m->r->group_reason, sizeof m->r->group_reason, "graph groups need %s",
             !m->graph ? "graph mode" : !m->cupti ? "the CUPTI clock" : "the read eviction (flush_mode read)");
  }
  return GPU_OK;
}

/* n (a multiple of group) samples as n / group launches of the group graph, each
 * [E0 eviction E1 run E2 eviction E3 run ... E2G] with its event nodes re-pointed at this batch's
 * events (2G + 1 a launch, none shared across launches), tagged ext_base + launch index; probes
 * between launches, probe_stride being a multiple of group. */
gpu_status graph_enqueue_groups(measure *m, size_t n, uint64_t ext_base) {
  const gpu_backend *gpu = m->gpu;
  measure_cache *R = m->R;
  size_t G = m->group, k = m->probe_stride ? m->probe_stride : G;
  for (size_t g = 0; g * G < n; g++) {
    size_t base = g * (2 * G + 1);
    double t0 = measure_wall_now();
    for (size_t e = 0; e <= 2 * G; e++)
      TRY(m, gpu->graph_set_event(m->group_graph, e, R->events[base + e]), "pointing the graph's events");
    m->r->enqueue_events_s += measure_wall_now() - t0;
    for (size_t j = 0; j < G; j++) {
      int *ev = &R->ev[3 * (g * G + j)];
      ev[0] = (int)(base + 2 * j), ev[1] = (int)(base + 2 * j + 1), ev[2] = (int)(base + 2 * j + 2);
    }
    TRY(m, kernel_time_push(m, ext_base + g), "tb.timer.measure");
    gpu_status st = kernel_time_pop(m, gpu->graph_launch(m->group_graph, m->s));
    if (st != GPU_OK) return measure_fail(m, st, "running the graph of (eviction, run) samples");
    size_t i = g * G + G - 1; /* the launch's last sample */
    if (m->probe_fn && ((i + 1) % k == 0 || i + 1 == n)) TRY(m, probe_launch(m, i / k + 1), "clock probe");
  }
  return GPU_OK;
}

/* Leaves graph groups for a launch per run, saying why. */
void graph_drop_groups(measure *m, const char *why) {
  if (m->group_graph) m->gpu->graph_destroy(m->group_graph);
  m->group_graph = NULL;
  m->group = 1;
  snprintf(m->r->group_reason, sizeof m->r->group_reason, "%s", why);
}

void graph_free(measure *m) {
  if (m->graph) m->gpu->graph_destroy(m->graph);
  m->graph = NULL;
  if (m->group_graph) m->gpu->graph_destroy(m->group_graph);
  m->group_graph = NULL;
}
