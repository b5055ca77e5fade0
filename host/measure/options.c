/* options.c: the timer's protocol options, declared once as data. tb.timer.options exports this
 * table; the CLI flags, the campaign's protocol validation and the --help text are generated from
 * it (lua/tilebench/options.lua), so a new option is a field in measure_opts and a row here. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "measure/measure.h"

const measure_opts measure_default_opts = {
  .mode = 0, .warmup = -1, .repeat = 100, .min_samples = 10, .max_samples = 0, .max_noise = 0.005,
  .min_time = 0.05, .timeout = 15, .noise_plateau = 0.02, .flush = 1, .flush_bytes = -1, .flush_mode = 0,
  .flush_tlb_bytes = 0, .graph = 1, .graph_group = 0, .group_events = 0, .clock = 0, .clock_check = 1,
  .sustained_clock = 1, .throttle_threshold = 0.90, .clock_window_ns = 2000, .clock_interval = 0.005,
  .sync_timeout = 60, .conditions = 0 /* interleave (docs/MEASUREMENT.md: issue 19's H200 runs) */, .reading = 0,
  .cooldown_max = 5, .settle_window = 0.25, .settle_tol = 0.01, .power = 1, .capped_exposure = 1, .capped_preload = 1,
  .heavy_power = 0.9, .heavy_clock = 0.97, .heavy_estimate = 0, .heavy_probe_s = 0.1, .preload_scope = 1, .heavy_gap_s = 0.05,
  .exposure_scope = 1 /* case, preload device: session 13's H200 runs (docs/MEASUREMENT.md) */};

#define OFF(f) offsetof(measure_opts, f)
const measure_opt_desc measure_options[] = {
  {"mode", MEASURE_OPT_CHOICE, OFF(mode), "adaptive fixed" /* measure_modes[] */, 0, 0, "adaptive",
   "stopping rule: adaptive (relative stdev under max_noise) or fixed (warmup, repeat)"},
  {"warmup", MEASURE_OPT_INTEGER, OFF(warmup), NULL, 0, 1e6, "3 (adaptive), 20 (fixed)",
   "untimed runs first, each with its eviction"},
  {"repeat", MEASURE_OPT_INTEGER, OFF(repeat), NULL, 1, 1e7, "100", "fixed: samples to keep"},
  {"min_samples", MEASURE_OPT_INTEGER, OFF(min_samples), NULL, 2, 1e7, "10", "adaptive: at least this many samples"},
  {"max_samples", MEASURE_OPT_INTEGER, OFF(max_samples), NULL, 0, 1e8, "0",
   "adaptive: stop at this many samples (0: no cap)"},
  {"max_noise", MEASURE_OPT_NUMBER, OFF(max_noise), NULL, 0, 1, "0.005",
   "adaptive: stop once stdev/mean of the samples is under this"},
  {"min_time", MEASURE_OPT_NUMBER, OFF(min_time), NULL, 0, 3600, "0.05",
   "adaptive: seconds of GPU time (evictions + kernels) the kept samples must cover first"},
  {"noise_plateau", MEASURE_OPT_NUMBER, OFF(noise_plateau), NULL, 0, 1, "0.02",
   "adaptive: also stop once the noise changed by less than this (relative) over the last 64 "
   "samples: it will not reach max_noise by waiting (nvbench's convergence test; 0 disables)"},
  {"timeout", MEASURE_OPT_NUMBER, OFF(timeout), NULL, 0, 86400, "15", "wall-clock seconds after which sampling stops"},
  {"flush", MEASURE_OPT_BOOLEAN, OFF(flush), NULL, 0, 0, "true", "evict the last-level cache before every run"},
  {"flush_bytes", MEASURE_OPT_INTEGER, OFF(flush_bytes), NULL, 1, 1e12, "2 x L2 (cdna3: 512 MiB)",
   "bytes each eviction reads (flush_mode read) or writes (flush_mode write)"},
  {"flush_mode", MEASURE_OPT_CHOICE, OFF(flush_mode), "read write", 0, 0, "read",
   "eviction: read the buffer with a kernel (leaves the L2 clean) or memset it (leaves it dirty)"},
  {"flush_tlb_bytes", MEASURE_OPT_INTEGER, OFF(flush_tlb_bytes), NULL, 0, 1e13, "0",
   "also read one word per 2 MiB page of a buffer this large in each eviction, to displace GPU "
   "TLB entries (0: off)"},
  {"graph", MEASURE_OPT_BOOLEAN, OFF(graph), NULL, 0, 0, "true", "replay the plan as one CUDA graph"},
  {"graph_group", MEASURE_OPT_INTEGER, OFF(graph_group), NULL, 0, 1024, "0 (by the case)",
   "graph mode: samples (eviction, events, run) captured into one graph launch; 0: as many as "
   "cover about clock_interval of GPU time, at most 32; 1: one launch per run. Needs CUPTI and "
   "the read eviction, whose kernels split the launch's records into samples"},
  {"group_events", MEASURE_OPT_CHOICE, OFF(group_events), "split inline", 0, 0, "split",
   "graph groups: the event node after each run on a branch beside the kernels, so the next "
   "eviction need not wait for it (split), or in line between the kernels like the one before "
   "each run (inline)"},
  {"clock", MEASURE_OPT_CHOICE, OFF(clock), "cupti events", 0, 0, "cupti",
   "reported clock: CUPTI kernel durations (falls back to events when CUPTI is unavailable) or events"},
  {"clock_check", MEASURE_OPT_BOOLEAN, OFF(clock_check), NULL, 0, 0, "true",
   "probe the SM clock around every sample and drop throttled ones"},
  {"throttle_threshold", MEASURE_OPT_NUMBER, OFF(throttle_threshold), NULL, 0, 2, "0.9",
   "drop samples whose SM clock is under this fraction of the device's max clock"},
  {"sustained_clock", MEASURE_OPT_BOOLEAN, OFF(sustained_clock), NULL, 0, 0, "true",
   "once max(10, min_samples) samples were dropped and more dropped than kept, the load sustains "
   "that clock (power-limited): keep every sample, those dropped included, and say so"},
  {"power", MEASURE_OPT_BOOLEAN, OFF(power), NULL, 0, 0, "true",
   "read the power source (NVML: clocks, cap reasons, power) around each batch; false: no readings "
   "(no cap_fraction, no clock-settle rule, a cool-down is a plain pause), e.g. for the autotune "
   "screens, where each reading is three driver queries per batch"},
  {"clock_window_ns", MEASURE_OPT_INTEGER, OFF(clock_window_ns), NULL, 200, 1e7, "2000",
   "globaltimer window of the clock probe"},
  {"clock_interval", MEASURE_OPT_NUMBER, OFF(clock_interval), NULL, 0, 10, "0.005",
   "seconds of GPU time between clock probes: samples shorter than this share the probes around "
   "their group (0: probe around every sample)"},
  {"sync_timeout", MEASURE_OPT_NUMBER, OFF(sync_timeout), NULL, 0.001, 86400, "60",
   "seconds to wait for one batch of runs before raising 'timeout'"},
  {"conditions", MEASURE_OPT_CHOICE, OFF(conditions), "interleave cooldown sequential", 0, 0, "interleave",
   "how a case's implementations get equal conditions: measured in rounds, one batch of each in turn, "
   "so they share the power state (interleave, the default: the H200 runs of docs/MEASUREMENT.md; "
   "timeout bounds the round-robin; autotune searches are not interleaved), each after a cool-down "
   "until the power source reads idle (cooldown, at most cooldown_max), or one after the other as they "
   "come (sequential, as results before session 12 were measured)"},
  {"reading", MEASURE_OPT_CHOICE, OFF(reading), "sustained cold", 0, 0, "sustained",
   "sustained: samples back to back, what a training loop sees; cold: each sample after a cool-down "
   "(one sample per batch, no graph groups, nothing dropped for its clock), like ncu's replay"},
  {"cooldown_max", MEASURE_OPT_NUMBER, OFF(cooldown_max), NULL, 0, 600, "5",
   "seconds a cool-down may wait for the power source to read idle (without one: a pause of "
   "min(cooldown_max, 1) s)"},
  {"settle_window", MEASURE_OPT_NUMBER, OFF(settle_window), NULL, 0, 60, "0.25",
   "adaptive, under a power or thermal cap: seconds of GPU time in each of the two last windows whose "
   "mean SM clocks must agree within settle_tol before the time may stop (0: off)"},
  {"settle_tol", MEASURE_OPT_NUMBER, OFF(settle_tol), NULL, 0, 1, "0.01",
   "the relative difference of the two windows' mean SM clocks under which the clock has settled"},
  {"capped_exposure", MEASURE_OPT_NUMBER, OFF(capped_exposure), NULL, 0, 3600, "1",
   "adaptive, sustained reading: a load that runs under a power or thermal cap, or draws heavy_power "
   "of the power limit, is sampled for exactly this many seconds of GPU time after its warm-up and "
   "then stops (stop reason 'exposure'), converged or not, so every such implementation of a case "
   "gets the same exposure and none runs to the timeout (0: off; the noise and clock-settle rules "
   "decide)"},
  {"capped_preload", MEASURE_OPT_NUMBER, OFF(capped_preload), NULL, 0, 3600, "1",
   "capped_exposure: seconds of GPU time a capped or heavy load runs before its exposure, the samples "
   "of that time dropped, so the exposure starts from the load's own power state and not from the "
   "state what ran before left (0: the exposure starts when the load is found heavy)"},
  {"heavy_power", MEASURE_OPT_NUMBER, OFF(heavy_power), NULL, 0, 1, "0.9",
   "capped_exposure: the share of the power limit a batch's highest reading (instantaneous power "
   "where the source gives it, else its 1 s average) must reach for the load to count as heavy (0.9: the "
   "H200's memory-bound kernels average up to 0.8 of its 700 W limit, its capped GEMMs sit at it)"},
  {"heavy_estimate", MEASURE_OPT_CHOICE, OFF(heavy_estimate), "trimmed_mean median", 0, 0, "trimmed_mean",
   "capped_exposure: the time reported for a load sampled on an exposure: the mean of its samples "
   "without the lowest and highest 5 % (trimmed_mean: under a power cap the clock dithers between "
   "steps about 1 % apart and the median jumps between them from run to run, where the mean of "
   "the exposure is the sustained rate), or the median as for every other load"},
  {"heavy_clock", MEASURE_OPT_NUMBER, OFF(heavy_clock), NULL, 0, 1, "0.97",
   "capped_exposure: a batch whose median SM clock (the clock probe's) is under this share of the max "
   "SM clock makes the load heavy too: the GPU lowers its clock for power within milliseconds, while "
   "the power readings lag (H200: a GEMM converged in 55 ms at 1828 MHz reading 158 W; memory-bound "
   "loads keep 1968 MHz or more at 560 W); 0: off"},
  {"heavy_probe_s", MEASURE_OPT_NUMBER, OFF(heavy_probe_s), NULL, 0, 60, "0.1",
   "capped_exposure: a load not yet found heavy whose last batch read at least half the heavy level "
   "and more than the batch before (by 2 % of the limit) may not stop by convergence or noise plateau "
   "before this many seconds of GPU time, so a load that converges fast is not read before its power "
   "is seen; a light or flat load is not held (0: off)"},
  {"preload_scope", MEASURE_OPT_CHOICE, OFF(preload_scope), "load device", 0, 0, "device",
   "capped_preload: run by each heavy load itself (load), or satisfied by the device's recent history "
   "(device): a load's preload also ends once the device has read heavy (capped, or heavy_power of "
   "the limit) without a pause longer than heavy_gap_s for capped_preload seconds, so a heavy load "
   "right after another, or a case's interleaved implementations, share one preload; without a power "
   "source, as load"},
  {"heavy_gap_s", MEASURE_OPT_NUMBER, OFF(heavy_gap_s), NULL, 0, 60, "0.05",
   "preload_scope device: seconds between two heavy readings after which the device's heavy streak "
   "starts again (the host did something else: verifying, building, compiling)"},
  {"exposure_scope", MEASURE_OPT_CHOICE, OFF(exposure_scope), "load case", 0, 0, "case",
   "capped_exposure and capped_preload: per heavy load (load), or per interleaved case (case): once any "
   "load of a case measured in rounds is found heavy, every load of it still sampling runs one shared "
   "preload of capped_preload seconds of their total GPU time, then rounds go on until their total GPU "
   "time reaches capped_exposure (and each has min_samples), and all stop together (result exposure_by, "
   "exposure_scope); a case of one load, and sequential measurement, as load"},
};
const size_t measure_n_options = sizeof measure_options / sizeof measure_options[0];

const measure_opt_desc *measure_option_find(const char *name) {
  for (size_t i = 0; i < measure_n_options; i++)
    if (strcmp(measure_options[i].name, name) == 0) return &measure_options[i];
  return NULL;
}

const char *measure_option_type_name(measure_opt_type t) {
  static const char *const names[] = {"number", "integer", "boolean", "choice"};
  return names[t];
}

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

int measure_option_set_number(measure_opts *o, const measure_opt_desc *d, double v, char *msg, size_t len) {
  if (d->type == MEASURE_OPT_BOOLEAN || d->type == MEASURE_OPT_CHOICE || !(v >= d->min && v <= d->max) ||
      (d->type == MEASURE_OPT_INTEGER && v != floor(v))) {
    if (d->type == MEASURE_OPT_BOOLEAN) return snprintf(msg, len, "option '%s' must be a boolean", d->name), -1;
    if (d->type == MEASURE_OPT_CHOICE)
      return snprintf(msg, len, "option '%s' must be one of: %s", d->name, d->choices), -1;
    snprintf(msg, len, "option '%s' must be %s in [%g, %g]", d->name,
             d->type == MEASURE_OPT_INTEGER ? "an integer" : "a number", d->min, d->max);
    return -1;
  }
  *(double *)((char *)o + d->offset) = v;
  return 0;
}

int measure_option_set_boolean(measure_opts *o, const measure_opt_desc *d, int v, char *msg, size_t len) {
  if (d->type != MEASURE_OPT_BOOLEAN) {
    if (d->type == MEASURE_OPT_CHOICE)
      return snprintf(msg, len, "option '%s' must be one of: %s", d->name, d->choices), -1;
    snprintf(msg, len, "option '%s' must be %s in [%g, %g]", d->name,
             d->type == MEASURE_OPT_INTEGER ? "an integer" : "a number", d->min, d->max);
    return -1;
  }
  *(int *)((char *)o + d->offset) = v != 0;
  return 0;
}

int measure_option_set_choice(measure_opts *o, const measure_opt_desc *d, const char *word, char *msg, size_t len) {
  int k = d->type == MEASURE_OPT_CHOICE ? choice_index(d->choices, word) : -1;
  if (k < 0) {
    if (d->type == MEASURE_OPT_CHOICE)
      return snprintf(msg, len, "option '%s' must be one of: %s", d->name, d->choices), -1;
    if (d->type == MEASURE_OPT_BOOLEAN) return snprintf(msg, len, "option '%s' must be a boolean", d->name), -1;
    snprintf(msg, len, "option '%s' must be %s in [%g, %g]", d->name,
             d->type == MEASURE_OPT_INTEGER ? "an integer" : "a number", d->min, d->max);
    return -1;
  }
  *(int *)((char *)o + d->offset) = k;
  return 0;
}

int measure_opts_check(const measure_opts *o, char *msg, size_t len) {
  if (o->flush && o->flush_mode != 0 && o->flush_tlb_bytes > 0)
    return snprintf(msg, len, "option 'flush_tlb_bytes' needs flush_mode = 'read'"), -1;
  return 0;
}
