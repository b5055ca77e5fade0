/* stats.h: statistics of timing samples and the rules that decide when to stop sampling. Pure C,
 * no GPU and no Lua, so the rules are unit-tested on synthetic sample streams (tests/c). */
#ifndef TB_STATS_H
#define TB_STATS_H

#include <stddef.h>

typedef struct tb_summary {
  size_t n;
  double min, max, mean, median, stdev, q1, q3;
  double trim_mean; /* the mean without the lowest and highest 5 % (floor(n / 20) samples each end) */
  double noise; /* stdev / mean (0 when n < 2) */
} tb_summary;

/* Quantile q in [0, 1] of an ascending array, linear interpolation between the two nearest
 * ranks (Hyndman-Fan type 7, numpy's default). n must be > 0. */
double tb_quantile_sorted(const double *sorted, size_t n, double q);
/* Sample standard deviation (n - 1 in the denominator; 0 when n < 2). */
double tb_stdev(const double *x, size_t n);
/* Fills out from n samples (x is not modified). Returns 0, or -1 when n == 0 or out of memory. */
int tb_summarize(const double *x, size_t n, tb_summary *out);

/* Running mean and variance (Welford), plus the GPU time behind the samples. */
#define TB_NOISE_WINDOW 64
typedef struct tb_running {
  size_t n;
  double mean, m2;
  double gpu_time_s;
  /* The relative stdev after each of the last TB_NOISE_WINDOW samples (a ring), for the
   * plateau test: noise that has stopped falling will not reach max_noise by waiting. */
  double noise_hist[TB_NOISE_WINDOW];
  size_t hist_n, hist_pos;
} tb_running;
void tb_running_add(tb_running *r, double x, double gpu_time_s);
double tb_running_noise(const tb_running *r); /* relative stdev; +inf when n < 2 or mean == 0 */

typedef enum tb_stop_reason {
  TB_STOP_CONTINUE = 0,
  TB_STOP_REPEAT,      /* fixed: the requested number of samples was kept */
  TB_STOP_CONVERGED,   /* adaptive: noise under max_noise with min_samples and min_time */
  TB_STOP_TIMEOUT,     /* wall-clock limit */
  TB_STOP_MAX_SAMPLES, /* adaptive: the sample cap */
  TB_STOP_PLATEAU,     /* adaptive: noise above max_noise but no longer falling (nvbench) */
  TB_STOP_EXPOSURE     /* adaptive, a capped or heavy load: its fixed exposure (capped_exposure) is over */
} tb_stop_reason;
const char *tb_stop_reason_name(tb_stop_reason r); /* "repeat", "converged", "timeout", ... */

typedef struct tb_stop_rule {
  int adaptive;        /* 0: fixed (repeat), 1: nvbench-style stdrel rule */
  size_t repeat;       /* fixed: samples to keep */
  size_t min_samples;  /* adaptive: at least this many kept samples (10) */
  size_t max_samples;  /* adaptive: stop here whatever the noise (0 = no cap) */
  double max_noise;    /* adaptive: relative stdev to reach (0.005) */
  double min_time_s;   /* adaptive: GPU time of kept samples to accumulate first */
  double timeout_s;    /* both: wall-clock limit (<= 0: none) */
  double plateau_tol;  /* adaptive: relative change of the noise over the last window under
                          which it counts as converged (0.02; <= 0 disables) */
  size_t sustained_min; /* > 0: the sustained-clock rule (tb_clock_sustained) with this minimum */
  double settle_window_s; /* adaptive, under a cap: the SM clock must have settled (tb_clock_settled
                             over two windows of this much GPU time) before converged or plateau
                             may stop; <= 0 disables */
  double settle_tol;    /* the windows' mean clocks may differ by this fraction (0.01) */
} tb_stop_rule;

/* The relative change of the noise over the window: |least-squares slope| * window / mean of
 * the window's noise. +inf until the window is full. */
double tb_noise_trend(const tb_running *r);

/* The decision after the samples in r, wall_s seconds after the measurement began. Dropped
 * samples never reach r, so they count only toward the wall-clock limit. */
tb_stop_reason tb_stop_decide(const tb_stop_rule *rule, const tb_running *r, double wall_s);

/* The SM clock has settled: over the last window_s seconds of GPU time (busy_s per sample) and the
 * window_s before it, the mean known clock (clk > 0) differs by at most tol of the later one.
 * 0 while the samples do not yet cover both windows; 1 when a window has no known clock (nothing
 * to wait for) or window_s <= 0. Under a power cap the clock moves for seconds after a load starts
 * (H200: 1.0-1.9 GHz); a time that converged before the clock did belongs to a state the load
 * leaves. */
int tb_clock_settled(const double *clk, const double *busy_s, size_t n, double window_s, double tol);

/* tb_stop_decide, then, for an adaptive rule while the load runs under a power or thermal cap
 * (capped), converged and noise_plateau wait until the clock has settled (settled); timeout and
 * max_samples still stop. The fixed protocol keeps exactly `repeat`. */
tb_stop_reason tb_stop_decide_clock(const tb_stop_rule *rule, const tb_running *r, double wall_s, int capped,
                                    int settled);

/* A sample is taken while throttled when its SM clock is known (> 0) and under
 * threshold * max_mhz. Unknown clocks (<= 0) or an unknown max (<= 0) never drop a sample. */
int tb_sample_throttled(double clock_mhz, double max_mhz, double threshold);

/* The load sustains a clock under the threshold, rather than passing through a throttle: at
 * least `min` samples were dropped and more were dropped than kept. A power-limited tensor-core
 * load on the H200 runs under 90 % of the max clock on most samples; waiting for the clock it
 * never reaches would run to the timeout and keep a biased few. From then on every sample counts,
 * those dropped before included, and the result says so. min == 0 disables the rule. */
int tb_clock_sustained(size_t kept, size_t dropped, size_t min);

/* Splits the kernels of one graph launch holding `per` samples, in start order, into samples:
 * each run of marker kernels (the eviction) opens the next sample and the kernels after it belong
 * to that sample. sample_of[i] receives kernel i's sample (0-based). Returns 0 when the launch
 * splits into exactly `per` samples, each opened by a marker; -1 otherwise (a kernel before the
 * first marker, or too few or too many samples). */
int tb_split_samples(const int *marker, size_t m, size_t per, long *sample_of);

/* One kernel interval [start, end) of a run or graph launch whose kernels are taken in start
 * order: the part of it after *covered (where the union of the ones before it ends), which
 * becomes max(*covered, end). Summed over the kernels, the parts give the length of the union.
 * CUPTI's start timestamp of a kernel launched right behind another in the same stream can fall
 * before that kernel's end; summing whole durations would count the overlap twice. An interval
 * with end < start counts 0. */
double tb_clip_next(unsigned long long *covered, unsigned long long start, unsigned long long end);

/* A synthetic or recorded stream of samples, fed one by one through the throttle filter and the
 * stopping rule (with the clock-settle rule: capped while the sample is, or the filter is
 * sustained): what the timer does, without a GPU. */
typedef struct tb_stream_sample {
  double ms;         /* the sample's time */
  double gpu_time_s; /* GPU busy time behind it (eviction + kernels) */
  double wall_s;     /* wall clock since the start when the sample is known */
  double clock_mhz;  /* SM clock around it (<= 0: unknown) */
  int capped;        /* taken under a power or thermal cap (NVML) */
} tb_stream_sample;
typedef struct tb_stream_result {
  tb_stop_reason reason; /* TB_STOP_CONTINUE when the stream ran out first */
  size_t consumed;       /* samples read from the stream */
  size_t kept, dropped_throttled;
  size_t under_threshold; /* samples under the threshold, dropped or (once sustained) kept */
  int sustained;          /* the sustained-clock rule switched the filter off */
  int waited_clock;       /* a stop was held back at least once because the clock had not settled */
  tb_running running;     /* the samples that count */
  tb_running all;         /* every sample */
} tb_stream_result;
void tb_stop_run_stream(const tb_stop_rule *rule, const tb_stream_sample *s, size_t n,
                        double max_mhz, double threshold, tb_stream_result *out);

#endif
