/* fake_timestamps.c: the fake backend's kernel timestamps (gpu_backend.timestamps, "fake"): every
 * kernel the fake runs leaves a record [start, end) on the fake clock, tagged with the id pushed
 * around its launch, and the collects read them as cupti.c reads CUPTI's (union of intervals,
 * markers splitting graph launches into samples, records without timestamps). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_backend.h"
#include "fake_internal.h"
#include "stats.h"

typedef struct ts_rec { uint64_t id; const char *name; unsigned long long start, end; int marker; } ts_rec;

static struct {
  uint64_t tags[64]; /* pushed ids */
  int n_tags;
  ts_rec *recs;
  size_t n_recs, cap_recs;
  double clipped_ns;
} T;

uint64_t fake_ts_tag(void) { return T.n_tags ? T.tags[T.n_tags - 1] : 0; }

void fake_ts_kernel(const char *name, uint64_t tag, uint64_t nth, double start_ns, double end_ns) {
  if (!fake.timestamps_started) return;
  T.recs = fake_grow(T.recs, &T.cap_recs, T.n_recs + 1, sizeof *T.recs);
  /* On a timeline that starts at 1 s: a complete CUPTI record never has a 0 timestamp. */
  double start = 1e9 + start_ns - fake.timestamp_skew_ns, end = 1e9 + end_ns;
  if (nth == fake.timestamps_incomplete_at) start = 0;
  T.recs[T.n_recs++] = (ts_rec){fake.timestamps_untagged ? 0 : tag, name, (unsigned long long)start,
                                (unsigned long long)end,
                                fake.marker[0] && strncmp(name, fake.marker, strlen(fake.marker)) == 0};
}

void fake_ts_reset(void) {
  free(T.recs);
  memset(&T, 0, sizeof T);
}


static gpu_status t_start(void) {
  if (fake.timestamps_absent) return gpu_set_error(GPU_ERR_NO_LIBRARY, "libfakecupti.so: not found (fake.timestamps_absent)");
  fake.timestamps_started = 1;
  return GPU_OK;
}
static const char *t_library_path(void) { return fake.timestamps_started ? "(fake)" : ""; }
static gpu_status t_push(uint64_t id) {
  if (T.n_tags == 64) return gpu_set_error(GPU_ERR_INVALID, "fakePush: too deep");
  T.tags[T.n_tags++] = id;
  fake_log_op(FAKE_OP_PUSH, NULL)->tag = id;
  return GPU_OK;
}
static gpu_status t_pop(void) {
  if (T.n_tags == 0) return gpu_set_error(GPU_ERR_INVALID, "fakePop: nothing pushed");
  fake_log_op(FAKE_OP_POP, NULL);
  T.n_tags--;
  return GPU_OK;
}
static gpu_status t_trace_all_api(void) {
  fake.trace_all_api = 1;
  return GPU_OK;
}
static gpu_status t_flush(void) {
  fake.timestamp_flushes++;
  return GPU_OK;
}
static gpu_status t_flush_until(uint64_t last_id) { return t_flush(); }
static void t_flush_counts(unsigned long *plain, unsigned long *forced) {
  *plain = (unsigned long)fake.timestamp_flushes;
  *forced = 0;
}
static void t_set_marker(const char *prefix) { snprintf(fake.marker, sizeof fake.marker, "%s", prefix ? prefix : ""); }
static void t_discard(void) { T.n_recs = 0; }
static double t_clipped_ns(void) { return T.clipped_ns; }

static int cmp_rec(const void *a, const void *b) {
  const ts_rec *x = a, *y = b;
  if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
  return (x->start > y->start) - (x->start < y->start);
}

static gpu_status t_collect(uint64_t first_id, size_t n, double *kernel_ns, int *kernels, int *incomplete) {
  for (size_t i = 0; i < n; i++) kernel_ns[i] = 0, kernels[i] = 0, incomplete[i] = 0;
  qsort(T.recs, T.n_recs, sizeof *T.recs, cmp_rec);
  unsigned long long covered = 0;
  for (size_t i = 0; i < T.n_recs; i++) {
    const ts_rec *r = &T.recs[i];
    if (r->id < first_id || r->id - first_id >= n) continue;
    if (i == 0 || r->id != T.recs[i - 1].id) covered = 0;
    size_t s = (size_t)(r->id - first_id);
    if (r->start == 0) { /* no timestamps: counted apart, as cupti.c does */
      incomplete[s]++;
      continue;
    }
    double part = tb_clip_next(&covered, r->start, r->end);
    T.clipped_ns += (double)(r->end - r->start) - part;
    kernel_ns[s] += part;
    kernels[s]++;
  }
  T.n_recs = 0;
  return GPU_OK;
}

static gpu_status t_collect_groups(uint64_t first_id, size_t groups, size_t per, double *kernel_ns, int *kernels,
                                   int *incomplete) {
  size_t total = groups * per;
  for (size_t i = 0; i < 2 * total; i++) kernel_ns[i] = 0, kernels[i] = 0, incomplete[i] = 0;
  qsort(T.recs, T.n_recs, sizeof *T.recs, cmp_rec);
  int *marks = malloc((T.n_recs ? T.n_recs : 1) * sizeof *marks);
  long *sample_of = malloc((T.n_recs ? T.n_recs : 1) * sizeof *sample_of);
  if (marks == NULL || sample_of == NULL) abort();
  for (size_t i = 0; i < T.n_recs;) {
    uint64_t id = T.recs[i].id;
    size_t j = i;
    int broken = 0; /* a record without timestamps spoils its whole launch, as in cupti.c */
    while (j < T.n_recs && T.recs[j].id == id) {
      marks[j - i] = T.recs[j].marker;
      broken |= T.recs[j].start == 0;
      j++;
    }
    if (id >= first_id && id - first_id < groups) {
      size_t g = (size_t)(id - first_id);
      if (broken || tb_split_samples(marks, j - i, per, sample_of) != 0) {
        for (size_t s = 0; s < per; s++) incomplete[g * per + s] = 1;
      } else {
        unsigned long long covered = 0;
        for (size_t r = i; r < j; r++) {
          size_t at = g * per + (size_t)sample_of[r - i] + (T.recs[r].marker ? total : 0);
          double part = tb_clip_next(&covered, T.recs[r].start, T.recs[r].end);
          T.clipped_ns += (double)(T.recs[r].end - T.recs[r].start) - part;
          kernel_ns[at] += part;
          kernels[at]++;
        }
      }
    }
    i = j;
  }
  free(marks);
  free(sample_of);
  T.n_recs = 0;
  return GPU_OK;
}

const gpu_timestamps fake_timestamps_table = {
  .name = "fake",
  .start = t_start,
  .library_path = t_library_path,
  .push = t_push,
  .pop = t_pop,
  .trace_all_api = t_trace_all_api,
  .flush = t_flush,
  .flush_until = t_flush_until,
  .flush_counts = t_flush_counts,
  .collect = t_collect,
  .set_marker = t_set_marker,
  .collect_groups = t_collect_groups,
  .discard = t_discard,
  .clipped_ns = t_clipped_ns,
};
