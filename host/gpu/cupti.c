/* cupti.c: CUPTI activity records through dlopen: kernel start/end per launch, mapped to the
 * caller's external correlation ids, summed per id. Records arrive on CUPTI's thread or during a
 * flush, so the record store is guarded by a mutex. */
#include "cupti.h"

#include "stats.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

static gpu_status cupti_trace_all_api(void);

/* Record buffers: 2 MiB each (thousands of kernel records), kept in a pool and handed back
 * zeroed, so CUPTI need not zero each new buffer on the launching thread (by default it does, and
 * every forced flush retired the 8 MiB buffer in use). With the plain flush of cupti_flush_until,
 * a batch's flush went from ~2 ms to ~0.3 ms on an H200 (the two changes not measured apart). */
#define BUFFER_BYTES (2u << 20)
#define POOL_MAX 16

typedef struct kernel_rec { uint32_t corr; int marker; uint64_t start, end; } kernel_rec;
typedef struct ext_rec { uint32_t corr; uint64_t ext; } ext_rec;

static struct {
  void *lib;
  char path[512];
  int tried;
  gpu_status start_status;
  char start_error[1024];
  CUptiResult (*get_result_string)(CUptiResult, const char **);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*enable_driver_api)(CUpti_CallbackId, uint8_t);
  CUptiResult (*enable_runtime_api)(CUpti_CallbackId, uint8_t);
  CUptiResult (*get_next_record)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*get_dropped)(CUcontext, uint32_t, size_t *);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*push_ext)(CUpti_ExternalCorrelationKind, uint64_t);
  CUptiResult (*pop_ext)(CUpti_ExternalCorrelationKind, uint64_t *);
  CUptiResult (*set_attribute)(CUpti_ActivityAttribute, size_t *, void *);
  int zeroed; /* CUPTI takes our buffers as zeroed (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) */
} cu;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *pool[POOL_MAX];
static size_t pool_n;
static unsigned long flushes_forced, flushes_plain;
static double clipped_ns; /* kernel time removed as overlap with the kernel before (all collects) */

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static kernel_rec *kernels;
static size_t n_kernels, cap_kernels;
static ext_rec *exts;
static size_t n_exts, cap_exts;
static size_t dropped_records;
static int store_oom;
static char marker_prefix[64];
static size_t marker_len;

static const char *result_text(CUptiResult r) {
  const char *s = NULL;
  if (cu.get_result_string == NULL || cu.get_result_string(r, &s) != CUPTI_SUCCESS || s == NULL)
    return "unknown CUPTI error";
  return s;
}

static gpu_status fail(const char *api, CUptiResult r) {
  gpu_status st = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? GPU_ERR_BUSY : GPU_ERR_OTHER;
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return gpu_set_error(st, "%s: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (%s): another "
                         "profiler (ncu, nsys) holds CUPTI", api, result_text(r));
  return gpu_set_error(st, "%s: CUPTI error %d (%s)", api, (int)r, result_text(r));
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&pool_lock);
  if (pool_n > 0) b = pool[--pool_n];
  pthread_mutex_unlock(&pool_lock);
  if (b == NULL) b = calloc(1, BUFFER_BYTES); /* zero pages, touched only as records land */
  *buffer = b;
  *size = b ? BUFFER_BYTES : 0;
  *max_records = 0;
}

/* Back to the pool, zeroed where records were written (CUPTI writes them from the start). */
static void buffer_release(uint8_t *buffer, size_t valid) {
  if (cu.zeroed) memset(buffer, 0, valid < BUFFER_BYTES ? valid : BUFFER_BYTES);
  pthread_mutex_lock(&pool_lock);
  if (pool_n < POOL_MAX) {
    pool[pool_n++] = buffer;
    buffer = NULL;
  }
  pthread_mutex_unlock(&pool_lock);
  free(buffer);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap * 2 : 4096;
  while (n < need) n *= 2;
  void *p = realloc(*arr, n * elem);
  if (p == NULL) return -1;
  *arr = p;
  *cap = n;
  return 0;
}

static void keep_record(const CUpti_Activity *rec) {
  /* The fields read here sit at the same offsets in every kernel record version CUPTI has had
   * (CUpti_ActivityKernel4 .. 10), so reading through the oldest layout is safe. */
  if (rec->kind == CUPTI_ACTIVITY_KIND_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    /* name too (offset 104 in Kernel4 and Kernel10 alike); valid only while the buffer is read */
    const CUpti_ActivityKernel4 *k = (const CUpti_ActivityKernel4 *)rec;
    if (grow((void **)&kernels, &cap_kernels, n_kernels + 1, sizeof *kernels)) { store_oom = 1; return; }
    int marker = marker_len > 0 && k->name && strncmp(k->name, marker_prefix, marker_len) == 0;
    kernels[n_kernels++] = (kernel_rec){k->correlationId, marker, k->start, k->end};
  } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
    const CUpti_ActivityExternalCorrelation *e = (const CUpti_ActivityExternalCorrelation *)rec;
    if (e->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) return;
    if (grow((void **)&exts, &cap_exts, n_exts + 1, sizeof *exts)) { store_oom = 1; return; }
    exts[n_exts++] = (ext_rec){e->correlationId, e->externalId};
  }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)ctx; (void)stream; (void)size;
  pthread_mutex_lock(&store_lock);
  CUpti_Activity *rec = NULL;
  while (valid > 0 && cu.get_next_record(buffer, valid, &rec) == CUPTI_SUCCESS) keep_record(rec);
  size_t dropped = 0;
  if (cu.get_dropped && cu.get_dropped(NULL, 0, &dropped) == CUPTI_SUCCESS) dropped_records += dropped;
  pthread_mutex_unlock(&store_lock);
  buffer_release(buffer, valid);
}

static void *open_library(void) {
  const char *env = getenv("TILEBENCH_CUPTI_LIB");
  if (env && *env) {
    void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      const char *why = dlerror();
      gpu_set_error(GPU_ERR_NO_LIBRARY, "CUPTI library not found (TILEBENCH_CUPTI_LIB=%s: %s)", env,
                    why ? why : "cannot open");
      return NULL;
    }
    snprintf(cu.path, sizeof cu.path, "%s", env);
    return h;
  }
  static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so", NULL};
  void *h = gpu_dlopen_first(names, cu.path, sizeof cu.path);
  if (h) return h;
  char searched[4096];
  snprintf(searched, sizeof searched, "%s", gpu_last_error());
  /* The toolkit keeps CUPTI apart from its other libraries on some installs. */
  static const char *const extras[] = {"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                                       "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", NULL};
  for (int i = 0; extras[i]; i++) {
    h = dlopen(extras[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      snprintf(cu.path, sizeof cu.path, "%s", extras[i]);
      return h;
    }
  }
  gpu_set_error(GPU_ERR_NO_LIBRARY, "CUPTI library not found: %s; and /usr/local/cuda/extras/CUPTI/lib64",
                searched);
  return NULL;
}

#define LOAD(field, sym, required)                                                            \
  do {                                                                                       \
    *(void **)(&cu.field) = dlsym(cu.lib, sym);                                               \
    if ((required) && cu.field == NULL)                                                      \
      return gpu_set_error(GPU_ERR_NO_LIBRARY, "CUPTI library %s lacks %s", cu.path, sym);  \
  } while (0)

static gpu_status start_once(void) {
  cu.lib = open_library();
  if (cu.lib == NULL) return GPU_ERR_NO_LIBRARY;
  LOAD(get_result_string, "cuptiGetResultString", 0);
  LOAD(register_callbacks, "cuptiActivityRegisterCallbacks", 1);
  LOAD(enable, "cuptiActivityEnable", 1);
  LOAD(enable_driver_api, "cuptiActivityEnableDriverApi", 0);
  LOAD(enable_runtime_api, "cuptiActivityEnableRuntimeApi", 0);
  LOAD(get_next_record, "cuptiActivityGetNextRecord", 1);
  LOAD(get_dropped, "cuptiActivityGetNumDroppedRecords", 0);
  LOAD(flush_all, "cuptiActivityFlushAll", 1);
  LOAD(push_ext, "cuptiActivityPushExternalCorrelationId", 1);
  LOAD(pop_ext, "cuptiActivityPopExternalCorrelationId", 1);
  LOAD(set_attribute, "cuptiActivitySetAttribute", 0);

  /* Our buffers come zeroed: CUPTI then skips zeroing each one itself. Without the attribute
   * (older CUPTI) CUPTI zeroes them and we need not. */
  if (cu.set_attribute) {
    uint8_t one = 1;
    size_t sz = sizeof one;
    cu.zeroed = cu.set_attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz, &one) == CUPTI_SUCCESS;
  }
  CUptiResult r = cu.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks", r);
  if ((r = cu.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
    return fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
  if ((r = cu.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) != CUPTI_SUCCESS)
    return fail("cuptiActivityEnable(EXTERNAL_CORRELATION)", r);

  /* External correlation records come with API records, so the launch APIs must be traced.
   * Only those: tracing every call would also log each stream query of a waiting host. */
  if (cu.enable_driver_api == NULL || cu.enable_runtime_api == NULL) return cupti_trace_all_api();
  static const CUpti_CallbackId driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
  static const CUpti_CallbackId runtime_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060};
  for (size_t i = 0; i < sizeof driver_launches / sizeof driver_launches[0]; i++)
    if ((r = cu.enable_driver_api(driver_launches[i], 1)) != CUPTI_SUCCESS)
      return fail("cuptiActivityEnableDriverApi", r);
  for (size_t i = 0; i < sizeof runtime_launches / sizeof runtime_launches[0]; i++)
    if ((r = cu.enable_runtime_api(runtime_launches[i], 1)) != CUPTI_SUCCESS)
      return fail("cuptiActivityEnableRuntimeApi", r);
  return GPU_OK;
}

static gpu_status cupti_start(void) {
  if (!cu.tried) {
    cu.tried = 1;
    cu.start_status = start_once();
    if (cu.start_status != GPU_OK) {
      snprintf(cu.start_error, sizeof cu.start_error, "%s", gpu_last_error());
      cu.path[0] = '\0';
    }
  }
  if (cu.start_status != GPU_OK) return gpu_set_error(cu.start_status, "%s", cu.start_error);
  return GPU_OK;
}

static const char *cupti_library_path(void) { return cu.path; }

static gpu_status cupti_trace_all_api(void) {
  CUptiResult r;
  if ((r = cu.enable(CUPTI_ACTIVITY_KIND_DRIVER)) != CUPTI_SUCCESS)
    return fail("cuptiActivityEnable(DRIVER)", r);
  if ((r = cu.enable(CUPTI_ACTIVITY_KIND_RUNTIME)) != CUPTI_SUCCESS)
    return fail("cuptiActivityEnable(RUNTIME)", r);
  return GPU_OK;
}

static gpu_status cupti_push(uint64_t id) {
  CUptiResult r = cu.push_ext(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  return r == CUPTI_SUCCESS ? GPU_OK : fail("cuptiActivityPushExternalCorrelationId", r);
}

static gpu_status cupti_pop(void) {
  uint64_t last = 0;
  CUptiResult r = cu.pop_ext(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  return r == CUPTI_SUCCESS ? GPU_OK : fail("cuptiActivityPopExternalCorrelationId", r);
}

static gpu_status cupti_flush(void) {
  CUptiResult r = cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  flushes_forced++;
  return r == CUPTI_SUCCESS ? GPU_OK : fail("cuptiActivityFlushAll", r);
}

/* Whether a complete kernel record tagged with external id `id` has arrived. */
static int have_id(uint64_t id) {
  int found = 0;
  pthread_mutex_lock(&store_lock);
  for (size_t i = n_exts; !found && i-- > 0;) { /* the newest ids sit at the end */
    if (exts[i].ext != id) continue;
    for (size_t k = n_kernels; k-- > 0;)
      if (kernels[k].corr == exts[i].corr && kernels[k].start != 0 && kernels[k].end >= kernels[k].start) {
        found = 1;
        break;
      }
  }
  pthread_mutex_unlock(&store_lock);
  return found;
}

static gpu_status cupti_flush_until(uint64_t last_id) {
  /* After a synchronize every record is complete, and a plain flush delivers every buffer whose
   * records are all complete, full or not. The forced flush stays the fallback. */
  CUptiResult r = cu.flush_all(0);
  flushes_plain++;
  if (r != CUPTI_SUCCESS) return fail("cuptiActivityFlushAll", r);
  if (have_id(last_id)) return GPU_OK;
  return cupti_flush();
}

static double cupti_clipped_ns(void) { return clipped_ns; }

static void cupti_flush_counts(unsigned long *plain, unsigned long *forced) {
  *plain = flushes_plain;
  *forced = flushes_forced;
}

static int cmp_ext(const void *a, const void *b) {
  uint32_t x = ((const ext_rec *)a)->corr, y = ((const ext_rec *)b)->corr;
  return (x > y) - (x < y);
}

static void forget_locked(void) {
  n_kernels = n_exts = 0;
  dropped_records = 0;
  store_oom = 0;
}

static void cupti_discard(void) {
  pthread_mutex_lock(&store_lock);
  forget_locked();
  pthread_mutex_unlock(&store_lock);
}

/* Kernel record i's offset from first_id among n external ids, or -1 when it carries none of
 * them. exts must be sorted (cmp_ext). A runtime launch and the driver launch under it may both
 * be tagged: same correlation id, same external id, so either match is the same. */
static long ext_offset(size_t i, uint64_t first_id, size_t n) {
  ext_rec key = {kernels[i].corr, 0};
  const ext_rec *e = bsearch(&key, exts, n_exts, sizeof *exts, cmp_ext);
  if (e == NULL || e->ext < first_id || e->ext - first_id >= n) return -1;
  return (long)(e->ext - first_id);
}

typedef struct slot_rec { size_t slot; uint64_t start, end; } slot_rec;

static int cmp_slot_rec(const void *a, const void *b) {
  const slot_rec *x = a, *y = b;
  if (x->slot != y->slot) return (x->slot > y->slot) - (x->slot < y->slot);
  return (x->start > y->start) - (x->start < y->start);
}

/* Sums each slot's records (sorted by slot, then start) into kernel_ns as the union of their
 * intervals (tb_clip_next), counting them in kernel_count. */
static void sum_clipped(const slot_rec *r, size_t m, double *kernel_ns, int *kernel_count) {
  unsigned long long covered = 0;
  for (size_t i = 0; i < m; i++) {
    if (i == 0 || r[i].slot != r[i - 1].slot) covered = 0;
    double part = tb_clip_next(&covered, r[i].start, r[i].end);
    clipped_ns += (double)(r[i].end - r[i].start) - part;
    kernel_ns[r[i].slot] += part;
    kernel_count[r[i].slot]++;
  }
}

static gpu_status cupti_collect(uint64_t first_id, size_t n, double *kernel_ns, int *kernel_count,
                         int *incomplete) {
  for (size_t i = 0; i < n; i++) kernel_ns[i] = 0, kernel_count[i] = 0, incomplete[i] = 0;
  pthread_mutex_lock(&store_lock);
  gpu_status st = GPU_OK;
  slot_rec *recs = NULL;
  if (dropped_records > 0) {
    st = gpu_set_error(GPU_ERR_OTHER, "CUPTI dropped %zu activity records (buffers full)",
                       dropped_records);
  } else if (store_oom || (recs = malloc((n_kernels ? n_kernels : 1) * sizeof *recs)) == NULL) {
    st = gpu_set_error(GPU_ERR_OOM, "CUPTI records: out of host memory");
  } else {
    qsort(exts, n_exts, sizeof *exts, cmp_ext);
    size_t m = 0;
    for (size_t i = 0; i < n_kernels; i++) {
      long off = ext_offset(i, first_id, n);
      if (off < 0) continue;
      size_t s = (size_t)off;
      if (kernels[i].start == 0 || kernels[i].end < kernels[i].start) {
        incomplete[s]++;
        continue;
      }
      recs[m++] = (slot_rec){s, kernels[i].start, kernels[i].end};
    }
    qsort(recs, m, sizeof *recs, cmp_slot_rec);
    sum_clipped(recs, m, kernel_ns, kernel_count);
  }
  free(recs);
  forget_locked();
  pthread_mutex_unlock(&store_lock);
  return st;
}

static void cupti_set_marker(const char *prefix) {
  pthread_mutex_lock(&store_lock);
  snprintf(marker_prefix, sizeof marker_prefix, "%s", prefix ? prefix : "");
  marker_len = strlen(marker_prefix);
  pthread_mutex_unlock(&store_lock);
}

typedef struct group_rec { size_t group; int marker, bad; uint64_t start, end; } group_rec;

static int cmp_group_rec(const void *a, const void *b) {
  const group_rec *x = a, *y = b;
  if (x->group != y->group) return (x->group > y->group) - (x->group < y->group);
  return (x->start > y->start) - (x->start < y->start);
}

static gpu_status cupti_collect_groups(uint64_t first_id, size_t groups, size_t per, double *kernel_ns, int *kernel_count,
                                int *incomplete) {
  size_t total = groups * per;
  for (size_t i = 0; i < 2 * total; i++) kernel_ns[i] = 0, kernel_count[i] = 0, incomplete[i] = 0;
  pthread_mutex_lock(&store_lock);
  gpu_status st = GPU_OK;
  group_rec *recs = NULL;
  if (dropped_records > 0) {
    st = gpu_set_error(GPU_ERR_OTHER, "CUPTI dropped %zu activity records (buffers full)", dropped_records);
  } else if (store_oom) {
    st = gpu_set_error(GPU_ERR_OOM, "CUPTI records: out of host memory");
  } else if ((recs = malloc((n_kernels ? n_kernels : 1) * sizeof *recs)) == NULL) {
    st = gpu_set_error(GPU_ERR_OOM, "CUPTI records: out of host memory");
  } else {
    qsort(exts, n_exts, sizeof *exts, cmp_ext);
    size_t m = 0;
    for (size_t i = 0; i < n_kernels; i++) {
      long off = ext_offset(i, first_id, groups);
      if (off < 0) continue;
      int bad = kernels[i].start == 0 || kernels[i].end < kernels[i].start;
      recs[m++] = (group_rec){(size_t)off, kernels[i].marker, bad, kernels[i].start, kernels[i].end};
    }
    qsort(recs, m, sizeof *recs, cmp_group_rec);
    /* Each launch's records in start order, split into samples at the markers (stats.c). */
    int *marks = malloc((m ? m : 1) * sizeof *marks);
    long *sample_of = malloc((m ? m : 1) * sizeof *sample_of);
    if (marks == NULL || sample_of == NULL) st = gpu_set_error(GPU_ERR_OOM, "CUPTI records: out of host memory");
    for (size_t i = 0; st == GPU_OK && i < m;) {
      size_t g = recs[i].group, j = i;
      int broken = 0;
      for (; j < m && recs[j].group == g; j++) {
        marks[j - i] = recs[j].marker;
        broken |= recs[j].bad;
      }
      if (tb_split_samples(marks, j - i, per, sample_of) != 0) broken = 1;
      /* The launch's kernels as the union of their intervals: a kernel whose start CUPTI put
       * before the end of the one ahead of it keeps only its own part. */
      unsigned long long covered = 0;
      for (size_t r = i; !broken && r < j; r++) {
        size_t at = g * per + (size_t)sample_of[r - i] + (recs[r].marker ? total : 0);
        double part = tb_clip_next(&covered, recs[r].start, recs[r].end);
        clipped_ns += (double)(recs[r].end - recs[r].start) - part;
        kernel_ns[at] += part;
        kernel_count[at]++;
      }
      if (broken)
        for (size_t s2 = 0; s2 < per; s2++) incomplete[g * per + s2] = 1;
      i = j;
    }
    free(marks);
    free(sample_of);
  }
  free(recs);
  forget_locked();
  pthread_mutex_unlock(&store_lock);
  return st;
}

const gpu_timestamps gpu_cupti_timestamps = {
  .name = "cupti",
  .start = cupti_start,
  .library_path = cupti_library_path,
  .push = cupti_push,
  .pop = cupti_pop,
  .trace_all_api = cupti_trace_all_api,
  .flush = cupti_flush,
  .flush_until = cupti_flush_until,
  .flush_counts = cupti_flush_counts,
  .collect = cupti_collect,
  .set_marker = cupti_set_marker,
  .collect_groups = cupti_collect_groups,
  .discard = cupti_discard,
  .clipped_ns = cupti_clipped_ns,
};
