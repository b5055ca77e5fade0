/* power.c: the device's power and clock state around a measurement, read from the backend's power
 * source (gpu_backend.power: NVML on CUDA, nvml.c) by the host while the GPU works: at the start of
 * each batch (right after it is enqueued), every 5 ms while the host waits for it, and at its end.
 * A kept sample counts as capped by the share of its batch's readings that show a power or thermal
 * cap (GPU_CAP_ANY); the result's cap_fraction is the mean over the kept samples. Every reading
 * also extends or ends the device's heavy streak (preload_scope = "device"). The cool-down
 * (conditions = "cooldown", reading = "cold") waits, bounded by cooldown_max, until the readings
 * say the device is idle again. A source that is absent or fails is dropped with its reason in
 * power_reason: the measurement goes on without readings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "measure/internal.h"

/* The device's heavy streak (preload_scope = "device"), per device index, process-wide: the
 * wall time of the first and of the last reading of an unbroken run of heavy readings (capped, or
 * a level of heavy_power of the limit). A reading that is not heavy, or a heavy one more than
 * heavy_gap_s after the last, starts it again: between measurements the host verifies, builds and
 * compiles, and nothing says the GPU stayed busy. Measurements of one process run one at a time. */
#define STREAK_DEVICES 64
static struct {
  double since, last; /* 0: no streak */
} streaks[STREAK_DEVICES];

static int reading_heavy(const measure *m, const gpu_power_reading *rd) {
  double level = rd->power_now_w > 0 ? rd->power_now_w : rd->power_w;
  return (rd->reasons & GPU_CAP_ANY) || (m->limit_w > 0 && level >= m->o.heavy_power * m->limit_w);
}

static void streak_note(const measure *m, const gpu_power_reading *rd, double now) {
  int dev = m->props->index;
  if (dev < 0 || dev >= STREAK_DEVICES) return;
  if (!reading_heavy(m, rd)) {
    streaks[dev].since = streaks[dev].last = 0;
    return;
  }
  if (streaks[dev].last <= 0 || now - streaks[dev].last > m->o.heavy_gap_s) streaks[dev].since = now;
  streaks[dev].last = now;
}

double power_heavy_streak(const measure *m) {
  int dev = m->props->index;
  if (m->pw == NULL || dev < 0 || dev >= STREAK_DEVICES || streaks[dev].last <= 0 ||
      measure_wall_now() - streaks[dev].last > m->o.heavy_gap_s)
    return 0;
  return streaks[dev].last - streaks[dev].since;
}

static const struct {
  unsigned bit;
  const char *name;
} cap_names[] = {
  {GPU_CAP_SW_POWER, "sw_power_cap"},   {GPU_CAP_HW_SLOWDOWN, "hw_slowdown"},
  {GPU_CAP_SW_THERMAL, "sw_thermal"},   {GPU_CAP_HW_THERMAL, "hw_thermal"},
  {GPU_CAP_HW_POWER_BRAKE, "hw_power_brake"},
};

const char *measure_cap_names(unsigned bits, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++) {
    if (!(bits & cap_names[i].bit) || at >= len) continue;
    int w = snprintf(buf + at, len - at, "%s%s", at ? "," : "", cap_names[i].name);
    if (w > 0) at += (size_t)w;
  }
  return buf;
}

static void drop_source(measure *m, const char *why) {
  snprintf(m->r->power_reason, sizeof m->r->power_reason, "%.500s", why);
  m->pw = NULL;
}

void power_setup(measure *m) {
  m->pw = NULL;
  m->batch_level = m->prev_level = m->batch_now_max = m->now_max = -1;
  const gpu_power *pw = m->gpu->power;
  if (pw == NULL) {
    snprintf(m->r->power_reason, sizeof m->r->power_reason, "the %s backend has no power source", m->gpu->name);
    return;
  }
  char saved[2048], api[64]; /* the measurement's own last error is not ours to replace */
  snprintf(saved, sizeof saved, "%s", gpu_last_error());
  snprintf(api, sizeof api, "%s", gpu_last_error_api());
  if (pw->open(m->props) == GPU_OK) {
    m->pw = pw;
    double w = 0; /* the limit is optional: without it, only a cap makes a load heavy */
    if (pw->limit_w != NULL && pw->limit_w(&w) == GPU_OK && w > 0) m->limit_w = w;
  } else {
    drop_source(m, gpu_last_error());
  }
  gpu_set_api_error(GPU_OK, api, "%s", saved);
}

/* One reading; a failing read drops the source (its reason kept). Returns 1 with *out filled. */
static int read_one(measure *m, gpu_power_reading *out) {
  if (m->pw == NULL) return 0;
  if (m->pw->read(out) != GPU_OK) {
    char why[600];
    snprintf(why, sizeof why, "reading stopped: %s", gpu_last_error());
    drop_source(m, why);
    return 0;
  }
  m->last_read = measure_wall_now();
  streak_note(m, out, m->last_read);
  return 1;
}

static void take(measure *m) {
  gpu_power_reading rd;
  if (!read_one(m, &rd)) return;
  m->batch_reads++;
  if (rd.reasons & GPU_CAP_ANY) m->batch_capped++;
  if (rd.power_w > m->batch_power_max) m->batch_power_max = rd.power_w;
  if (rd.power_now_w > 0 && rd.power_now_w > m->batch_now_max) m->batch_now_max = rd.power_now_w;
  double level = rd.power_now_w > 0 ? rd.power_now_w : rd.power_w;
  if (level > m->batch_level) m->batch_level = level;
  m->r->cap_reasons |= rd.reasons & GPU_CAP_ANY;
  if (m->n_pw == m->cap_pw) {
    size_t cap = m->cap_pw ? 2 * m->cap_pw : 64;
    double *a = realloc(m->pw_w, cap * sizeof *a);
    if (a) m->pw_w = a;
    double *b = a ? realloc(m->pw_mhz, cap * sizeof *b) : NULL;
    if (b) m->pw_mhz = b;
    if (b == NULL) return; /* no room: the reading still counted toward the batch's cap share */
    m->cap_pw = cap;
  }
  m->pw_w[m->n_pw] = rd.power_w;
  m->pw_mhz[m->n_pw] = rd.sm_clock_mhz;
  m->n_pw++;
}

void power_batch_begin(measure *m) {
  m->batch_reads = m->batch_capped = 0;
  m->prev_level = m->batch_level;
  m->batch_power_max = m->batch_level = m->batch_now_max = -1;
  take(m);
}

void power_poll(measure *m) {
  if (m->pw && measure_wall_now() - m->last_read >= MEASURE_POLL_S) take(m);
}

void power_batch_end(measure *m, int keep) {
  take(m);
  m->batch_cap = m->batch_reads ? (double)m->batch_capped / (double)m->batch_reads : 0;
  if (keep && m->batch_now_max > m->now_max) m->now_max = m->batch_now_max;
  if (!keep) m->n_pw = m->n_pw >= m->batch_reads ? m->n_pw - m->batch_reads : 0; /* warm-up: not reported */
}

int power_heavy(const measure *m) {
  return m->limit_w > 0 && m->batch_level >= m->o.heavy_power * m->limit_w;
}

/* The heavy probe. Readings come every 5 ms and at batch ends, and a GEMM from a cool GPU may
 * converge in its first 50-100 ms: without it, such a load stopped before its power was seen
 * (H200, session 12). It holds only a load whose last batch read at least half the heavy level
 * and more (by 2 % of the limit) than the batch before, so a light load, or one whose power is
 * flat below the heavy level, is not delayed; heavy_probe_s of GPU time bounds it. */
int power_probe_hold(const measure *m) {
  if (m->heavy || m->pw == NULL || !(m->limit_w > 0) || m->o.capped_exposure <= 0 || m->o.heavy_probe_s <= 0 ||
      m->o.reading == 1 || !measure_modes[m->o.mode].adaptive || m->exposed >= m->o.heavy_probe_s * (1 - 1e-9))
    return 0;
  double heavy_w = m->o.heavy_power * m->limit_w;
  return m->batch_level >= 0.5 * heavy_w && m->batch_level > m->prev_level + 0.02 * m->limit_w;
}

int measure_power_idle(const gpu_power_reading *rd, size_t n, double floor_w) {
  if (n == 0) return 0;
  const gpu_power_reading *last = &rd[n - 1];
  if (last->reasons & GPU_CAP_ANY) return 0;
  size_t back = (size_t)(0.5 / MEASURE_COOL_STEP_S + 0.5); /* 0.5 s of readings */
  if (!(last->power_w >= 0)) return n > back;
  if (floor_w > 0 && last->power_w <= floor_w * 1.05 + 5) return 1;
  if (n > back && rd[n - 1 - back].power_w >= 0 && rd[n - 1 - back].power_w - last->power_w <= 0.02 * last->power_w)
    return 1;
  return 0;
}

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  nanosleep(&ts, NULL);
}

void power_cooldown(measure *m) {
  double t0 = measure_wall_now(), max = m->o.cooldown_max;
  m->r->cooldowns++;
  if (m->pw == NULL) { /* nothing to read: a fixed pause, said in power_reason */
    nap(max < 1.0 ? max : 1.0);
    m->r->cooldown_s += measure_wall_now() - t0;
    return;
  }
  size_t cap = (size_t)(max / MEASURE_COOL_STEP_S) + 2, n = 0;
  gpu_power_reading *rd = malloc(cap * sizeof *rd);
  int idle = 0;
  while (rd && n < cap) {
    if (!read_one(m, &rd[n])) break;
    n++;
    if ((idle = measure_power_idle(rd, n, m->R->idle_floor_w))) {
      /* the floor the next cool-downs may stop at: the lowest power an ended cool-down read */
      double p = rd[n - 1].power_w;
      if (p >= 0 && (m->R->idle_floor_w == 0 || p < m->R->idle_floor_w)) m->R->idle_floor_w = p;
      break;
    }
    if (measure_wall_now() - t0 + MEASURE_COOL_STEP_S > max) break;
    nap(MEASURE_COOL_STEP_S);
  }
  free(rd);
  if (!idle) m->r->cooldowns_bounded++;
  m->r->cooldown_s += measure_wall_now() - t0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of the known (>= 0) values; 0 when none. Sorts x in place. */
static double known_median(double *x, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (x[i] >= 0) x[k++] = x[i];
  if (k == 0) return 0;
  qsort(x, k, sizeof *x, cmp);
  return k % 2 ? x[k / 2] : 0.5 * (x[k / 2 - 1] + x[k / 2]);
}

void power_finish(measure *m) {
  measure_result *r = m->r;
  r->power_read = m->n_pw > 0;
  r->power_readings = m->n_pw;
  if (!r->power_read) {
    if (r->power_reason[0] == '\0') snprintf(r->power_reason, sizeof r->power_reason, "no reading was taken");
    return;
  }
  double mx = -1;
  for (size_t i = 0; i < m->n_pw; i++) mx = m->pw_w[i] > mx ? m->pw_w[i] : mx;
  r->power_max_w = mx > 0 ? mx : 0;
  r->power_now_max_w = m->now_max > 0 ? m->now_max : 0;
  r->power_w = known_median(m->pw_w, m->n_pw);
  r->nvml_sm_clock_mhz = known_median(m->pw_mhz, m->n_pw);
  double sum = 0;
  for (size_t i = 0; i < m->n; i++) sum += m->capfrac[i];
  r->cap_fraction = m->n ? sum / (double)m->n : 0;
}

void power_free(measure *m) {
  free(m->pw_w);
  free(m->pw_mhz);
  m->pw_w = m->pw_mhz = NULL;
  m->n_pw = m->cap_pw = 0;
}
