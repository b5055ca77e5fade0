/* internal.h: the state of one measurement, shared by the engine's units (host/measure/).
 * Not for callers: they use measure.h. Every function returns a gpu_status; the first failure
 * writes "[timeout: ]<what>: <gpu_last_error()>" into the result's message (measure_fail) and
 * the callers above pass the status on (PASS) without writing again. */
#ifndef TB_MEASURE_INTERNAL_H
#define TB_MEASURE_INTERNAL_H

#include "measure/measure.h"

struct measure;
/* exposure_scope = "case" (exposure.c): an interleaved group's shared preload and exposure. */
typedef struct measure_case {
  struct measure *ms;        /* the group's loads */
  size_t k;
  int heavy;                 /* a load was found heavy: every load still sampling joined (measure.heavy) */
  int preload_done;          /* the shared preload is over (or off): the exposure's samples count */
  double share_s;            /* GPU seconds each joined load may take this round (< 0: no limit) */
} measure_case;

typedef struct measure {
  measure_opts o;
  const measure_env *env;
  const gpu_backend *gpu;
  const gpu_device_props *props;
  const gpu_timestamps *ts;  /* the backend's kernel timestamps (NULL: none) */
  measure_cache *R;
  measure_result *r;
  gpu_stream s;
  int cupti;                 /* kernel timestamps are the reported clock */
  int cupti_all_api;         /* already fell back to tracing every API call */
  gpu_graph graph;
  gpu_graph group_graph;     /* graph groups: `group` samples per launch (0/1: none) */
  size_t group;
  size_t flush_bytes;
  size_t tlb_pages;          /* pages the eviction touches for the TLBs (flush_tlb_bytes / 2 MiB) */
  gpu_function *evict_fn, *pages_fn; /* read eviction (NULL: memset) */
  gpu_function *probe_fn;
  size_t probe_stride;       /* samples per probe group in the current batch */
  unsigned probe_window;
  double max_mhz;
  /* complete samples, in order; thr: taken under the throttle threshold. run counts the samples
   * that count (those not under the threshold, or all of them once the load is found to sustain
   * a lower clock: sustained); run_all every one. */
  double *ms, *ev_ms, *clk, *kpr;
  unsigned char *thr;
  size_t n, cap;
  size_t sustained_min;
  int sustained;
  tb_running run, run_all;
  double *busy, *capfrac;    /* per sample: GPU busy seconds, share of its batch's readings capped */
  /* power.c: the power source (NULL: none, r->power_reason says why), this batch's readings */
  const gpu_power *pw;
  size_t batch_reads, batch_capped;
  double batch_cap, last_read;
  double batch_power_max;    /* the highest power this batch read (W; < 0: none) */
  double batch_level;        /* the batch's highest power, each reading's instantaneous one where known,
                                else its average: what the heavy test and the heavy probe read (< 0: none) */
  double prev_level;         /* batch_level of the batch before (warm-up included; < 0: none) */
  double batch_now_max, now_max; /* the highest instantaneous power of this batch, of the kept batches */
  double limit_w;            /* the enforced power limit (0: unknown) */
  int heavy;                 /* the load drew heavy_power of the limit, or ran capped: capped_exposure applies */
  double exposed;            /* GPU busy seconds of the sampling batches so far (since the preload) */
  double heavy_at;           /* exposed when the load was found heavy */
  int preload_done;          /* capped_preload is over (or off): the exposure's samples count */
  measure_case *cs;          /* exposure_scope = "case" in a group of two or more: the case (else NULL) */
  double *pw_w, *pw_mhz;     /* every reading while sampling (power, NVML SM clock) */
  size_t n_pw, cap_pw;
  int stopped;               /* no more batches */
  double est_busy, est_wall; /* median GPU busy and host seconds per sample of the last batch */
  tb_stop_reason reason;
  size_t warmup_left;
} measure;

#define PASS(call)                  \
  do {                              \
    gpu_status st_ = (call);        \
    if (st_ != GPU_OK) return st_;  \
  } while (0)
/* A GPU call of this unit: on failure, say what failed. */
#define TRY(m, call, what)                                   \
  do {                                                       \
    gpu_status st_ = (call);                                 \
    if (st_ != GPU_OK) return measure_fail(m, st_, what);    \
  } while (0)

/* Writes "[timeout: ]what: <gpu_last_error()>" into the result's message; returns st. */
gpu_status measure_fail(measure *m, gpu_status st, const char *what);
double measure_median(const double *x, size_t n);

/* evict.c */
size_t evict_default_bytes(const gpu_device_props *p);
gpu_status evict_ensure_buffer(measure *m, gpu_ptr *buf, size_t *cap, size_t need);
gpu_status evict_setup(measure *m);     /* sizes and fills the buffers; r->code = "oom" when short */
gpu_status evict_launch(measure *m);    /* one eviction on m->s (no failure message: callers say) */

/* clock_probe.c */
gpu_status probe_setup(measure *m);     /* the probe buffer and the batch arrays */
gpu_status probe_launch(measure *m, size_t slot);
gpu_status probe_read_batch(measure *m, size_t n); /* copies and reduces a batch's probes */
double probe_clock(const measure *m, size_t slot, double *window_ns);

/* kernel_time.c: the kernel-time sources: kernel timestamps (CUPTI) tagged per launch, else the
 * events around each run. */
void kernel_time_setup(measure *m);
gpu_status kernel_time_push(measure *m, uint64_t id);
gpu_status kernel_time_pop(measure *m, gpu_status launch); /* the launch's own failure wins */
/* Reads the batch's timestamps into R->kernel_ns / kernel_count / incomplete. *use says whether
 * they time this batch; *keep drops to 0 when the batch only counts as warm-up (a fallback). */
gpu_status kernel_time_collect(measure *m, size_t n, uint64_t ext_base, int *use, int *keep);
void kernel_time_done(measure *m);      /* forgets what is left of this measurement's records */
void kernel_time_say_fallback(measure *m);

/* graph.c */
void graph_setup(measure *m);           /* the plan as one graph, or a reason in graph_reason */
gpu_status graph_choose_groups(measure *m, double est_busy); /* after the warm-up */
gpu_status graph_enqueue_groups(measure *m, size_t n, uint64_t ext_base);
void graph_drop_groups(measure *m, const char *why);
void graph_free(measure *m);

#define MEASURE_POLL_S 0.005 /* readings while waiting: at most one per 5 ms (each is three driver queries) */

/* power.c: readings of gpu_backend.power around batches, the cool-down. Never fails a measurement:
 * a source that cannot be opened or read is dropped with its reason in r->power_reason. */
void power_setup(measure *m);
void power_batch_begin(measure *m);
void power_poll(measure *m);            /* during the wait: at most every 5 ms */
void power_batch_end(measure *m, int keep); /* sets batch_cap; keep: a sampling batch */
void power_cooldown(measure *m);        /* blocks until idle or cooldown_max */
/* capped_exposure's tests on the last batch: heavy (its level reached heavy_power of the limit),
 * and the heavy probe (a load not found heavy yet whose level rises toward it may not stop by
 * convergence before heavy_probe_s of GPU time: docs/MEASUREMENT.md). */
int power_heavy(const measure *m);
int power_probe_hold(const measure *m);
/* Seconds (wall) the device of m has read heavy without a pause over heavy_gap_s, up to its last
 * reading; 0 without a power source or once the last heavy reading is older than heavy_gap_s. */
double power_heavy_streak(const measure *m);
void power_finish(measure *m);          /* the result's power fields */
void power_free(measure *m);

/* measure.c */
gpu_status measure_ensure_events(measure *m, size_t need);
void measure_drop_samples(measure *m);  /* forgets the samples kept so far (a preload's) */

/* exposure.c: exposure_scope = "case". case_found_heavy: a load of the case was found heavy, every
 * load still sampling joins. case_round_begin: each joined load's share of what the preload or the
 * exposure has left (share_s). case_round_end: after a round, ends the shared preload (every joined
 * load's samples dropped) or, once the joined loads' GPU time since it reached capped_exposure and
 * each has min_samples, stops them all by "exposure". */
void case_found_heavy(measure_case *cs);
void case_round_begin(measure_case *cs);
void case_round_end(measure_case *cs, const tb_stop_rule *rule, double t_start);

#endif
