/* measure.h: the timer's engine: measures a unit of GPU work (a launch plan) on any gpu_backend
 * with eviction before every run, kernel timestamps or events, graph replay and graph groups,
 * clock probes and a stopping rule. No Lua: tb_timer.c is the binding (options from a Lua table,
 * the result as a table); tests/c/test_measure.c drives it on the fake backend.
 *
 * Units (host/measure/): options.c (the option table), modes.c (timing modes: batch sizing and
 * stopping rule), evict.c (cache eviction), clock_probe.c (SM clock probes), power.c (the power
 * source's readings around batches, the cool-down), exposure.c (exposure_scope = "case": an
 * interleaved case's shared preload and exposure), kernel_time.c
 * (kernel-time sources: timestamps, events), graph.c (graph replay, graph groups), measure.c
 * (the loop: enqueue, wait, collect, summarize). docs/MEASUREMENT.md says what each measures. */
#ifndef TB_MEASURE_H
#define TB_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"
#include "stats.h"

#define MEASURE_BATCH_MAX 8192       /* samples enqueued before the host waits */
#define MEASURE_TLB_PAGE (2ull << 20) /* the driver maps large allocations with 2 MiB pages */

/* ---- options (options.c): declared once as data; tb.timer.options exports the table, and the
 * CLI, campaign validation and --help are generated from it. A new option: a field here and a
 * row in measure_options[]. */
typedef enum measure_opt_type {
  MEASURE_OPT_NUMBER, MEASURE_OPT_INTEGER, MEASURE_OPT_BOOLEAN, MEASURE_OPT_CHOICE
} measure_opt_type;

typedef struct measure_opts {
  int mode;             /* index into measure_modes[] (0 adaptive, 1 fixed) */
  double warmup;        /* -1: the mode's default */
  double repeat, min_samples, max_samples, max_noise, min_time, timeout, noise_plateau;
  int flush;
  double flush_bytes;   /* -1: by device */
  int flush_mode;       /* 0 read (evict.cu), 1 write (memset) */
  double flush_tlb_bytes; /* 0: no page sweep */
  int graph;
  double graph_group;   /* samples per graph launch; 0: by the case */
  int group_events;     /* 0 split (the event after each run beside the kernels), 1 inline */
  int clock;            /* 0 cupti (kernel timestamps), 1 events */
  int clock_check, sustained_clock;
  double throttle_threshold, clock_window_ns, clock_interval, sync_timeout;
  int conditions;       /* 0 interleave (a case's implementations in rounds: measure_run_group),
                           1 cooldown (each measurement starts after a cool-down), 2 sequential */
  int reading;          /* 0 sustained, 1 cold (each sample after a cool-down) */
  double cooldown_max;  /* seconds a cool-down may last */
  double settle_window, settle_tol; /* the clock-settle rule under a cap (tb_clock_settled) */
  int power;            /* read the power source around each batch (power.c) */
  double capped_exposure; /* seconds of GPU time a capped or heavy load is sampled for (0: off) */
  double capped_preload;  /* capped_exposure: seconds of GPU time such a load runs first, its samples
                             dropped, before the exposure's samples count (0: none) */
  double heavy_power;   /* share of the power limit from which a load is heavy */
  int heavy_estimate;    /* the time reported for a load sampled on an exposure: 0 trimmed_mean (the
                           5 % trimmed mean), 1 median */
  double heavy_clock;   /* capped_exposure: a batch whose median probe SM clock is under this share of
                           the max SM clock makes the load heavy (0: off) */
  double heavy_probe_s; /* capped_exposure: GPU seconds a load whose power rises toward heavy_power
                           runs before convergence may stop it (0: off; power_probe_hold) */
  int preload_scope;    /* 0 load (capped_preload is the load's own GPU time), 1 device (also ended by
                           the device's heavy streak: power_heavy_streak) */
  double heavy_gap_s;   /* preload_scope device: the longest pause between two heavy readings that
                           keeps the device's heavy streak going */
  int exposure_scope;   /* 0 load (each heavy load its own preload and exposure), 1 case (an interleaved
                           group's loads share one preload and one exposure of their total GPU time:
                           exposure.c) */
} measure_opts;

typedef struct measure_opt_desc {
  const char *name;
  measure_opt_type type;
  size_t offset;        /* of the field in measure_opts: int for BOOLEAN/CHOICE, else double */
  const char *choices;  /* CHOICE: space-separated, index = the field's value */
  double min, max;      /* NUMBER/INTEGER: the accepted range */
  const char *def;      /* the default, as the help says it */
  const char *desc;
} measure_opt_desc;

extern const measure_opt_desc measure_options[];
extern const size_t measure_n_options;
extern const measure_opts measure_default_opts;

const measure_opt_desc *measure_option_find(const char *name);
const char *measure_option_type_name(measure_opt_type t); /* "number", "integer", "boolean", "choice" */
/* Set one option; on a bad value return -1 with "option 'NAME' must be ..." in msg. */
int measure_option_set_number(measure_opts *o, const measure_opt_desc *d, double v, char *msg, size_t len);
int measure_option_set_boolean(measure_opts *o, const measure_opt_desc *d, int v, char *msg, size_t len);
int measure_option_set_choice(measure_opts *o, const measure_opt_desc *d, const char *word, char *msg, size_t len);
/* Rules between options; -1 with "option 'X' needs ..." in msg. */
int measure_opts_check(const measure_opts *o, char *msg, size_t len);

/* ---- timing modes (modes.c): one row per mode; a new mode is a row here and its name in the
 * 'mode' option's choices (test_measure checks they agree). */
typedef struct measure_mode {
  const char *name;
  size_t default_warmup;
  int adaptive;         /* the stopping rule tb_stop_decide applies (stats.h) */
  /* Samples the next batch should hold, before the timeout and batch limits: what the rule still
   * needs given the kept samples (run) and the median GPU busy seconds per sample (est_busy). */
  size_t (*next_batch)(const tb_stop_rule *rule, const tb_running *run, double est_busy);
} measure_mode;
extern const measure_mode measure_modes[];
extern const size_t measure_n_modes;
void measure_stop_rule(const measure_opts *o, tb_stop_rule *rule);

/* ---- what the engine measures and with what ---------------------------------------------- */

/* The work a sample times: run() enqueues one run on s (a plan: tb_plan_run). */
typedef struct measure_work {
  gpu_status (*run)(void *self, gpu_stream s);
  void *self;
  int kernels;          /* kernel launches per run (0: none; CUPTI then has nothing to tag) */
} measure_work;

/* The host's own kernels (host/kernels/, .cu), compiled by the caller; NULL where the options do
 * not need them (evict_read: flush_mode read; evict_pages: flush_tlb_bytes; clock_probe:
 * clock_check). */
typedef struct measure_kernels {
  gpu_function *evict_read, *evict_pages, *clock_probe;
} measure_kernels;

/* Process-wide resources kept between measurements (allocating them per case cost ~1-2 ms): the
 * eviction and probe buffers, the events, the graph groups' second stream, the batch arrays and
 * the next timestamp id (ids are never reused, so records of earlier work never match). Zero-
 * initialise; measure_cache_free gives everything back to gpu. */
typedef struct measure_cache {
  gpu_ptr evict;
  size_t evict_cap, evict_filled; /* filled: bytes given their one-time memset */
  gpu_ptr tlb;
  size_t tlb_cap, tlb_filled;
  gpu_ptr probe;
  size_t probe_cap;
  gpu_event *events;
  size_t n_events;
  uint64_t next_ext_id;           /* 0: not started (first id 2^40) */
  uint32_t evict_value;
  int said_fallback;              /* the events fallback was reported on stderr */
  double idle_floor_w;            /* the lowest power a cool-down of this process read (0: none yet) */
  gpu_stream side;                /* group_events = split: the capture's second stream */
  gpu_event fork;                 /* its fork and join points (recorded during captures only) */
  /* per batch (MEASURE_BATCH_MAX + 1 samples) */
  double *kernel_ns, *probe_mhz, *probe_ns, *busy_tmp;
  int *kernel_count, *incomplete, *ev;
  unsigned long long *probe_host;
  size_t sms;
} measure_cache;
void measure_cache_free(measure_cache *c, const gpu_backend *gpu);

typedef struct measure_env {
  const gpu_backend *gpu;
  const gpu_device_props *props;
  gpu_stream stream;              /* where everything is enqueued (never the legacy stream) */
  double buffer_sync_timeout_s;   /* wait before freeing a buffer that grows */
  double started;                 /* measure_wall_now() when the caller began (the timeout and wall_s
                                     count from it); 0: when measure_run begins */
  measure_cache *cache;
  measure_kernels kernels;
  measure_work work;
} measure_env;

/* ---- the result ------------------------------------------------------------------------------
 * Every field tb.timer.measure returns (docs/MEASUREMENT.md). Arrays hold n entries, owned by the
 * result (measure_result_free). */
typedef struct measure_result {
  /* outcome: code NULL (samples kept), or "throttled" / "timeout" / "oom" (no sample kept, or no
   * memory for the eviction buffer: a case status); message says why. On a failure of the GPU
   * (measure_run != GPU_OK) message is "[timeout: ]<what>: <gpu_last_error()>". */
  const char *code;
  char message[4096];
  char error_api[64];             /* the API that failed (gpu_last_error_api()), "" when none */
  const char *clock;              /* "cupti" | "events" */
  char clock_reason[1024];        /* why not CUPTI ("" when it is, or events were asked for) */
  char graph_reason[1024], group_reason[1024];
  double *samples, *events_ms, *sm_clocks_mhz, *kernels_per_run;
  size_t n;
  size_t dropped_throttled, under_threshold, dropped_incomplete;
  const char *throttle_filter;    /* "on", "off", "sustained" */
  tb_summary summary, events_summary;
  int clock_checked;              /* sm_clocks_mhz and sm_clock_mhz are meaningful */
  double sm_clock_mhz, max_clock_mhz, throttle_threshold;
  int graph;
  size_t graph_group;
  size_t flush_bytes, flush_tlb_bytes;
  const char *flush_mode;
  size_t probes, batches, warmup;
  const char *mode;
  double wall_s, gpu_busy_s, evict_s, probe_s, setup_s, enqueue_s, wait_s, collect_s, gpu_span_s;
  double group_setup_s, enqueue_events_s, flush_s, overlap_s, kernels_per_run_median;
  const char *stop_reason;
  /* power and clock state (power.c; gpu_backend.power, NVML on CUDA) */
  int power_read;                 /* readings were taken: the fields below are meaningful */
  char power_reason[512];         /* why not ("" when they were) */
  double cap_fraction;            /* of the kept samples, the share taken under a power or thermal cap */
  unsigned cap_reasons;           /* GPU_CAP_* bits seen while sampling */
  double power_w, power_max_w;    /* median and highest power read while sampling (NVML's 1 s average) */
  double power_now_max_w;         /* highest instantaneous power read while sampling (0: unknown) */
  double nvml_sm_clock_mhz;       /* median SM clock the power source read (0: unknown) */
  size_t power_readings;
  double cooldown_s;              /* seconds spent cooling down (cooldown conditions, cold reading) */
  size_t cooldowns, cooldowns_bounded; /* cool-downs, and those that ended at cooldown_max */
  const char *conditions, *reading;
  int clock_settled;              /* the clock had settled when the measurement stopped */
  size_t settle_waits;            /* batches after a stop the unsettled clock held back */
  size_t rounds;                  /* interleaved: rounds this measurement took part in */
  int exposure;                   /* the fixed exposure applied (capped_exposure > 0 and the load was
                                     capped or heavy) */
  double exposed_s;               /* GPU busy seconds of the samples taken (all, kept or not) */
  size_t heavy_waits;             /* batches the heavy probe added (heavy_probe_s) */
  double preloaded_s;             /* capped_preload: GPU busy seconds of the samples dropped (those before
                                     the load was found heavy, and the preload's) */
  double estimate;                 /* the reported time (ms): the median, or for a load sampled on an
                                     exposure the heavy_estimate (trimmed mean by default) */
  const char *estimator;          /* "median" or "trimmed_mean" */
  const char *heavy_by;           /* why the load counted as heavy: "cap" (capped readings or a sustained
                                     low clock), "power" (heavy_power of the limit) or "clock" (the probe
                                     clock under heavy_clock of the max); NULL where it did not (a load
                                     that joined its case's exposure without reading heavy itself) */
  const char *preload_by;         /* what ended the preload: "load" (its own GPU time), "device" (the
                                     device's heavy streak, preload_scope device) or "case" (the case's
                                     shared preload, exposure_scope case); NULL: none ran */
  const char *exposure_scope;     /* the scope that applied: "case" in an interleaved group of two or more
                                     with exposure_scope = "case", else "load" */
  const char *exposure_by;        /* why the exposure applied: "load" (its own readings or clock) or
                                     "case" (another load of its interleaved case was found heavy);
                                     NULL: not heavy */
} measure_result;

/* Measures env->work under o. GPU_OK with r filled (r->code says whether samples were kept);
 * otherwise the failing status with r->message. Options must have passed measure_opts_check. */
gpu_status measure_run(const measure_env *env, const measure_opts *o, measure_result *r);
/* Measures k works under o interleaved: after each one's warm-up (in order), rounds of one batch
 * of each work still sampling, in order (A B C A B C ...), each batch covering about
 * MEASURE_ROUND_S of GPU time, so the works share the device's power and thermal state; each stops
 * by its own rule, and `timeout` bounds the whole group. envs[i].work differs; the rest is shared.
 * GPU_OK with every r[i] filled (r[i].code per work), or the first failure, with *failed its index
 * and r[*failed].message; the works before it keep no result then. */
gpu_status measure_run_group(const measure_env *envs, size_t k, const measure_opts *o, measure_result *r,
                             size_t *failed);
#define MEASURE_ROUND_S 0.02
const char *measure_cap_names(unsigned bits, char *buf, size_t len); /* "sw_power_cap,hw_slowdown" */
/* The cool-down's stopping test over its readings so far (taken MEASURE_COOL_STEP_S apart): the
 * last shows no cap and a power at the idle floor of the process (floor_w > 0: within 5 % + 5 W),
 * or one that no longer falls (within 2 % of the reading 0.5 s before); without a power figure,
 * 0.5 s without a cap. */
#define MEASURE_COOL_STEP_S 0.05
int measure_power_idle(const gpu_power_reading *rd, size_t n, double floor_w);
void measure_result_free(measure_result *r);
double measure_wall_now(void); /* CLOCK_MONOTONIC seconds */

/* One clock probe (clock_probe.c): the median over SMs of cycles per ns in MHz, their min and max,
 * the longest window. env->kernels.clock_probe must be set. */
typedef struct measure_probe_result {
  double mhz, min_mhz, max_mhz, window_ns;
  size_t sms;
} measure_probe_result;
gpu_status measure_clock_probe(const measure_env *env, unsigned window_ns, measure_probe_result *out,
                               measure_result *err);

#endif
