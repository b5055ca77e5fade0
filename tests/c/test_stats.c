/* test_stats.c: statistics and stopping rules of tb.timer on synthetic sample streams (no GPU). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static int failures;
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)
#define NEAR(a, b, tol) CHECK(fabs((a) - (b)) <= (tol))

/* xorshift64*: a fixed stream of pseudo-random numbers, the same on every machine. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform01(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static void test_summary(void) {
  double x[] = {5, 1, 4, 2, 3};
  tb_summary s;
  CHECK(tb_summarize(x, 5, &s) == 0);
  CHECK(s.n == 5);
  NEAR(s.min, 1, 0);
  NEAR(s.max, 5, 0);
  NEAR(s.median, 3, 1e-12);
  NEAR(s.mean, 3, 1e-12);
  NEAR(s.q1, 2, 1e-12);
  NEAR(s.q3, 4, 1e-12);
  NEAR(s.stdev, sqrt(2.5), 1e-12); /* sample stdev of 1..5 */
  NEAR(s.noise, sqrt(2.5) / 3, 1e-12);
  CHECK(x[0] == 5 && x[1] == 1); /* input untouched */

  /* Even count: linear interpolation, as numpy.quantile. [1,2,3,4]: q1 1.75, median 2.5, q3 3.25 */
  double y[] = {4, 3, 2, 1};
  CHECK(tb_summarize(y, 4, &s) == 0);
  NEAR(s.median, 2.5, 1e-12);
  NEAR(s.q1, 1.75, 1e-12);
  NEAR(s.q3, 3.25, 1e-12);

  /* the 5 % trimmed mean: under 20 samples nothing is cut (the mean); 40 samples of a two-step
   * mixture (a clock dithering between two steps) with one outlier at each end: the two cut */
  NEAR(s.trim_mean, 2.5, 1e-12);
  double mix[40];
  for (int i = 0; i < 40; i++) mix[i] = i % 3 == 0 ? 1.01 : 1.0;
  mix[7] = 50, mix[20] = 0.001;
  CHECK(tb_summarize(mix, 40, &s) == 0);
  /* cut: 0.001 and 1.0 low, 50 and 1.01 high; left: 25 of 1.0 and 11 of 1.01 (the 14 at i % 3 == 0
   * less index 0 and the two the outliers replaced: 7 is not a multiple of 3, 20 is not either) */
  double kept_low = 0, kept_high = 0;
  for (int i = 0; i < 40; i++) {
    if (i == 7 || i == 20) continue;
    if (i % 3 == 0) kept_high++; else kept_low++;
  }
  kept_low -= 1, kept_high -= 1; /* one 1.0 and one 1.01 cut beside the outliers */
  NEAR(s.trim_mean, (kept_low * 1.0 + kept_high * 1.01) / (kept_low + kept_high), 1e-12);
  CHECK(s.mean > 2); /* the plain mean follows the outlier */

  double one = 7;
  CHECK(tb_summarize(&one, 1, &s) == 0);
  CHECK(s.median == 7 && s.q1 == 7 && s.q3 == 7 && s.stdev == 0 && s.noise == 0);
  CHECK(tb_summarize(x, 0, &s) == -1);

  double sorted[] = {10, 20, 30};
  NEAR(tb_quantile_sorted(sorted, 3, 0.1), 12, 1e-12);
  NEAR(tb_quantile_sorted(sorted, 3, 0.0), 10, 0);
  NEAR(tb_quantile_sorted(sorted, 3, 1.0), 30, 0);

  /* Welford agrees with the two-pass stdev on values that barely differ. */
  double close[1000];
  tb_running r = {0};
  for (int i = 0; i < 1000; i++) {
    close[i] = 1e6 + 1e-3 * (i % 7);
    tb_running_add(&r, close[i], 0);
  }
  NEAR(tb_running_noise(&r) * r.mean, tb_stdev(close, 1000), 1e-9);
}

static tb_stop_rule adaptive_rule(void) {
  tb_stop_rule rule = {.adaptive = 1, .min_samples = 10, .max_noise = 0.005, .min_time_s = 0.05,
                       .timeout_s = 15};
  return rule;
}

/* Each sample takes 1 ms of GPU time and 1.1 ms of wall time. */
static tb_stream_sample *make_stream(size_t n, double noise, double clock_mhz) {
  tb_stream_sample *s = calloc(n, sizeof *s);
  for (size_t i = 0; i < n; i++) {
    s[i].ms = 1.0 * (1 + noise * (2 * uniform01() - 1));
    s[i].gpu_time_s = 1e-3;
    s[i].wall_s = 1.1e-3 * (double)(i + 1);
    s[i].clock_mhz = clock_mhz;
  }
  return s;
}

static void test_constant_stream_stops_at_min_time(void) {
  tb_stop_rule rule = adaptive_rule();
  tb_stream_sample *s = make_stream(100000, 0, 1980);
  tb_stream_result res;
  tb_stop_run_stream(&rule, s, 100000, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_CONVERGED);
  CHECK(res.consumed == 50); /* 50 x 1 ms reaches min_time 0.05 s; noise is 0 from the start */
  CHECK(res.kept == 50 && res.dropped_throttled == 0);

  /* With min_time 0 the same stream stops at min_samples. */
  rule.min_time_s = 0;
  tb_stop_run_stream(&rule, s, 100000, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_CONVERGED);
  CHECK(res.consumed == 10);
  free(s);
}

static void test_noisy_stream_runs_to_timeout(void) {
  tb_stop_rule rule = adaptive_rule();
  size_t n = 20000; /* 22 s of wall time: more than the 15 s limit */
  tb_stream_sample *s = make_stream(n, 0.2, 1980); /* +-20 %: relative stdev ~11.5 % */
  tb_stream_result res;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_TIMEOUT);
  CHECK(s[res.consumed - 1].wall_s >= 15 && s[res.consumed - 2].wall_s < 15);
  NEAR(tb_running_noise(&res.running), 0.2 / sqrt(3), 0.01);
  /* A cap on the sample count stops it first. */
  rule.max_samples = 500;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_MAX_SAMPLES && res.kept == 500);
  free(s);
}

/* nvbench's convergence test: noise that stopped falling ends the measurement long before the
 * timeout, but never before min_time and the window of samples. */
static void test_noise_plateau_stops_noisy_stream(void) {
  tb_stop_rule rule = adaptive_rule();
  rule.plateau_tol = 0.02;
  size_t n = 20000;
  tb_stream_sample *s = make_stream(n, 0.2, 1980); /* relative stdev ~11.5 %, never under 0.5 % */
  tb_stream_result res;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_PLATEAU);
  CHECK(res.kept >= TB_NOISE_WINDOW + 1);
  CHECK(s[res.consumed - 1].wall_s < 15);
  CHECK(tb_noise_trend(&res.running) < 0.02);
  /* min_time still holds: 2 s of GPU time needs 2000 samples of 1 ms. */
  rule.min_time_s = 2.0;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_PLATEAU && res.kept >= 2000);
  /* Disabled, only the timeout stops it. */
  rule.plateau_tol = 0;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_TIMEOUT);
  free(s);
}

/* A noise that is still rising is no plateau. */
static void test_rising_noise_is_no_plateau(void) {
  tb_running r = {0};
  for (int i = 0; i < 200; i++) tb_running_add(&r, 1.0 + (i % 2 ? 1 : -1) * 1e-4 * pow(1.03, i), 0);
  CHECK(tb_noise_trend(&r) > 0.05);
  tb_running empty = {0};
  CHECK(isinf(tb_noise_trend(&empty)));
}

static void test_mild_noise_converges(void) {
  tb_stop_rule rule = adaptive_rule();
  size_t n = 100000;
  tb_stream_sample *s = make_stream(n, 0.01, 1980); /* relative stdev ~0.58 % */
  tb_stream_result res;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  /* stdev of the samples stays ~0.58 %: above 0.5 %, so only the timeout stops it... */
  CHECK(res.reason == TB_STOP_TIMEOUT);
  /* ...while max_noise 1 % converges as soon as min_time is reached. */
  rule.max_noise = 0.01;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_CONVERGED && res.consumed == 50);
  free(s);
}

static void test_throttled_samples_dropped(void) {
  tb_stop_rule rule = adaptive_rule();
  rule.min_time_s = 0;
  rule.sustained_min = 10; /* on, but a third under the threshold is a passing throttle */
  size_t n = 100;
  tb_stream_sample *s = make_stream(n, 0, 1980);
  /* Every third sample under 90 % of 1980 MHz (1782 MHz), and slower: it must not count. */
  for (size_t i = 0; i < n; i += 3) {
    s[i].clock_mhz = 1500;
    s[i].ms = 1.3;
  }
  tb_stream_result res;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_CONVERGED);
  CHECK(res.kept == 10);
  CHECK(res.dropped_throttled == 5); /* samples 0,3,...,12 among the first 15 */
  CHECK(res.consumed == 15);
  CHECK(!res.sustained && res.under_threshold == 5);
  NEAR(res.running.mean, 1.0, 1e-12);
  /* Exactly at the threshold is not throttled; unknown clocks never drop. */
  CHECK(!tb_sample_throttled(1782, 1980, 0.9));
  CHECK(tb_sample_throttled(1781.9, 1980, 0.9));
  CHECK(!tb_sample_throttled(0, 1980, 0.9));
  CHECK(!tb_sample_throttled(1000, 0, 0.9));
  free(s);
}

/* A power-limited load: four samples in five under the threshold. Without the rule it runs to the
 * timeout on the fifth that pass; with it, every sample counts once ten were dropped. */
static void test_sustained_clock(void) {
  tb_stop_rule rule = adaptive_rule();
  rule.min_time_s = 0;
  rule.sustained_min = 10;
  size_t n = 20000;
  tb_stream_sample *s = make_stream(n, 0, 1750);
  for (size_t i = 0; i < n; i += 5) {
    s[i].clock_mhz = 1980;
    s[i].ms = 1.0 + 1e-3 * (double)(i % 7); /* the few fast-clock samples are noisy */
  }
  tb_stream_result res;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(res.sustained);
  CHECK(res.dropped_throttled == 0 && res.under_threshold >= 10);
  CHECK(res.kept == res.consumed && res.running.n == res.consumed);
  CHECK(res.reason == TB_STOP_CONVERGED && res.consumed < 20);
  CHECK(tb_clock_sustained(9, 10, 10));
  CHECK(!tb_clock_sustained(10, 10, 10) && !tb_clock_sustained(0, 9, 10));
  CHECK(!tb_clock_sustained(0, 100, 0)); /* 0 disables */

  rule.sustained_min = 0; /* the rule off: the passing fifth must reach min_samples alone */
  rule.max_noise = 1e-6;
  rule.plateau_tol = 0;
  tb_stop_run_stream(&rule, s, n, 1980, 0.9, &res);
  CHECK(!res.sustained && res.reason == TB_STOP_TIMEOUT);
  CHECK(res.dropped_throttled == res.under_threshold && res.dropped_throttled > 4 * res.kept - 4);
  free(s);
}

/* Overlapping CUPTI intervals: each kernel keeps only what the ones before it do not cover. */
static double clip_all(const unsigned long long *st, const unsigned long long *en, size_t n, double *eff) {
  unsigned long long covered = 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += eff[i] = tb_clip_next(&covered, st[i], en[i]);
  return sum;
}

static void test_clip_overlaps(void) {
  double eff[8];
  const unsigned long long s1[] = {100, 200, 300}, e1[] = {200, 300, 450}; /* back to back: all kept */
  CHECK(clip_all(s1, e1, 3, eff) == 350 && eff[0] == 100 && eff[1] == 100 && eff[2] == 150);
  const unsigned long long s2[] = {100, 180, 250}, e2[] = {200, 300, 260}; /* 20 ns overlap; one inside */
  CHECK(clip_all(s2, e2, 3, eff) == 200 && eff[0] == 100 && eff[1] == 100 && eff[2] == 0); /* the union [100, 300) */
  const unsigned long long s3[] = {100, 400}, e3[] = {50, 500}; /* a broken interval counts 0 */
  CHECK(clip_all(s3, e3, 2, eff) == 100 && eff[0] == 0 && eff[1] == 100);
  const unsigned long long s4[] = {100, 150}, e4[] = {400, 300}; /* the second wholly inside the first */
  CHECK(clip_all(s4, e4, 2, eff) == 300 && eff[1] == 0);
}

/* Graph groups: a launch's kernels in start order, split at the eviction (marker) kernels. */
static void test_split_samples(void) {
  long of[16];
  const int two[] = {1, 0, 1, 0}; /* eviction, run, eviction, run */
  CHECK(tb_split_samples(two, 4, 2, of) == 0 && of[0] == 0 && of[1] == 0 && of[2] == 1 && of[3] == 1);
  const int pages[] = {1, 1, 0, 0, 1, 1, 0, 0}; /* read + page sweep, a two-kernel plan */
  CHECK(tb_split_samples(pages, 8, 2, of) == 0 && of[1] == 0 && of[3] == 0 && of[4] == 1 && of[7] == 1);
  const int early[] = {0, 1, 0}; /* a kernel before any eviction */
  CHECK(tb_split_samples(early, 3, 1, of) != 0);
  CHECK(tb_split_samples(two, 4, 3, of) != 0); /* too few samples */
  CHECK(tb_split_samples(two, 4, 1, of) != 0); /* too many */
  const int bare[] = {1, 1, 0, 1}; /* a sample whose run left no record still counts as opened */
  CHECK(tb_split_samples(bare, 4, 2, of) == 0 && of[3] == 1);
  CHECK(tb_split_samples(two, 0, 1, of) != 0); /* nothing recorded */
}

static void test_fixed_rule(void) {
  tb_stop_rule rule = {.adaptive = 0, .repeat = 100, .timeout_s = 15};
  tb_stream_sample *s = make_stream(1000, 0.3, 1980); /* noise is irrelevant to the fixed rule */
  tb_stream_result res;
  tb_stop_run_stream(&rule, s, 1000, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_REPEAT && res.kept == 100 && res.consumed == 100);
  /* Throttled samples are replaced: 100 kept needs more than 100 read. */
  for (size_t i = 0; i < 1000; i += 2) s[i].clock_mhz = 900;
  tb_stop_run_stream(&rule, s, 1000, 1980, 0.9, &res);
  CHECK(res.reason == TB_STOP_REPEAT && res.kept == 100 && res.consumed == 200);
  CHECK(res.dropped_throttled == 100);
  CHECK(strcmp(tb_stop_reason_name(res.reason), "repeat") == 0);
  CHECK(strcmp(tb_stop_reason_name(TB_STOP_CONVERGED), "converged") == 0);
  free(s);
}

/* The clock-settle rule (issue 19): under a power cap, a time that converged while the SM clock
 * still moved must not stop the measurement. A synthetic GEMM under a cap: 1 ms samples whose
 * clock falls from 1900 to 1430 MHz over the first 0.6 s of GPU time, then holds; the time
 * follows the clock (constant work in cycles) with 0.1 % noise. */
static void test_clock_settle(void) {
  /* tb_clock_settled on its own */
  double clk[10] = {1900, 1800, 1700, 1600, 1500, 1430, 1430, 1430, 1430, 1430};
  double busy[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK(tb_clock_settled(clk, busy, 10, 2, 0.01));      /* last 2 vs the 2 before: 1430 and 1430 */
  CHECK(!tb_clock_settled(clk, busy, 10, 3, 0.01));     /* 1430 vs (1600+1500+1430)/3 */
  CHECK(!tb_clock_settled(clk, busy, 10, 6, 0.01));     /* not two windows of 6 s yet */
  CHECK(tb_clock_settled(clk, busy, 10, 0, 0.01));      /* off */
  double unknown[4] = {0, 0, 0, 0};
  CHECK(tb_clock_settled(unknown, busy, 4, 2, 0.01));   /* no clock known: nothing to wait for */
  CHECK(tb_clock_settled(clk, busy, 6, 3, 0.2));        /* 1510 vs 1800 within 20 % */

  size_t n = 20000;
  tb_stream_sample *s = calloc(n, sizeof *s);
  for (size_t i = 0; i < n; i++) {
    double t = 1e-3 * (double)i;
    double mhz = t < 0.6 ? 1900 - (1900 - 1430) * t / 0.6 : 1430;
    s[i].clock_mhz = mhz;
    s[i].ms = 1.43 / (mhz / 1000) * (1 + 0.001 * (2 * uniform01() - 1));
    s[i].gpu_time_s = 1e-3;
    s[i].wall_s = 1.1e-3 * (double)(i + 1);
    s[i].capped = 1;
  }
  tb_stop_rule rule = adaptive_rule();
  rule.max_noise = 0.2; /* the time alone converges at once ... */
  tb_stream_result plain, settled;
  tb_stop_run_stream(&rule, s, n, 1980, 0, &plain); /* no settle window: the old rule */
  CHECK(plain.reason == TB_STOP_CONVERGED && plain.consumed == 50 && !plain.waited_clock);
  rule.settle_window_s = 0.1;
  rule.settle_tol = 0.01;
  tb_stop_run_stream(&rule, s, n, 1980, 0, &settled);
  /* ... but the clock settles only after the ramp: the windows agree within 1 % from about
   * 0.6 s + 0.1 s on */
  CHECK(settled.reason == TB_STOP_CONVERGED && settled.waited_clock);
  CHECK(settled.consumed > 600 && settled.consumed < 900);
  CHECK(s[settled.consumed - 1].ms > 0.99); /* it stopped in the settled state */

  /* the same stream not under a cap stops as before */
  for (size_t i = 0; i < n; i++) s[i].capped = 0;
  tb_stop_run_stream(&rule, s, n, 1980, 0, &settled);
  CHECK(settled.consumed == 50 && !settled.waited_clock);

  /* a cap with a clock that never settles: the timeout still stops it */
  for (size_t i = 0; i < n; i++) {
    s[i].capped = 1;
    s[i].clock_mhz = 1000 + (double)(i % 1000);
  }
  rule.timeout_s = 2e-3 * 1.1;
  rule.min_time_s = 0;
  tb_stop_run_stream(&rule, s, n, 1980, 0, &settled);
  CHECK(settled.reason == TB_STOP_TIMEOUT);
  /* and the fixed rule keeps exactly `repeat` whatever the clock */
  tb_stop_rule fixed = {.adaptive = 0, .repeat = 30, .settle_window_s = 0.1, .settle_tol = 0.01};
  tb_stop_run_stream(&fixed, s, n, 1980, 0, &settled);
  CHECK(settled.reason == TB_STOP_REPEAT && settled.consumed == 30);
  free(s);
}

int main(void) {
  test_summary();
  test_clock_settle();
  test_constant_stream_stops_at_min_time();
  test_noisy_stream_runs_to_timeout();
  test_noise_plateau_stops_noisy_stream();
  test_rising_noise_is_no_plateau();
  test_mild_noise_converges();
  test_throttled_samples_dropped();
  test_sustained_clock();
  test_split_samples();
  test_clip_overlaps();
  test_fixed_rule();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_stats: all checks passed\n");
  return 0;
}
