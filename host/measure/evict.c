/* evict.c: the last-level-cache eviction before every run: its buffers (allocated once per process
 * and filled once) and its launch, the read kernel (evict.cu; also the TLB page sweep) or a memset. */
#include <stdio.h>
#include <string.h>

#include "measure/internal.h"

/* Calibrated eviction sizes where 2 x L2 is not enough (a last-level cache beyond the L2). */
static const struct { const char *family; size_t bytes; } evict_table[] = {
  {"cdna3", 512ull << 20}, /* 256 MiB Infinity Cache on MI300 */
};

size_t evict_default_bytes(const gpu_device_props *p) {
  for (size_t i = 0; i < sizeof evict_table / sizeof evict_table[0]; i++)
    if (strcmp(p->family, evict_table[i].family) == 0) return evict_table[i].bytes;
  return p->l2_bytes > 0 ? 2 * p->l2_bytes : 256ull << 20;
}

/* Grows *buf to need bytes (waiting for the stream before freeing the old one). No message: the
 * caller says which buffer. */
gpu_status evict_ensure_buffer(measure *m, gpu_ptr *buf, size_t *cap, size_t need) {
  if (need <= *cap) return GPU_OK;
  const gpu_backend *gpu = m->gpu;
  if (*buf) {
    PASS(gpu->stream_wait_timeout(m->s, m->env->buffer_sync_timeout_s * 1e3));
    PASS(gpu->mem_free(*buf));
    *buf = 0;
    *cap = 0;
  }
  PASS(gpu->mem_alloc(buf, need));
  *cap = need;
  return GPU_OK;
}

/* Allocates (or grows) an eviction buffer and fills it once, so it is real memory holding one
 * repeated 32-bit word (the read eviction's fold relies on that: see evict.cu). */
static gpu_status ensure_filled(measure *m, gpu_ptr *buf, size_t *cap, size_t *filled, size_t need) {
  PASS(evict_ensure_buffer(m, buf, cap, need));
  if (*filled == *cap) return GPU_OK;
  m->R->evict_value = m->R->evict_value * 1664525u + 1013904223u;
  PASS(m->gpu->memset32_async(*buf, m->R->evict_value, *cap / 4, m->s));
  *filled = *cap;
  return GPU_OK;
}

gpu_status evict_setup(measure *m) {
  measure_cache *R = m->R;
  m->flush_bytes = 0;
  if (!m->o.flush) return GPU_OK;
  size_t want = m->o.flush_bytes > 0 ? (size_t)m->o.flush_bytes : evict_default_bytes(m->props);
  m->flush_bytes = (want + 15) / 16 * 16; /* whole 16-byte loads */
  if (m->o.flush_mode == 0) {
    m->evict_fn = m->env->kernels.evict_read;
    if (m->o.flush_tlb_bytes > 0) {
      m->pages_fn = m->env->kernels.evict_pages;
      m->tlb_pages = ((size_t)m->o.flush_tlb_bytes + MEASURE_TLB_PAGE - 1) / MEASURE_TLB_PAGE;
    }
    if (m->evict_fn == NULL || (m->tlb_pages && m->pages_fn == NULL))
      return measure_fail(m, gpu_set_error(GPU_ERR_INVALID, "the read eviction's kernel was not given"),
                          "tb.timer.measure");
  }
  gpu_status st = ensure_filled(m, &R->evict, &R->evict_cap, &R->evict_filled, m->flush_bytes);
  const char *what = "eviction buffer";
  size_t what_bytes = m->flush_bytes;
  if (st == GPU_OK && m->tlb_pages) {
    what = "TLB sweep buffer";
    what_bytes = m->tlb_pages * MEASURE_TLB_PAGE;
    st = ensure_filled(m, &R->tlb, &R->tlb_cap, &R->tlb_filled, what_bytes);
  }
  if (st == GPU_ERR_OOM) { /* a case status: the case is too big for the device with its eviction */
    m->r->code = "oom";
    snprintf(m->r->message, sizeof m->r->message, "tb.timer.measure: no memory for the %d MiB %s: %s",
             (int)(what_bytes >> 20), what, gpu_last_error());
    return GPU_OK;
  }
  if (st != GPU_OK) { /* the backend's message alone, as tb_check_gpu raised it */
    snprintf(m->r->message, sizeof m->r->message, "%s", gpu_last_error());
    snprintf(m->r->error_api, sizeof m->r->error_api, "%s", gpu_last_error_api());
  }
  return st;
}

/* One eviction: the read kernel over flush_bytes (and the page sweep), or the memset. Launched
 * outside any pushed timestamp id, so its records match no sample. */
gpu_status evict_launch(measure *m) {
  const gpu_backend *gpu = m->gpu;
  measure_cache *R = m->R;
  if (m->evict_fn == NULL) {
    R->evict_value = R->evict_value * 1664525u + 1013904223u;
    return gpu->memset32_async(R->evict, R->evict_value, m->flush_bytes / 4, m->s);
  }
  gpu_ptr buf = R->evict, sink = R->evict; /* the store is never taken; see evict.cu */
  unsigned key = 1, sms = (unsigned)(m->props->sm_count > 0 ? m->props->sm_count : 1);
  unsigned long long n16 = m->flush_bytes / 16;
  void *args[] = {&buf, &n16, &sink, &key};
  unsigned grid[3] = {sms * 8, 1, 1}, block[3] = {256, 1, 1};
  gpu_status st = gpu->launch(m->evict_fn, grid, block, 0, m->s, args);
  if (st != GPU_OK || m->tlb_pages == 0) return st;
  gpu_ptr pages = R->tlb;
  unsigned long long n_pages = m->tlb_pages, page = MEASURE_TLB_PAGE;
  void *pargs[] = {&pages, &n_pages, &page, &sink, &key};
  unsigned long long blocks = (n_pages + 255) / 256;
  unsigned pgrid[3] = {(unsigned)(blocks < grid[0] ? blocks : grid[0]), 1, 1};
  return gpu->launch(m->pages_fn, pgrid, block, 0, m->s, pargs);
}
