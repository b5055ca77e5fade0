/* tb_timer.c: measures a launch plan: eviction before every run, CUPTI kernel time and CUDA
 * events for every sample, optional CUDA-graph replay, fixed or adaptive stopping, clock checks.
 *
 * Lua API (require "tb.timer"):
 *   tb.timer.measure(plan [, opts]) -> result | nil, message, code ("throttled" | "timeout")
 *     opts and defaults: tb.timer.options (name, type, default, desc); docs/MEASUREMENT.md.
 *     result: clock ("cupti"|"events"), clock_fallback_reason, samples (ms, kept, reported clock),
 *       events_ms, sm_clocks_mhz, n, dropped_throttled, under_threshold, throttle_filter ("on",
 *       "off" without clock_check, "sustained": the load sustains a clock under the threshold and
 *       every sample counts), dropped_incomplete, min, max, median,
 *       mean, stdev, noise, q1, q3, events_median, sm_clock_mhz, max_clock_mhz,
 *       throttle_threshold, graph, graph_fallback_reason, flush_bytes, flush_mode,
 *       flush_tlb_bytes, warmup, mode, wall_s, gpu_busy_s, evict_s, probe_s, probes, batches,
 *       kernels_per_run, stop_reason; where the wall time went: setup_s (options, buffers, CUPTI,
 *       graph capture), enqueue_s, wait_s, collect_s (host seconds over all batches) and
 *       gpu_span_s (the GPU timeline from each batch's first event to its last, summed);
 *       group_setup_s (capturing the graph of grouped samples), enqueue_events_s (the part of
 *       enqueue_s spent pointing its event nodes at each launch's events), flush_s (the part
 *       of collect_s spent in CUPTI flushes) and overlap_s (kernel time where CUPTI's records of
 *       back-to-back kernels overlapped, counted once in the samples and the busy time)
 *   Errors raise: a fault of the plan with the API name; a hung plan with "timeout: ...".
 *   tb.timer.clock_probe([window_ns]) -> { mhz = median over SMs, min_mhz, max_mhz, sms }
 *   tb.timer.cupti() -> { available = bool, reason = string|nil, library = path|nil, flushes,
 *     forced_flushes (plain and forced CUPTI flushes so far in this process) }
 *   tb.timer.options -> { {name, type, default, desc, choices}, ... } (for --help) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "gpu/cupti.h"
#include "stats.h"
#include "tb.h"

#define BATCH_MAX 8192

/* ---- options, declared as data --------------------------------------------------------------- */

typedef enum opt_type { OPT_NUMBER, OPT_INTEGER, OPT_BOOLEAN, OPT_CHOICE } opt_type;

typedef struct measure_opts {
  int mode;             /* 0 adaptive, 1 fixed */
  double warmup;        /* -1: by mode */
  double repeat, min_samples, max_samples, max_noise, min_time, timeout, noise_plateau;
  int flush;
  double flush_bytes;   /* -1: by device */
  int flush_mode;       /* 0 read (evict.cu), 1 write (memset) */
  double flush_tlb_bytes; /* 0: no page sweep */
  int graph;
  double graph_group;   /* samples per graph launch; 0: by the case */
  int group_events;     /* 0 split (the event after each run beside the kernels), 1 inline */
  int clock;            /* 0 cupti, 1 events */
  int clock_check, sustained_clock;
  double throttle_threshold, clock_window_ns, clock_interval, sync_timeout;
} measure_opts;

static const measure_opts default_opts = {
  .mode = 0, .warmup = -1, .repeat = 100, .min_samples = 10, .max_samples = 0, .max_noise = 0.005,
  .min_time = 0.05, .timeout = 15, .noise_plateau = 0.02, .flush = 1, .flush_bytes = -1, .flush_mode = 0,
  .flush_tlb_bytes = 0, .graph = 1, .graph_group = 0, .group_events = 0, .clock = 0, .clock_check = 1, .sustained_clock = 1, .throttle_threshold = 0.90,
  .clock_window_ns = 2000, .clock_interval = 0.005, .sync_timeout = 60};

typedef struct opt_desc {
  const char *name;
  opt_type type;
  size_t offset;
  const char *choices;  /* OPT_CHOICE: space-separated, the first is the default */
  double min, max;
  const char *def;
  const char *desc;
} opt_desc;

#define OFF(f) offsetof(measure_opts, f)
static const opt_desc options[] = {
  {"mode", OPT_CHOICE, OFF(mode), "adaptive fixed", 0, 0, "adaptive",
   "stopping rule: adaptive (relative stdev under max_noise) or fixed (warmup, repeat)"},
  {"warmup", OPT_INTEGER, OFF(warmup), NULL, 0, 1e6, "3 (adaptive), 20 (fixed)",
   "untimed runs first, each with its eviction"},
  {"repeat", OPT_INTEGER, OFF(repeat), NULL, 1, 1e7, "100", "fixed: samples to keep"},
  {"min_samples", OPT_INTEGER, OFF(min_samples), NULL, 2, 1e7, "10", "adaptive: at least this many samples"},
  {"max_samples", OPT_INTEGER, OFF(max_samples), NULL, 0, 1e8, "0",
   "adaptive: stop at this many samples (0: no cap)"},
  {"max_noise", OPT_NUMBER, OFF(max_noise), NULL, 0, 1, "0.005",
   "adaptive: stop once stdev/mean of the samples is under this"},
  {"min_time", OPT_NUMBER, OFF(min_time), NULL, 0, 3600, "0.05",
   "adaptive: seconds of GPU time (evictions + kernels) the kept samples must cover first"},
  {"noise_plateau", OPT_NUMBER, OFF(noise_plateau), NULL, 0, 1, "0.02",
   "adaptive: also stop once the noise changed by less than this (relative) over the last 64 "
   "samples: it will not reach max_noise by waiting (nvbench's convergence test; 0 disables)"},
  {"timeout", OPT_NUMBER, OFF(timeout), NULL, 0, 86400, "15", "wall-clock seconds after which sampling stops"},
  {"flush", OPT_BOOLEAN, OFF(flush), NULL, 0, 0, "true", "evict the last-level cache before every run"},
  {"flush_bytes", OPT_INTEGER, OFF(flush_bytes), NULL, 1, 1e12, "2 x L2 (cdna3: 512 MiB)",
   "bytes each eviction reads (flush_mode read) or writes (flush_mode write)"},
  {"flush_mode", OPT_CHOICE, OFF(flush_mode), "read write", 0, 0, "read",
   "eviction: read the buffer with a kernel (leaves the L2 clean) or memset it (leaves it dirty)"},
  {"flush_tlb_bytes", OPT_INTEGER, OFF(flush_tlb_bytes), NULL, 0, 1e13, "0",
   "also read one word per 2 MiB page of a buffer this large in each eviction, to displace GPU "
   "TLB entries (0: off)"},
  {"graph", OPT_BOOLEAN, OFF(graph), NULL, 0, 0, "true", "replay the plan as one CUDA graph"},
  {"graph_group", OPT_INTEGER, OFF(graph_group), NULL, 0, 1024, "0 (by the case)",
   "graph mode: samples (eviction, events, run) captured into one graph launch; 0: as many as "
   "cover about clock_interval of GPU time, at most 32; 1: one launch per run. Needs CUPTI and "
   "the read eviction, whose kernels split the launch's records into samples"},
  {"group_events", OPT_CHOICE, OFF(group_events), "split inline", 0, 0, "split",
   "graph groups: the event node after each run on a branch beside the kernels, so the next "
   "eviction need not wait for it (split), or in line between the kernels like the one before "
   "each run (inline)"},
  {"clock", OPT_CHOICE, OFF(clock), "cupti events", 0, 0, "cupti",
   "reported clock: CUPTI kernel durations (falls back to events when CUPTI is unavailable) or events"},
  {"clock_check", OPT_BOOLEAN, OFF(clock_check), NULL, 0, 0, "true",
   "probe the SM clock around every sample and drop throttled ones"},
  {"throttle_threshold", OPT_NUMBER, OFF(throttle_threshold), NULL, 0, 2, "0.9",
   "drop samples whose SM clock is under this fraction of the device's max clock"},
  {"sustained_clock", OPT_BOOLEAN, OFF(sustained_clock), NULL, 0, 0, "true",
   "once max(10, min_samples) samples were dropped and more dropped than kept, the load sustains "
   "that clock (power-limited): keep every sample, those dropped included, and say so"},
  {"clock_window_ns", OPT_INTEGER, OFF(clock_window_ns), NULL, 200, 1e7, "2000",
   "globaltimer window of the clock probe"},
  {"clock_interval", OPT_NUMBER, OFF(clock_interval), NULL, 0, 10, "0.005",
   "seconds of GPU time between clock probes: samples shorter than this share the probes around "
   "their group (0: probe around every sample)"},
  {"sync_timeout", OPT_NUMBER, OFF(sync_timeout), NULL, 0.001, 86400, "60",
   "seconds to wait for one batch of runs before raising 'timeout'"},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

static int choice_index(const char *choices, const char *word) {
  size_t len = strlen(word);
  int i = 0;
  for (const char *p = choices; *p;) {
    const char *end = strchr(p, ' ');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, word, n) == 0) return i;
    i++;
    p += n + (end ? 1 : 0);
  }
  return -1;
}

static void parse_options(lua_State *L, int idx, measure_opts *o) {
  *o = default_opts;
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const opt_desc *d = NULL;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].name, lua_tostring(L, -2)) == 0) d = &options[i];
    if (d == NULL) {
      lua_pushvalue(L, -2);
      luaL_error(L, "bad argument #2 to 'measure' (unknown option '%s')", luaL_tolstring(L, -1, NULL));
    }
    char *field = (char *)o + d->offset;
    if (d->type == OPT_BOOLEAN) {
      if (!lua_isboolean(L, -1)) luaL_error(L, "bad argument #2 to 'measure' (option '%s' must be a boolean)", d->name);
      *(int *)field = lua_toboolean(L, -1);
    } else if (d->type == OPT_CHOICE) {
      int k = lua_type(L, -1) == LUA_TSTRING ? choice_index(d->choices, lua_tostring(L, -1)) : -1;
      if (k < 0) luaL_error(L, "bad argument #2 to 'measure' (option '%s' must be one of: %s)", d->name, d->choices);
      *(int *)field = k;
    } else {
      int isnum = 0;
      double v = lua_tonumberx(L, -1, &isnum);
      if (!isnum || v < d->min || v > d->max || (d->type == OPT_INTEGER && v != floor(v))) {
        char msg[256]; /* luaL_error's format has no %g */
        snprintf(msg, sizeof msg, "bad argument #2 to 'measure' (option '%s' must be %s in [%g, %g])", d->name,
                 d->type == OPT_INTEGER ? "an integer" : "a number", d->min, d->max);
        luaL_error(L, "%s", msg);
      }
      *(double *)field = v;
    }
    lua_pop(L, 1);
  }
}

static int l_options(lua_State *L) {
  lua_createtable(L, (int)N_OPTIONS, 0);
  for (size_t i = 0; i < N_OPTIONS; i++) {
    static const char *const types[] = {"number", "integer", "boolean", "choice"};
    lua_createtable(L, 0, 5);
    lua_pushstring(L, options[i].name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, types[options[i].type]);
    lua_setfield(L, -2, "type");
    lua_pushstring(L, options[i].def);
    lua_setfield(L, -2, "default");
    lua_pushstring(L, options[i].desc);
    lua_setfield(L, -2, "desc");
    if (options[i].choices) {
      lua_pushstring(L, options[i].choices);
      lua_setfield(L, -2, "choices");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* ---- process-wide resources: eviction buffer, probe buffer, events ------------------------- */

static struct {
  gpu_ptr evict;
  size_t evict_cap, evict_filled; /* filled: bytes given their one-time memset */
  gpu_ptr tlb;
  size_t tlb_cap, tlb_filled;
  gpu_ptr probe;
  size_t probe_cap;
  gpu_event *events;
  size_t n_events;
  uint64_t next_ext_id;
  uint32_t evict_value;
  int said_fallback;
  gpu_stream side;  /* group_events = split: the capture's second stream */
  gpu_event fork;   /* its fork and join points (recorded during captures only) */
} R = {.next_ext_id = 1ull << 40};

/* Calibrated eviction sizes where 2 x L2 is not enough (a last-level cache beyond the L2). */
static const struct { const char *family; size_t bytes; } evict_table[] = {
  {"cdna3", 512ull << 20}, /* 256 MiB Infinity Cache on MI300 */
};

static size_t default_flush_bytes(const gpu_device_props *p) {
  for (size_t i = 0; i < sizeof evict_table / sizeof evict_table[0]; i++)
    if (strcmp(p->family, evict_table[i].family) == 0) return evict_table[i].bytes;
  return p->l2_bytes > 0 ? 2 * p->l2_bytes : 256ull << 20;
}

static gpu_status ensure_buffer(const gpu_backend *gpu, gpu_ptr *buf, size_t *cap, size_t need) {
  if (need <= *cap) return GPU_OK;
  gpu_status st;
  if (*buf) {
    if ((st = gpu->stream_wait_timeout(tb_stream(), tb_sync_timeout_s() * 1e3)) != GPU_OK) return st;
    if ((st = gpu->mem_free(*buf)) != GPU_OK) return st;
    *buf = 0;
    *cap = 0;
  }
  if ((st = gpu->mem_alloc(buf, need)) != GPU_OK) return st;
  *cap = need;
  return GPU_OK;
}

static gpu_status ensure_events(const gpu_backend *gpu, size_t need) {
  if (need <= R.n_events) return GPU_OK;
  gpu_event *e = realloc(R.events, need * sizeof *e);
  if (e == NULL) return gpu_set_error(GPU_ERR_OOM, "tb.timer: out of host memory for %zu events", need);
  R.events = e;
  for (; R.n_events < need; R.n_events++) {
    gpu_status st = gpu->event_create(&R.events[R.n_events]);
    if (st != GPU_OK) return st;
  }
  return GPU_OK;
}

static double wall_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Allocates (or grows) an eviction buffer and fills it once, so it is real memory holding one
 * repeated 32-bit word (the read eviction's fold relies on that: see evict.cu). */
static gpu_status ensure_filled(const gpu_backend *gpu, gpu_ptr *buf, size_t *cap, size_t *filled, size_t need) {
  gpu_status st = ensure_buffer(gpu, buf, cap, need);
  if (st != GPU_OK) return st;
  if (*filled == *cap) return GPU_OK;
  R.evict_value = R.evict_value * 1664525u + 1013904223u;
  if ((st = gpu->memset32_async(*buf, R.evict_value, *cap / 4, tb_stream())) != GPU_OK) return st;
  *filled = *cap;
  return GPU_OK;
}

#define TLB_PAGE (2ull << 20) /* the driver maps large allocations with 2 MiB pages */

static double median_of(const double *x, size_t n) {
  tb_summary s;
  return tb_summarize(x, n, &s) == 0 ? s.median : 0;
}

/* ---- one measurement --------------------------------------------------------------------- */

typedef struct measure {
  lua_State *L;
  measure_opts o;
  const gpu_backend *gpu;
  const gpu_device_props *props;
  const tb_plan *plan;
  gpu_stream s;
  int cupti;                 /* CUPTI is the reported clock */
  int cupti_all_api;         /* already fell back to tracing every API call */
  char clock_reason[1024];
  gpu_graph graph;
  char graph_reason[1024];
  gpu_graph group_graph;     /* graph groups: `group` samples per launch (0/1: none) */
  size_t group;
  char group_reason[1024];
  size_t flush_bytes;
  size_t tlb_pages;          /* pages the eviction touches for the TLBs (flush_tlb_bytes / 2 MiB) */
  gpu_function *evict_fn, *pages_fn; /* read eviction (NULL: memset) */
  gpu_function *probe_fn;
  size_t probe_stride;       /* samples per probe group in the current batch */
  size_t probes, batches;
  unsigned probe_window;
  double max_mhz;
  /* per batch */
  double *kernel_ns, *probe_mhz, *probe_ns;
  int *kernel_count, *incomplete;
  int *ev;                   /* per sample: events before the eviction (-1: none), run, after */
  double *busy_tmp;
  unsigned long long *probe_host;
  /* complete samples, in order; thr: taken under the throttle threshold. run counts the samples
   * that count (those not under the threshold, or all of them once the load is found to sustain
   * a lower clock: sustained); run_all every one. */
  double *ms, *ev_ms, *clk;
  unsigned char *thr;
  size_t n, cap;
  size_t dropped_throttled, dropped_incomplete, under_threshold, sustained_min;
  int sustained;
  tb_running run, run_all;
  double busy_s, evict_s, probe_s;
  double *kpr;               /* kernels per run (CUPTI) of kept samples */
  /* where the wall time goes (host seconds), and the GPU timeline the batches covered */
  double setup_s, enqueue_s, wait_s, collect_s, span_total_s;
  double group_setup_s, enqueue_events_s; /* of which: capturing the group graph; re-pointing its events */
  double flush_s;                         /* part of collect_s: CUPTI flushes */
  double overlap_s;                       /* kernel time CUPTI's records overlapped, counted once */
} measure;

static void measure_free(measure *m) {
  if (m->graph) m->gpu->graph_destroy(m->graph);
  m->graph = NULL;
  if (m->group_graph) m->gpu->graph_destroy(m->group_graph);
  m->group_graph = NULL;
  /* The batch arrays (kernel_ns ... busy_tmp) belong to the process: alloc_batch. */
  free(m->ms); free(m->ev_ms); free(m->clk); free(m->kpr); free(m->thr);
  m->thr = NULL;
  m->kernel_ns = m->probe_mhz = m->probe_ns = m->ms = m->ev_ms = m->clk = m->kpr = m->busy_tmp = NULL;
  m->kernel_count = m->incomplete = m->ev = NULL;
  m->probe_host = NULL;
}

/* Frees the measurement and raises: "<what>: <gpu_last_error()>". A hung plan raises a message
 * starting with "timeout:" so a campaign records the case as a timeout. */
static int measure_fail(measure *m, gpu_status st, const char *what) {
  char msg[4096], api[64];
  snprintf(msg, sizeof msg, "%s%s: %s", st == GPU_ERR_TIMEOUT ? "timeout: " : "", what, gpu_last_error());
  snprintf(api, sizeof api, "%s", gpu_last_error_api());
  if (m->cupti) cupti_discard();
  measure_free(m);
  return tb_raise(m->L, st, api, "%s", msg); /* structured: the campaign reads its class */
}

#define TRY(m, call, what)                     \
  do {                                         \
    gpu_status st_ = (call);                   \
    if (st_ != GPU_OK) measure_fail(m, st_, what); \
  } while (0)

static void grow_kept(measure *m, size_t need) {
  if (need <= m->cap) return;
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
  if (t == NULL) measure_fail(m, gpu_set_error(GPU_ERR_OOM, "out of host memory"), "tb.timer.measure");
  m->cap = cap;
}

/* The per-batch arrays, allocated once per process (about 17 MB of probe readings for 132 SMs,
 * mapped lazily) and shared by every measurement: allocating them per case cost ~1-2 ms. */
static struct {
  double *kernel_ns, *probe_mhz, *probe_ns, *busy_tmp;
  int *kernel_count, *incomplete, *ev;
  unsigned long long *probe_host;
  size_t sms;
} W;

static void alloc_batch(measure *m) {
  size_t n = BATCH_MAX + 1, sms = (size_t)(m->props->sm_count > 0 ? m->props->sm_count : 1);
  if (W.kernel_ns == NULL || W.sms < sms) {
    free(W.kernel_ns); free(W.probe_mhz); free(W.probe_ns); free(W.busy_tmp);
    free(W.kernel_count); free(W.incomplete); free(W.ev); free(W.probe_host);
    W.kernel_ns = calloc(2 * n, sizeof(double)); /* CUPTI: the runs' ids, then the evictions' */
    W.probe_mhz = calloc(n, sizeof(double));
    W.probe_ns = calloc(n, sizeof(double));
    W.busy_tmp = calloc(n, sizeof(double));
    W.kernel_count = calloc(2 * n, sizeof(int));
    W.incomplete = calloc(2 * n, sizeof(int));
    W.ev = calloc(3 * n, sizeof(int));
    W.probe_host = calloc(n * sms * 2, sizeof(unsigned long long));
    W.sms = sms;
    if (!W.kernel_ns || !W.probe_mhz || !W.probe_ns || !W.busy_tmp || !W.kernel_count || !W.incomplete || !W.ev ||
        !W.probe_host) {
      free(W.kernel_ns); /* the next call retries */
      W.kernel_ns = NULL;
      measure_fail(m, gpu_set_error(GPU_ERR_OOM, "out of host memory"), "tb.timer.measure");
    }
  }
  m->kernel_ns = W.kernel_ns, m->probe_mhz = W.probe_mhz, m->probe_ns = W.probe_ns, m->busy_tmp = W.busy_tmp;
  m->kernel_count = W.kernel_count, m->incomplete = W.incomplete, m->ev = W.ev, m->probe_host = W.probe_host;
}

static gpu_status launch_probe(measure *m, size_t slot) {
  gpu_ptr out = R.probe + slot * (size_t)m->props->sm_count * 2 * sizeof(unsigned long long);
  unsigned window = m->probe_window;
  void *args[] = {&out, &window};
  unsigned grid[3] = {(unsigned)m->props->sm_count, 1, 1}, block[3] = {32, 1, 1};
  return m->gpu->launch(m->probe_fn, grid, block, 0, m->s, args);
}

/* One eviction: the read kernel over flush_bytes (and the page sweep), or the old memset. Launched
 * outside any pushed CUPTI correlation id, so its records match no sample. */
static gpu_status launch_evict(measure *m) {
  const gpu_backend *gpu = m->gpu;
  if (m->evict_fn == NULL) {
    R.evict_value = R.evict_value * 1664525u + 1013904223u;
    return gpu->memset32_async(R.evict, R.evict_value, m->flush_bytes / 4, m->s);
  }
  gpu_ptr buf = R.evict, sink = R.evict; /* the store is never taken; see evict.cu */
  unsigned key = 1, sms = (unsigned)(m->props->sm_count > 0 ? m->props->sm_count : 1);
  unsigned long long n16 = m->flush_bytes / 16;
  void *args[] = {&buf, &n16, &sink, &key};
  unsigned grid[3] = {sms * 8, 1, 1}, block[3] = {256, 1, 1};
  gpu_status st = gpu->launch(m->evict_fn, grid, block, 0, m->s, args);
  if (st != GPU_OK || m->tlb_pages == 0) return st;
  gpu_ptr pages = R.tlb;
  unsigned long long n_pages = m->tlb_pages, page = TLB_PAGE;
  void *pargs[] = {&pages, &n_pages, &page, &sink, &key};
  unsigned long long blocks = (n_pages + 255) / 256;
  unsigned pgrid[3] = {(unsigned)(blocks < grid[0] ? blocks : grid[0]), 1, 1};
  return gpu->launch(m->pages_fn, pgrid, block, 0, m->s, pargs);
}

/* Records an event unless the last one recorded has had nothing enqueued after it, in which case
 * that one is reused (the end of one run is the start of the next eviction). */
static int mark(measure *m, int *next, int *last) {
  if (*last >= 0) return *last;
  TRY(m, m->gpu->event_record(R.events[*next], m->s), "tb.timer.measure");
  *last = (*next)++;
  return *last;
}

/* Pops the CUPTI id pushed around a launch. The launch's own failure (st), if any, wins and
 * keeps its message. */
static gpu_status pop_after(gpu_status st) {
  char keep[2048];
  snprintf(keep, sizeof keep, "%s", gpu_last_error());
  gpu_status pop = cupti_pop();
  if (st == GPU_OK) return pop;
  gpu_set_error(st, "%s", keep);
  return st;
}

/* Enqueues n samples: per sample [event, eviction] event, run, event; clock probes before the
 * first sample and after every probe_stride samples (and after the last). Consecutive samples
 * share an event. The eviction sits between the first two events, outside the timed interval.
 * Under CUPTI, run i is tagged ext_base + i and its eviction ext_base + n + i, so the eviction's
 * kernel time is known too (GPU busy time without launch gaps). */
static void enqueue_groups(measure *m, size_t n, uint64_t ext_base);

static void enqueue_batch(measure *m, size_t n, uint64_t ext_base) {
  const gpu_backend *gpu = m->gpu;
  size_t k = m->probe_stride ? m->probe_stride : 1;
  int next = 0, last = -1;
  if (m->probe_fn) TRY(m, launch_probe(m, 0), "clock probe");
  if (m->group > 1) {
    enqueue_groups(m, n, ext_base);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int *ev = &m->ev[3 * i];
    ev[0] = -1;
    if (m->flush_bytes) {
      ev[0] = mark(m, &next, &last);
      int tag = m->cupti && m->evict_fn;
      if (tag) TRY(m, cupti_push(ext_base + n + i), "tb.timer.measure");
      gpu_status st = launch_evict(m);
      if (tag) st = pop_after(st);
      if (st != GPU_OK) measure_fail(m, st, m->evict_fn ? "cache eviction (evict.cu)" : "cache eviction (memset)");
      last = -1;
    }
    ev[1] = mark(m, &next, &last);
    if (m->cupti) TRY(m, cupti_push(ext_base + i), "tb.timer.measure");
    gpu_status st = m->graph ? gpu->graph_launch(m->graph, m->s) : tb_plan_run(m->plan, m->s);
    if (m->cupti) st = pop_after(st);
    if (st != GPU_OK) measure_fail(m, st, m->graph ? "running the plan's graph" : "running the plan");
    last = -1;
    ev[2] = mark(m, &next, &last);
    if (m->probe_fn && ((i + 1) % k == 0 || i + 1 == n)) {
      TRY(m, launch_probe(m, i / k + 1), "clock probe");
      last = -1;
    }
  }
}

/* Graph groups: n (a multiple of group) samples as n / group launches of the group graph, each
 * [E0 eviction E1 run E2 eviction E3 run ... E2G] with its event nodes re-pointed at this batch's
 * events (2G + 1 a launch, none shared across launches), tagged ext_base + launch index; probes
 * between launches, probe_stride being a multiple of group. */
static void enqueue_groups(measure *m, size_t n, uint64_t ext_base) {
  const gpu_backend *gpu = m->gpu;
  size_t G = m->group, k = m->probe_stride ? m->probe_stride : G;
  for (size_t g = 0; g * G < n; g++) {
    size_t base = g * (2 * G + 1);
    double t0 = wall_now();
    for (size_t e = 0; e <= 2 * G; e++)
      TRY(m, gpu->graph_set_event(m->group_graph, e, R.events[base + e]), "pointing the graph's events");
    m->enqueue_events_s += wall_now() - t0;
    for (size_t j = 0; j < G; j++) {
      int *ev = &m->ev[3 * (g * G + j)];
      ev[0] = (int)(base + 2 * j), ev[1] = (int)(base + 2 * j + 1), ev[2] = (int)(base + 2 * j + 2);
    }
    TRY(m, cupti_push(ext_base + g), "tb.timer.measure");
    gpu_status st = pop_after(gpu->graph_launch(m->group_graph, m->s));
    if (st != GPU_OK) measure_fail(m, st, "running the graph of (eviction, run) samples");
    size_t i = g * G + G - 1; /* the launch's last sample */
    if (m->probe_fn && ((i + 1) % k == 0 || i + 1 == n)) TRY(m, launch_probe(m, i / k + 1), "clock probe");
  }
}

/* Records event e of a group graph during the capture: in line on the captured stream, or
 * beside it: on the second stream, which first waits for what the captured stream has enqueued
 * so far, and which nothing waits for until the join at the end of the graph. */
static gpu_status group_event(measure *m, gpu_event e, int beside) {
  const gpu_backend *gpu = m->gpu;
  if (!beside) return gpu->event_record_captured(e, m->s);
  gpu_status st = gpu->event_record(R.fork, m->s);
  if (st == GPU_OK) st = gpu->stream_wait_event(R.side, R.fork);
  if (st == GPU_OK) st = gpu->event_record_captured(e, R.side);
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
static void setup_group(measure *m, size_t G) {
  const gpu_backend *gpu = m->gpu;
  int split = m->o.group_events == 0;
  TRY(m, ensure_events(gpu, 2 * G + 1), "creating events");
  if (split && R.side == NULL) {
    TRY(m, gpu->stream_create(&R.side), "creating the graph's second stream");
    TRY(m, gpu->event_create(&R.fork), "creating events");
  }
  gpu_status st = gpu->capture_begin(m->s);
  const char *what = "beginning the capture";
  if (st == GPU_OK) {
    for (size_t j = 0; j < G && st == GPU_OK; j++) {
      what = "an event node";
      if ((st = group_event(m, R.events[2 * j], split)) != GPU_OK) break;
      what = "the eviction";
      if ((st = launch_evict(m)) != GPU_OK) break;
      what = "an event node";
      if ((st = group_event(m, R.events[2 * j + 1], 0)) != GPU_OK) break;
      what = "the plan";
      st = tb_plan_run(m->plan, m->s);
    }
    if (st == GPU_OK) {
      what = "an event node";
      st = group_event(m, R.events[2 * G], split);
    }
    if (st == GPU_OK && split) { /* join the second stream back */
      what = "joining the event branch";
      st = gpu->event_record(R.fork, R.side);
      if (st == GPU_OK) st = gpu->stream_wait_event(m->s, R.fork);
    }
    char why[2048];
    snprintf(why, sizeof why, "%s", gpu_last_error());
    gpu_graph g = NULL;
    gpu_status end = gpu->capture_end_events(m->s, &g, R.events, 2 * G + 1); /* always ends the capture */
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
    snprintf(m->group_reason, sizeof m->group_reason, "graph of %zu samples not captured (%s): %s", G, what,
             gpu_last_error());
    m->group_graph = NULL;
    m->group = 1;
    return;
  }
  m->group = G;
}

/* Leaves graph groups for a launch per run, saying why. */
static void drop_groups(measure *m, const char *why) {
  if (m->group_graph) m->gpu->graph_destroy(m->group_graph);
  m->group_graph = NULL;
  m->group = 1;
  snprintf(m->group_reason, sizeof m->group_reason, "%s", why);
}

/* Waits for the batch. predicted_s is the batch's expected GPU time (samples x the median GPU busy
 * time per sample of the previous batch: a median, so a one-time stall such as a graph's first
 * upload does not inflate it). The host sleeps half of what is left of the prediction at a time,
 * then polls every 20 us, so it wakes within tens of microseconds of the batch's end whether the
 * prediction was long or short. sync_timeout bounds the whole wait. */
static void wait_batch(measure *m, double t_enq, double predicted_s) {
  const gpu_backend *gpu = m->gpu;
  double start = wall_now(), limit = m->o.sync_timeout;
  for (;;) {
    gpu_status st = gpu->stream_wait_timeout(m->s, 0); /* one query, no sleep */
    if (st == GPU_OK) return;
    if (st != GPU_ERR_TIMEOUT) measure_fail(m, st, "waiting for the plan's runs");
    double now = wall_now();
    if (now - start >= limit) {
      gpu_set_error(GPU_ERR_TIMEOUT, "cuStreamQuery: the batch of runs did not finish within sync_timeout = %g s", limit);
      measure_fail(m, GPU_ERR_TIMEOUT, "waiting for the plan's runs");
    }
    double left = t_enq + predicted_s - now, nap = left > 40e-6 ? 0.5 * left : 20e-6;
    if (nap > 0.1) nap = 0.1; /* a wrong prediction costs at most 0.1 s of sleep */
    if (nap > limit - (now - start)) nap = limit - (now - start);
    struct timespec ts = {(time_t)nap, (long)((nap - floor(nap)) * 1e9)};
    nanosleep(&ts, NULL);
  }
}

/* Median over SMs of one probe's cycles per nanosecond, in MHz (0 when unusable). */
static double probe_clock(measure *m, size_t slot, double *window_ns) {
  size_t sms = (size_t)m->props->sm_count;
  const unsigned long long *p = m->probe_host + slot * sms * 2;
  double mhz[1024];
  size_t k = 0;
  double ns = 0;
  for (size_t i = 0; i < sms && k < 1024; i++) {
    if (p[2 * i + 1] == 0) continue;
    mhz[k++] = (double)p[2 * i] * 1e3 / (double)p[2 * i + 1];
    ns = ns > (double)p[2 * i + 1] ? ns : (double)p[2 * i + 1];
  }
  *window_ns = ns;
  if (k == 0) return 0;
  qsort(mhz, k, sizeof mhz[0], cmp_double);
  return k % 2 ? mhz[k / 2] : 0.5 * (mhz[k / 2 - 1] + mhz[k / 2]);
}

static void say_fallback(measure *m) {
  if (R.said_fallback) return;
  R.said_fallback = 1;
  fprintf(stderr, "tilebench: timing with CUDA events instead of CUPTI: %s\n", m->clock_reason);
}

/* Reads both clocks and the probes of a finished batch. keep = 0 for warm-up: only the GPU busy
 * time counts. Returns the median GPU busy seconds per sample (for sizing the next batch) and
 * adds the batch's GPU timeline (first event to last) to m->span_total_s. */
static double collect_batch(measure *m, size_t n, uint64_t ext_base, int keep) {
  const gpu_backend *gpu = m->gpu;
  size_t sms = (size_t)m->props->sm_count, k = m->probe_stride ? m->probe_stride : 1;
  m->batches++;
  if (m->probe_fn) {
    size_t slots = (n + k - 1) / k + 1;
    TRY(m, gpu->copy_dtoh(m->probe_host, R.probe, slots * sms * 2 * sizeof(unsigned long long)),
        "reading the clock probes");
    for (size_t j = 0; j < slots; j++) {
      m->probe_mhz[j] = probe_clock(m, j, &m->probe_ns[j]);
      m->probe_s += m->probe_ns[j] * 1e-9;
    }
    m->probes += slots;
  }
  int cupti_ok = m->cupti;
  if (m->cupti) {
    /* The batch's last launch: its last group graph, else its last run. */
    uint64_t last = m->group > 1 ? ext_base + n / m->group - 1 : ext_base + n - 1;
    double t0 = wall_now();
    TRY(m, cupti_flush_until(last), "reading CUPTI records");
    m->flush_s += wall_now() - t0;
    double clipped0 = cupti_clipped_ns();
    gpu_status st = m->group > 1
      ? cupti_collect_groups(ext_base, n / m->group, m->group, m->kernel_ns, m->kernel_count, m->incomplete)
      : cupti_collect(ext_base, 2 * n, m->kernel_ns, m->kernel_count, m->incomplete);
    m->overlap_s += (cupti_clipped_ns() - clipped0) * 1e-9;
    if (st != GPU_OK) measure_fail(m, st, "reading CUPTI records");
    size_t tagged = 0, split = 0;
    for (size_t i = 0; i < n; i++) {
      tagged += m->kernel_count[i] > 0 || m->incomplete[i] > 0;
      split += m->kernel_count[i] > 0 && m->incomplete[i] == 0;
    }
    if (m->group > 1 && 2 * split < n) {
      /* The records of the graph launches did not split into samples: run a launch per run from
       * the next batch on; this batch counts as warm-up (its busy time by events). */
      char why[256];
      snprintf(why, sizeof why, "CUPTI records of the graph launches split into samples for %zu of %zu samples; "
               "a graph launch per run instead", split, n);
      drop_groups(m, why);
      keep = 0;
      cupti_ok = 0;
    } else if (tagged == 0 && tb_plan_kernel_count(m->plan) > 0) {
      /* No launch of this batch carried our id. Trace every API once; then give up on CUPTI. */
      if (!m->cupti_all_api && cupti_trace_all_api() == GPU_OK) {
        m->cupti_all_api = 1;
        keep = 0;
        cupti_ok = 0;
      } else {
        m->cupti = cupti_ok = 0;
        snprintf(m->clock_reason, sizeof m->clock_reason,
                 "CUPTI delivered no kernel record tagged with the plan's launches");
        say_fallback(m);
      }
    }
  }
  if (n > 0) {
    float span_ms = 0;
    int first = m->ev[0] >= 0 ? m->ev[0] : m->ev[1];
    TRY(m, gpu->event_elapsed_ms(&span_ms, R.events[first], R.events[m->ev[3 * (n - 1) + 2]]), "reading events");
    m->span_total_s += span_ms * 1e-3;
  }
  for (size_t i = 0; i < n; i++) {
    float run_ms = 0, evict_ms = 0;
    const int *ev = &m->ev[3 * i];
    TRY(m, gpu->event_elapsed_ms(&run_ms, R.events[ev[1]], R.events[ev[2]]), "reading events");
    /* The eviction's time: its kernels by CUPTI where they were recorded, else its events (which
     * also count the launch gaps around it: the memset eviction, the events clock). */
    if (ev[0] >= 0 && cupti_ok && m->kernel_count[n + i] > 0 && m->incomplete[n + i] == 0)
      evict_ms = (float)(m->kernel_ns[n + i] * 1e-6);
    else if (ev[0] >= 0)
      TRY(m, gpu->event_elapsed_ms(&evict_ms, R.events[ev[0]], R.events[ev[1]]), "reading events");
    double kernel_ms = cupti_ok ? m->kernel_ns[i] * 1e-6 : run_ms;
    double busy = (evict_ms + kernel_ms) * 1e-3;
    m->busy_tmp[i] = busy;
    m->busy_s += busy;
    m->evict_s += evict_ms * 1e-3;
    if (!keep) continue;
    if (cupti_ok && (m->incomplete[i] > 0 || (m->kernel_count[i] == 0 && tb_plan_kernel_count(m->plan) > 0))) {
      m->dropped_incomplete++;
      continue;
    }
    double clk = 0;
    int under = 0;
    if (m->probe_fn) { /* the lower of the probes around the sample's group */
      double a = m->probe_mhz[i / k], b = m->probe_mhz[i / k + 1];
      clk = a > 0 && b > 0 ? (a < b ? a : b) : (a > 0 ? a : b);
      under = tb_sample_throttled(clk, m->max_mhz, m->o.throttle_threshold);
    }
    grow_kept(m, m->n + 1);
    m->ms[m->n] = kernel_ms;
    m->ev_ms[m->n] = run_ms;
    m->clk[m->n] = clk;
    m->kpr[m->n] = cupti_ok ? m->kernel_count[i] : tb_plan_kernel_count(m->plan);
    m->thr[m->n] = (unsigned char)under;
    m->n++;
    m->under_threshold += (size_t)under;
    tb_running_add(&m->run_all, kernel_ms, busy);
    if (m->sustained || !under) {
      tb_running_add(&m->run, kernel_ms, busy);
    } else {
      m->dropped_throttled++;
      if (tb_clock_sustained(m->run.n, m->dropped_throttled, m->sustained_min)) {
        m->sustained = 1; /* the samples dropped so far count again */
        m->dropped_throttled = 0;
        m->run = m->run_all;
      }
    }
  }
  return n ? median_of(m->busy_tmp, n) : 0;
}

static void setup_clock(measure *m) {
  m->cupti = 0;
  m->clock_reason[0] = '\0';
  if (m->o.clock == 1) return; /* events asked for: no fallback to report */
  gpu_status st = cupti_start();
  if (st == GPU_OK) {
    m->cupti = 1;
    /* Records of earlier launches (verification, other plans) are not ours: they carry no
     * external id of this measurement (ids are never reused), so cupti_collect skips them. No
     * synchronize-and-flush here: that cost one round trip per measurement for nothing. */
    cupti_discard();
    return;
  }
  snprintf(m->clock_reason, sizeof m->clock_reason, "%s", gpu_last_error());
  say_fallback(m);
}

static void setup_graph(measure *m) {
  m->graph = NULL;
  m->graph_reason[0] = '\0';
  if (!m->o.graph) return;
  gpu_status st = m->gpu->capture_begin(m->s);
  if (st == GPU_OK) {
    gpu_status run = tb_plan_run(m->plan, m->s);
    char why[2048];
    snprintf(why, sizeof why, "%s", gpu_last_error());
    gpu_graph g = NULL;
    gpu_status end = m->gpu->capture_end(m->s, &g); /* always ends the capture */
    if (run != GPU_OK) {
      if (g) m->gpu->graph_destroy(g);
      gpu_set_error(run, "%s", why);
      st = run;
    } else {
      st = end;
      m->graph = end == GPU_OK ? g : NULL;
    }
  }
  if (st != GPU_OK) {
    snprintf(m->graph_reason, sizeof m->graph_reason, "capture failed, running eagerly: %s", gpu_last_error());
    m->graph = NULL;
  }
}

static void set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

static void set_array(lua_State *L, const char *k, const double *v, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushnumber(L, v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, k);
}

static int l_measure(lua_State *L) {
  measure m_, *m = &m_;
  memset(m, 0, sizeof *m);
  m->L = L;
  m->plan = tb_check_plan(L, 1);
  parse_options(L, 2, &m->o);
  double t_start = wall_now();
  m->gpu = tb_gpu(L);
  m->props = tb_current_props(L);
  m->s = tb_stream();
  int fixed = m->o.mode == 1;
  size_t warmup = m->o.warmup >= 0 ? (size_t)m->o.warmup : (fixed ? 20 : 3);

  m->probe_window = (unsigned)m->o.clock_window_ns;
  m->max_mhz = m->props->clock_khz / 1e3;
  if (m->o.clock_check) m->probe_fn = tb_host_kernel(L, "clock_probe.cu", "tb_clock_probe");
  if (m->o.sustained_clock) m->sustained_min = m->o.min_samples > 10 ? (size_t)m->o.min_samples : 10;
  m->flush_bytes = 0;
  if (m->o.flush) {
    size_t want = m->o.flush_bytes > 0 ? (size_t)m->o.flush_bytes : default_flush_bytes(m->props);
    m->flush_bytes = (want + 15) / 16 * 16; /* whole 16-byte loads */
    if (m->o.flush_mode == 0) {
      m->evict_fn = tb_host_kernel(L, "evict.cu", "tb_evict_read");
      if (m->o.flush_tlb_bytes > 0) {
        m->pages_fn = tb_host_kernel(L, "evict.cu", "tb_evict_pages");
        m->tlb_pages = ((size_t)m->o.flush_tlb_bytes + TLB_PAGE - 1) / TLB_PAGE;
      }
    } else if (m->o.flush_tlb_bytes > 0) {
      return luaL_error(L, "bad argument #2 to 'measure' (option 'flush_tlb_bytes' needs flush_mode = 'read')");
    }
    gpu_status st = ensure_filled(m->gpu, &R.evict, &R.evict_cap, &R.evict_filled, m->flush_bytes);
    const char *what = "eviction buffer";
    size_t what_bytes = m->flush_bytes;
    if (st == GPU_OK && m->tlb_pages) {
      what = "TLB sweep buffer";
      what_bytes = m->tlb_pages * TLB_PAGE;
      st = ensure_filled(m->gpu, &R.tlb, &R.tlb_cap, &R.tlb_filled, what_bytes);
    }
    if (st == GPU_ERR_OOM) {
      lua_pushnil(L);
      lua_pushfstring(L, "tb.timer.measure: no memory for the %d MiB %s: %s", (int)(what_bytes >> 20), what,
                      gpu_last_error());
      lua_pushliteral(L, "oom");
      return 3;
    }
    tb_check_gpu(L, st);
  }
  size_t sms = (size_t)(m->props->sm_count > 0 ? m->props->sm_count : 1);
  tb_check_gpu(L, ensure_buffer(m->gpu, &R.probe, &R.probe_cap,
                                (BATCH_MAX + 1) * sms * 2 * sizeof(unsigned long long)));
  alloc_batch(m);
  setup_clock(m);
  setup_graph(m);
  m->setup_s = wall_now() - t_start;

  tb_stop_rule rule = {.adaptive = !fixed, .repeat = (size_t)m->o.repeat,
                       .min_samples = (size_t)m->o.min_samples, .max_samples = (size_t)m->o.max_samples,
                       .max_noise = m->o.max_noise, .min_time_s = m->o.min_time, .timeout_s = m->o.timeout,
                       .plateau_tol = m->o.noise_plateau};
  double est_busy = 0, est_wall = 0;
  size_t warm_left = warmup;
  while (warm_left > 0) { /* warm-up runs go through the same path, unkept */
    size_t n = warm_left < BATCH_MAX ? warm_left : BATCH_MAX;
    TRY(m, ensure_events(m->gpu, 3 * n), "creating events");
    uint64_t base = R.next_ext_id;
    R.next_ext_id += 2 * n; /* runs, then their evictions */
    double t0 = wall_now();
    m->probe_stride = 1;
    enqueue_batch(m, n, base);
    double t1 = wall_now();
    wait_batch(m, t0, 0);
    double t2 = wall_now();
    est_busy = collect_batch(m, n, base, 0);
    double t3 = wall_now();
    m->enqueue_s += t1 - t0, m->wait_s += t2 - t1, m->collect_s += t3 - t2;
    est_wall = (t3 - t0) / (double)n;
    warm_left -= n;
  }

  /* Graph groups (graph mode with CUPTI and the read eviction): samples per launch covering about
   * clock_interval of GPU time, by the warm-up's median busy time. */
  m->group = 1;
  if (m->graph && m->cupti && m->evict_fn && m->o.graph_group != 1) {
    size_t G = (size_t)m->o.graph_group;
    if (G == 0) {
      double interval = m->o.clock_interval > 0 ? m->o.clock_interval : 0.005;
      double k = est_busy > 0 ? floor(interval / est_busy) : 1;
      G = k < 1 ? 1 : k > 32 ? 32 : (size_t)k;
    }
    if (G > 1) {
      double t0 = wall_now();
      cupti_set_marker("tb_evict");
      setup_group(m, G);
      m->group_setup_s = wall_now() - t0;
    }
  } else if (m->o.graph_group > 1) {
    snprintf(m->group_reason, sizeof m->group_reason, "graph groups need %s",
             !m->graph ? "graph mode" : !m->cupti ? "the CUPTI clock" : "the read eviction (flush_mode read)");
  }

  tb_stop_reason reason = TB_STOP_CONTINUE;
  while (reason == TB_STOP_CONTINUE) {
    size_t n;
    if (fixed) {
      n = rule.repeat - m->run.n;
    } else {
      size_t need_n = rule.min_samples > m->run.n ? rule.min_samples - m->run.n : 0;
      size_t need_t = 0;
      if (rule.min_time_s > m->run.gpu_time_s) /* 2 % over the estimate: no straggler batch */
        need_t = est_busy > 0 ? (size_t)ceil((rule.min_time_s - m->run.gpu_time_s) * 1.02 / est_busy) + 1 : 1;
      n = need_n > need_t ? need_n : need_t;
      /* Only the noise is missing: grow geometrically. (Not while min_samples or min_time are
       * unmet: a batch sized for them alone usually ends the measurement.) */
      if (n == 0) n = m->run.n / 2;
      if (rule.max_samples && n > rule.max_samples - m->run.n) n = rule.max_samples - m->run.n;
    }
    if (est_wall > 0 && rule.timeout_s > 0) {
      double left = rule.timeout_s - (wall_now() - t_start);
      size_t fit = left > est_wall ? (size_t)(left / est_wall) : 1;
      if (n > fit) n = fit;
    }
    if (n < 1) n = 1;
    if (n > BATCH_MAX) n = BATCH_MAX;
    if (m->group > 1) { /* whole launches of the group graph */
      n = (n + m->group - 1) / m->group * m->group;
      if (n > BATCH_MAX) n = BATCH_MAX / m->group * m->group;
    }
    TRY(m, ensure_events(m->gpu, 3 * n), "creating events");
    uint64_t base = R.next_ext_id;
    R.next_ext_id += 2 * n; /* runs, then their evictions */
    /* Clock probes around groups of samples covering about clock_interval of GPU time. */
    m->probe_stride = 1;
    if (m->probe_fn && m->o.clock_interval > 0 && est_busy > 0) {
      double k = floor(m->o.clock_interval / est_busy);
      m->probe_stride = k < 1 ? 1 : k > BATCH_MAX ? BATCH_MAX : (size_t)k;
    }
    if (m->group > 1) m->probe_stride = (m->probe_stride + m->group - 1) / m->group * m->group;
    double t0 = wall_now();
    enqueue_batch(m, n, base);
    double t1 = wall_now();
    wait_batch(m, t0, est_busy * (double)n);
    double t2 = wall_now();
    double b = collect_batch(m, n, base, 1);
    double t3 = wall_now();
    m->enqueue_s += t1 - t0, m->wait_s += t2 - t1, m->collect_s += t3 - t2;
    if (b > 0) est_busy = b;
    est_wall = (t3 - t0) / (double)n;
    reason = tb_stop_decide(&rule, &m->run, wall_now() - t_start);
    /* Every sample so far ran under the threshold: that is the clock this load sustains, not a
     * passing throttle, and waiting for the timeout would not change it. Give up now; the
     * caller decides (the runner re-measures with the filter off and says so). */
    size_t enough = rule.min_samples > 10 ? rule.min_samples : 10;
    if (reason == TB_STOP_CONTINUE && m->run.n == 0 && m->dropped_throttled >= enough) break;
  }
  double wall_s = wall_now() - t_start;

  /* The samples that count: without the sustained switch, those not under the threshold; and in
   * fixed mode no more than repeat (the switch can bring back more). */
  if (!m->sustained) {
    size_t j = 0;
    for (size_t i = 0; i < m->n; i++) {
      if (m->thr[i]) continue;
      m->ms[j] = m->ms[i], m->ev_ms[j] = m->ev_ms[i], m->clk[j] = m->clk[i], m->kpr[j] = m->kpr[i];
      j++;
    }
    m->n = j;
  }
  if (fixed && m->n > rule.repeat) m->n = rule.repeat;

  if (m->n == 0) {
    char msg[512];
    const char *code = m->dropped_throttled ? "throttled" : "timeout";
    if (m->dropped_throttled)
      snprintf(msg, sizeof msg, "tb.timer.measure: all %zu samples ran under %.0f%% of the %.0f MHz max SM clock",
               m->dropped_throttled, m->o.throttle_threshold * 100, m->max_mhz);
    else
      snprintf(msg, sizeof msg, "tb.timer.measure: no sample kept within %g s (%zu incomplete)",
               m->o.timeout, m->dropped_incomplete);
    if (m->cupti) cupti_discard();
    measure_free(m);
    lua_pushnil(L);
    lua_pushstring(L, msg);
    lua_pushstring(L, code);
    return 3;
  }

  tb_summary s, ev;
  tb_summarize(m->ms, m->n, &s);
  tb_summarize(m->ev_ms, m->n, &ev);
  lua_createtable(L, 0, 40);
  lua_pushstring(L, m->cupti ? "cupti" : "events");
  lua_setfield(L, -2, "clock");
  if (m->clock_reason[0]) {
    lua_pushstring(L, m->clock_reason);
    lua_setfield(L, -2, "clock_fallback_reason");
  }
  set_array(L, "samples", m->ms, m->n);
  set_array(L, "events_ms", m->ev_ms, m->n);
  set_num(L, "n", (double)m->n);
  set_num(L, "dropped_throttled", (double)m->dropped_throttled);
  set_num(L, "under_threshold", (double)m->under_threshold);
  lua_pushstring(L, !m->probe_fn ? "off" : m->sustained ? "sustained" : "on");
  lua_setfield(L, -2, "throttle_filter");
  set_num(L, "dropped_incomplete", (double)m->dropped_incomplete);
  set_num(L, "min", s.min);
  set_num(L, "max", s.max);
  set_num(L, "median", s.median);
  set_num(L, "mean", s.mean);
  set_num(L, "stdev", s.stdev);
  set_num(L, "noise", s.noise);
  set_num(L, "q1", s.q1);
  set_num(L, "q3", s.q3);
  set_num(L, "events_median", ev.median);
  set_num(L, "events_mean", ev.mean);
  if (m->probe_fn) {
    set_array(L, "sm_clocks_mhz", m->clk, m->n);
    set_num(L, "sm_clock_mhz", median_of(m->clk, m->n));
  }
  set_num(L, "max_clock_mhz", m->max_mhz);
  set_num(L, "throttle_threshold", m->o.throttle_threshold);
  lua_pushboolean(L, m->graph != NULL);
  lua_setfield(L, -2, "graph");
  set_num(L, "graph_group", (double)(m->group > 1 ? m->group : 1));
  if (m->group_reason[0]) {
    lua_pushstring(L, m->group_reason);
    lua_setfield(L, -2, "graph_group_reason");
  }
  if (m->graph_reason[0]) {
    lua_pushstring(L, m->graph_reason);
    lua_setfield(L, -2, "graph_fallback_reason");
  }
  set_num(L, "flush_bytes", (double)m->flush_bytes);
  lua_pushstring(L, m->o.flush_mode == 0 ? "read" : "write");
  lua_setfield(L, -2, "flush_mode");
  set_num(L, "flush_tlb_bytes", (double)(m->tlb_pages * TLB_PAGE));
  set_num(L, "probes", (double)m->probes);
  set_num(L, "batches", (double)m->batches);
  set_num(L, "warmup", (double)warmup);
  lua_pushstring(L, fixed ? "fixed" : "adaptive");
  lua_setfield(L, -2, "mode");
  set_num(L, "wall_s", wall_s);
  set_num(L, "gpu_busy_s", m->busy_s);
  set_num(L, "evict_s", m->evict_s);
  set_num(L, "probe_s", m->probe_s);
  set_num(L, "setup_s", m->setup_s);
  set_num(L, "enqueue_s", m->enqueue_s);
  set_num(L, "wait_s", m->wait_s);
  set_num(L, "collect_s", m->collect_s);
  set_num(L, "gpu_span_s", m->span_total_s);
  set_num(L, "group_setup_s", m->group_setup_s);
  set_num(L, "enqueue_events_s", m->enqueue_events_s);
  set_num(L, "flush_s", m->flush_s);
  set_num(L, "overlap_s", m->overlap_s);
  set_num(L, "kernels_per_run", median_of(m->kpr, m->n));
  lua_pushstring(L, tb_stop_reason_name(reason));
  lua_setfield(L, -2, "stop_reason");
  if (m->cupti) cupti_discard();
  measure_free(m);
  return 1;
}

static int l_clock_probe(lua_State *L) {
  measure m_, *m = &m_;
  memset(m, 0, sizeof *m);
  m->L = L;
  lua_Integer window = luaL_optinteger(L, 1, 2000);
  luaL_argcheck(L, window >= 200 && window <= 10000000, 1, "window must be 200 to 1e7 ns");
  m->gpu = tb_gpu(L);
  m->props = tb_current_props(L);
  m->s = tb_stream();
  m->probe_window = (unsigned)window;
  m->probe_fn = tb_host_kernel(L, "clock_probe.cu", "tb_clock_probe");
  size_t sms = (size_t)(m->props->sm_count > 0 ? m->props->sm_count : 1);
  tb_check_gpu(L, ensure_buffer(m->gpu, &R.probe, &R.probe_cap,
                                (BATCH_MAX + 1) * sms * 2 * sizeof(unsigned long long)));
  alloc_batch(m);
  TRY(m, launch_probe(m, 0), "clock probe");
  TRY(m, m->gpu->stream_wait_timeout(m->s, 10e3), "clock probe");
  TRY(m, m->gpu->copy_dtoh(m->probe_host, R.probe, sms * 2 * sizeof(unsigned long long)), "clock probe");
  double ns = 0, lo = INFINITY, hi = 0;
  double mhz = probe_clock(m, 0, &ns);
  for (size_t i = 0; i < sms; i++) {
    if (m->probe_host[2 * i + 1] == 0) continue;
    double v = (double)m->probe_host[2 * i] * 1e3 / (double)m->probe_host[2 * i + 1];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  measure_free(m);
  lua_createtable(L, 0, 5);
  set_num(L, "mhz", mhz);
  set_num(L, "min_mhz", isfinite(lo) ? lo : 0);
  set_num(L, "max_mhz", hi);
  set_num(L, "window_ns", ns);
  set_num(L, "sms", (double)sms);
  set_num(L, "device_max_mhz", m->props->clock_khz / 1e3);
  return 1;
}

static int l_cupti(lua_State *L) {
  tb_gpu(L);
  gpu_status st = cupti_start();
  lua_createtable(L, 0, 3);
  lua_pushboolean(L, st == GPU_OK);
  lua_setfield(L, -2, "available");
  if (st == GPU_OK) {
    lua_pushstring(L, cupti_library_path());
    lua_setfield(L, -2, "library");
    unsigned long plain = 0, forced = 0;
    cupti_flush_counts(&plain, &forced);
    set_num(L, "flushes", (double)plain);
    set_num(L, "forced_flushes", (double)forced);
  } else {
    lua_pushstring(L, gpu_last_error());
    lua_setfield(L, -2, "reason");
  }
  return 1;
}

static const luaL_Reg functions[] = {
  {"measure", l_measure}, {"clock_probe", l_clock_probe}, {"cupti", l_cupti}, {NULL, NULL}};

int luaopen_tb_timer(lua_State *L);
int luaopen_tb_timer(lua_State *L) {
#if defined(__linux__) && defined(PR_SET_TIMERSLACK)
  /* The batch wait sleeps in steps down to 20 us; Linux's default 50 us timer slack would let each
   * wake-up run late by that much. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  luaL_newlib(L, functions);
  l_options(L);
  lua_setfield(L, -2, "options");
  return 1;
}
