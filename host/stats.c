/* stats.c: summaries of timing samples (median, quantiles, noise) and the stopping rules of
 * tb.timer (fixed repeat count, or nvbench's relative-stdev rule with a GPU-time floor). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double tb_quantile_sorted(const double *sorted, size_t n, double q) {
  if (n == 1 || q <= 0) return sorted[0];
  if (q >= 1) return sorted[n - 1];
  double h = q * (double)(n - 1);
  size_t lo = (size_t)floor(h);
  if (lo >= n - 1) return sorted[n - 1];
  double frac = h - (double)lo;
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double tb_stdev(const double *x, size_t n) {
  if (n < 2) return 0;
  double mean = 0, m2 = 0;
  for (size_t i = 0; i < n; i++) { /* Welford: stable for samples that barely differ */
    double d = x[i] - mean;
    mean += d / (double)(i + 1);
    m2 += d * (x[i] - mean);
  }
  return sqrt(m2 / (double)(n - 1));
}

int tb_summarize(const double *x, size_t n, tb_summary *out) {
  memset(out, 0, sizeof *out);
  if (n == 0) return -1;
  double *s = malloc(n * sizeof *s);
  if (s == NULL) return -1;
  memcpy(s, x, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += s[i];
  out->n = n;
  out->min = s[0];
  out->max = s[n - 1];
  out->mean = sum / (double)n;
  out->median = tb_quantile_sorted(s, n, 0.5);
  out->q1 = tb_quantile_sorted(s, n, 0.25);
  out->q3 = tb_quantile_sorted(s, n, 0.75);
  size_t cut = n / 20;
  double tsum = 0;
  for (size_t i = cut; i < n - cut; i++) tsum += s[i];
  out->trim_mean = tsum / (double)(n - 2 * cut);
  out->stdev = tb_stdev(x, n);
  out->noise = out->mean != 0 ? out->stdev / out->mean : 0;
  free(s);
  return 0;
}

void tb_running_add(tb_running *r, double x, double gpu_time_s) {
  r->n++;
  double d = x - r->mean;
  r->mean += d / (double)r->n;
  r->m2 += d * (x - r->mean);
  r->gpu_time_s += gpu_time_s;
  if (r->n >= 2) {
    r->noise_hist[r->hist_pos] = tb_running_noise(r);
    r->hist_pos = (r->hist_pos + 1) % TB_NOISE_WINDOW;
    if (r->hist_n < TB_NOISE_WINDOW) r->hist_n++;
  }
}

double tb_noise_trend(const tb_running *r) {
  if (r->hist_n < TB_NOISE_WINDOW) return INFINITY;
  /* Chronological order starts at hist_pos (the oldest entry of a full ring). */
  double sx = 0, sy = 0, sxx = 0, sxy = 0, k = TB_NOISE_WINDOW;
  for (size_t i = 0; i < TB_NOISE_WINDOW; i++) {
    double y = r->noise_hist[(r->hist_pos + i) % TB_NOISE_WINDOW], x = (double)i;
    sx += x; sy += y; sxx += x * x; sxy += x * y;
  }
  double mean = sy / k, denom = k * sxx - sx * sx;
  if (!(mean > 0) || denom == 0) return INFINITY;
  double slope = (k * sxy - sx * sy) / denom;
  return fabs(slope) * k / mean;
}

double tb_running_noise(const tb_running *r) {
  if (r->n < 2 || r->mean == 0) return INFINITY;
  return sqrt(r->m2 / (double)(r->n - 1)) / fabs(r->mean);
}

const char *tb_stop_reason_name(tb_stop_reason r) {
  static const char *const names[] = {"continue", "repeat", "converged", "timeout", "max_samples",
                                      "noise_plateau", "exposure"};
  return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "unknown";
}

tb_stop_reason tb_stop_decide(const tb_stop_rule *rule, const tb_running *r, double wall_s) {
  if (!rule->adaptive) {
    if (r->n >= rule->repeat) return TB_STOP_REPEAT;
  } else {
    size_t min_n = rule->min_samples > 2 ? rule->min_samples : 2;
    if (r->n >= min_n && r->gpu_time_s >= rule->min_time_s &&
        tb_running_noise(r) < rule->max_noise)
      return TB_STOP_CONVERGED;
    if (r->n >= min_n && r->gpu_time_s >= rule->min_time_s && rule->plateau_tol > 0 &&
        tb_noise_trend(r) < rule->plateau_tol)
      return TB_STOP_PLATEAU;
    if (rule->max_samples > 0 && r->n >= rule->max_samples) return TB_STOP_MAX_SAMPLES;
  }
  if (rule->timeout_s > 0 && wall_s >= rule->timeout_s) return TB_STOP_TIMEOUT;
  return TB_STOP_CONTINUE;
}

/* The mean known clock of the samples walking back from *end until window_s of GPU time is
 * covered; *end becomes the first sample not taken. 0 when the samples run out first (-1 when the
 * window holds no known clock). */
static int window_mean(const double *clk, const double *busy_s, size_t *end, double window_s, double *mean) {
  double t = 0, sum = 0;
  size_t k = 0, i = *end;
  while (i > 0 && t < window_s) {
    i--;
    t += busy_s[i];
    if (clk[i] > 0) sum += clk[i], k++;
  }
  *end = i;
  if (t < window_s) return 0;
  if (k == 0) return -1;
  *mean = sum / (double)k;
  return 1;
}

int tb_clock_settled(const double *clk, const double *busy_s, size_t n, double window_s, double tol) {
  if (!(window_s > 0)) return 1;
  size_t end = n;
  double later = 0, earlier = 0;
  int a = window_mean(clk, busy_s, &end, window_s, &later);
  if (a == 0) return 0;
  int b = window_mean(clk, busy_s, &end, window_s, &earlier);
  if (b == 0) return 0;
  if (a < 0 || b < 0) return 1;
  return fabs(later - earlier) <= tol * later;
}

tb_stop_reason tb_stop_decide_clock(const tb_stop_rule *rule, const tb_running *r, double wall_s, int capped,
                                    int settled) {
  tb_stop_reason d = tb_stop_decide(rule, r, wall_s);
  if (rule->adaptive && capped && !settled && rule->settle_window_s > 0 &&
      (d == TB_STOP_CONVERGED || d == TB_STOP_PLATEAU)) {
    /* the wall clock and the sample cap still stop it */
    if (rule->max_samples > 0 && r->n >= rule->max_samples) return TB_STOP_MAX_SAMPLES;
    if (rule->timeout_s > 0 && wall_s >= rule->timeout_s) return TB_STOP_TIMEOUT;
    return TB_STOP_CONTINUE;
  }
  return d;
}

int tb_sample_throttled(double clock_mhz, double max_mhz, double threshold) {
  return clock_mhz > 0 && max_mhz > 0 && clock_mhz < threshold * max_mhz;
}

int tb_clock_sustained(size_t kept, size_t dropped, size_t min) {
  return min > 0 && dropped >= min && dropped > kept;
}

void tb_stop_run_stream(const tb_stop_rule *rule, const tb_stream_sample *s, size_t n,
                        double max_mhz, double threshold, tb_stream_result *out) {
  memset(out, 0, sizeof *out);
  double *clk = malloc((n ? n : 1) * sizeof *clk), *busy = malloc((n ? n : 1) * sizeof *busy);
  if (clk == NULL || busy == NULL) { /* no settle rule without memory: the plain decision */
    free(clk), free(busy);
    clk = busy = NULL;
  }
  for (size_t i = 0; i < n; i++) {
    if (clk) clk[i] = s[i].clock_mhz, busy[i] = s[i].gpu_time_s;
    out->consumed = i + 1;
    int under = tb_sample_throttled(s[i].clock_mhz, max_mhz, threshold);
    out->under_threshold += (size_t)under;
    tb_running_add(&out->all, s[i].ms, s[i].gpu_time_s);
    if (out->sustained || !under) {
      out->kept++;
      tb_running_add(&out->running, s[i].ms, s[i].gpu_time_s);
    } else {
      out->dropped_throttled++;
      if (tb_clock_sustained(out->kept, out->dropped_throttled, rule->sustained_min)) {
        out->sustained = 1;
        out->kept += out->dropped_throttled;
        out->dropped_throttled = 0;
        out->running = out->all;
      }
    }
    int capped = s[i].capped || out->sustained;
    int settled = clk ? tb_clock_settled(clk, busy, i + 1, rule->settle_window_s, rule->settle_tol) : 1;
    tb_stop_reason plain = tb_stop_decide(rule, &out->running, s[i].wall_s);
    out->reason = tb_stop_decide_clock(rule, &out->running, s[i].wall_s, capped, settled);
    if (out->reason != plain) out->waited_clock = 1;
    if (out->reason != TB_STOP_CONTINUE) break;
  }
  free(clk);
  free(busy);
}

double tb_clip_next(unsigned long long *covered, unsigned long long start, unsigned long long end) {
  unsigned long long from = start > *covered ? start : *covered;
  if (end > *covered) *covered = end;
  return end > from ? (double)(end - from) : 0;
}

int tb_split_samples(const int *marker, size_t m, size_t per, long *sample_of) {
  long sample = -1;
  int prev_marker = 0, ok = 1;
  for (size_t i = 0; i < m; i++) {
    if (marker[i] && !prev_marker) sample++;
    prev_marker = marker[i];
    if (sample < 0 || sample >= (long)per) ok = 0;
    sample_of[i] = sample;
  }
  return ok && sample + 1 == (long)per ? 0 : -1;
}
