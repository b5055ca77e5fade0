/* clock_probe.c: the SM clock probe (clock_probe.cu): one block per SM counts its cycles over a
 * globaltimer window; the median over SMs of cycles per ns is the clock. Probes sit around groups
 * of samples so throttled samples can be dropped. Also the per-batch arrays, shared by every
 * measurement of the process (about 17 MB of probe readings for 132 SMs, mapped lazily). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/internal.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static size_t sm_count(const measure *m) { return (size_t)(m->props->sm_count > 0 ? m->props->sm_count : 1); }

static gpu_status alloc_batch(measure *m) {
  measure_cache *W = m->R;
  size_t n = MEASURE_BATCH_MAX + 1, sms = sm_count(m);
  if (W->kernel_ns != NULL && W->sms >= sms) return GPU_OK;
  free(W->kernel_ns); free(W->probe_mhz); free(W->probe_ns); free(W->busy_tmp);
  free(W->kernel_count); free(W->incomplete); free(W->ev); free(W->probe_host);
  W->kernel_ns = calloc(2 * n, sizeof(double)); /* timestamps: the runs' ids, then the evictions' */
  W->probe_mhz = calloc(n, sizeof(double));
  W->probe_ns = calloc(n, sizeof(double));
  W->busy_tmp = calloc(n, sizeof(double));
  W->kernel_count = calloc(2 * n, sizeof(int));
  W->incomplete = calloc(2 * n, sizeof(int));
  W->ev = calloc(3 * n, sizeof(int));
  W->probe_host = calloc(n * sms * 2, sizeof(unsigned long long));
  W->sms = sms;
  if (!W->kernel_ns || !W->probe_mhz || !W->probe_ns || !W->busy_tmp || !W->kernel_count || !W->incomplete || !W->ev ||
      !W->probe_host) {
    free(W->kernel_ns); /* the next call retries */
    W->kernel_ns = NULL;
    return measure_fail(m, gpu_set_error(GPU_ERR_OOM, "out of host memory"), "tb.timer.measure");
  }
  return GPU_OK;
}

gpu_status probe_setup(measure *m) {
  measure_cache *R = m->R;
  gpu_status st = evict_ensure_buffer(m, &R->probe, &R->probe_cap,
                                      (MEASURE_BATCH_MAX + 1) * sm_count(m) * 2 * sizeof(unsigned long long));
  if (st != GPU_OK) { /* as tb_check_gpu raised it: the backend's message alone */
    snprintf(m->r->message, sizeof m->r->message, "%s", gpu_last_error());
    snprintf(m->r->error_api, sizeof m->r->error_api, "%s", gpu_last_error_api());
    return st;
  }
  return alloc_batch(m);
}

gpu_status probe_launch(measure *m, size_t slot) {
  gpu_ptr out = m->R->probe + slot * (size_t)m->props->sm_count * 2 * sizeof(unsigned long long);
  unsigned window = m->probe_window;
  void *args[] = {&out, &window};
  unsigned grid[3] = {(unsigned)m->props->sm_count, 1, 1}, block[3] = {32, 1, 1};
  return m->gpu->launch(m->probe_fn, grid, block, 0, m->s, args);
}

/* Median over SMs of one probe's cycles per nanosecond, in MHz (0 when unusable). */
double probe_clock(const measure *m, size_t slot, double *window_ns) {
  size_t sms = (size_t)m->props->sm_count;
  const unsigned long long *p = m->R->probe_host + slot * sms * 2;
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

gpu_status probe_read_batch(measure *m, size_t n) {
  measure_cache *R = m->R;
  size_t sms = (size_t)m->props->sm_count, k = m->probe_stride ? m->probe_stride : 1;
  size_t slots = (n + k - 1) / k + 1;
  TRY(m, m->gpu->copy_dtoh(R->probe_host, R->probe, slots * sms * 2 * sizeof(unsigned long long)),
      "reading the clock probes");
  for (size_t j = 0; j < slots; j++) {
    R->probe_mhz[j] = probe_clock(m, j, &R->probe_ns[j]);
    m->r->probe_s += R->probe_ns[j] * 1e-9;
  }
  m->r->probes += slots;
  return GPU_OK;
}

gpu_status measure_clock_probe(const measure_env *env, unsigned window_ns, measure_probe_result *out,
                               measure_result *err) {
  memset(err, 0, sizeof *err);
  measure m_ = {0}, *m = &m_;
  m->env = env, m->gpu = env->gpu, m->props = env->props, m->R = env->cache, m->r = err, m->s = env->stream;
  m->probe_window = window_ns;
  m->probe_fn = env->kernels.clock_probe;
  size_t sms = sm_count(m);
  gpu_status st = m->probe_fn ? probe_setup(m)
                              : measure_fail(m, gpu_set_error(GPU_ERR_INVALID, "no probe kernel given"), "clock probe");
  if (st == GPU_OK) st = probe_launch(m, 0);
  if (st == GPU_OK) st = m->gpu->stream_wait_timeout(m->s, 10e3);
  if (st == GPU_OK)
    st = m->gpu->copy_dtoh(m->R->probe_host, m->R->probe, sms * 2 * sizeof(unsigned long long));
  if (st != GPU_OK) {
    if (err->message[0] == '\0') measure_fail(m, st, "clock probe");
    return st;
  }
  double lo = INFINITY, hi = 0;
  out->mhz = probe_clock(m, 0, &out->window_ns);
  for (size_t i = 0; i < sms; i++) {
    const unsigned long long *p = m->R->probe_host;
    if (p[2 * i + 1] == 0) continue;
    double v = (double)p[2 * i] * 1e3 / (double)p[2 * i + 1];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  out->min_mhz = isfinite(lo) ? lo : 0;
  out->max_mhz = hi;
  out->sms = sms;
  return GPU_OK;
}
