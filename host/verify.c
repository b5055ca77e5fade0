/* verify.c: the compare of verify.h: sizes the grid, runs tb_compare_<out>_<ref> and
 * tb_compare_finish on a scratch buffer, copies back its header and first mismatches. */
#include "verify.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "host_kernels.h"

#define COMPARE_THREADS 256 /* TB_COMPARE_THREADS in verify.cu */
#define COMPARE_ROUNDS 2    /* TB_COMPARE_ROUNDS in verify.cu */
#define FINISH_THREADS 1024

/* The layout verify.cu writes: header | first[K] | block counts (u32, padded) | block lists. */
typedef struct compare_header { uint64_t mismatches, max_abs, max_rel, nfirst; } compare_header;

static double bits_double(uint64_t bits) {
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

gpu_status verify_compare(const verify_device *dev, const verify_operand *out, const verify_operand *ref,
                          double atol, double rtol, unsigned max_report, verify_result *r) {
  memset(r, 0, offsetof(verify_result, first));
  const unsigned K = max_report < VERIFY_MAX_REPORT ? max_report : VERIFY_MAX_REPORT;
  const uint64_t n = out->numel;
  if (n == 0) return GPU_OK;
  const gpu_backend *b = dev->backend;
  int exact = !out->is_float && !ref->is_float && atol == 0 && rtol == 0;
  char kernel[64];
  snprintf(kernel, sizeof kernel, "tb_compare_%s_%s", out->dtype, ref->dtype);
  gpu_function *fn = NULL, *finish = NULL;
  gpu_status st = host_kernel(b, dev->arch, "verify.cu", kernel, &fn);
  if (st == GPU_OK) st = host_kernel(b, dev->arch, "verify.cu", "tb_compare_finish", &finish);
  if (st != GPU_OK) return st;

  /* Tiles of 256 threads x 2 slots x E elements; blocks own contiguous runs of tiles. */
  int wider = out->size > ref->size ? out->size : ref->size;
  uint64_t tile = (uint64_t)COMPARE_THREADS * COMPARE_ROUNDS * (uint64_t)(16 / wider);
  uint64_t ntiles = (n + tile - 1) / tile;
  uint64_t max_blocks = (uint64_t)dev->sm_count * 8;
  if (max_blocks == 0) max_blocks = 1024;
  uint64_t blocks = ntiles < max_blocks ? ntiles : max_blocks;
  unsigned long long tiles_per_block = (ntiles + blocks - 1) / blocks;
  blocks = (ntiles + tiles_per_block - 1) / tiles_per_block;

  compare_header h = {0, 0, 0, 0};
  size_t bytes = sizeof h + (size_t)K * sizeof(verify_mismatch) + (((size_t)blocks * 4 + 7) & ~(size_t)7) +
                 (size_t)blocks * K * sizeof(verify_mismatch);
  gpu_ptr res = 0;
  if ((st = b->mem_alloc(&res, bytes)) != GPU_OK) return st; /* a few hundred KB: a real error */

  gpu_ptr po = out->ptr, pr = ref->ptr;
  unsigned long long count = n;
  int vectors = (po % 16 == 0) && (pr % 16 == 0);
  unsigned nblocks = (unsigned)blocks, k = K;
  void *args[] = {&po, &pr, &count, &atol, &rtol, &exact, &vectors, &tiles_per_block, &res, &k};
  void *finish_args[] = {&res, &nblocks, &k};
  unsigned grid[3] = {nblocks, 1, 1}, block[3] = {COMPARE_THREADS, 1, 1};
  unsigned grid1[3] = {1, 1, 1}, block1[3] = {FINISH_THREADS, 1, 1};

  /* Run everything, then free the scratch whatever happened, then report the first failure. */
  gpu_stream s = dev->stream;
  st = b->memset8_async(res, 0, sizeof h, s);
  if (st == GPU_OK) st = b->launch(fn, grid, block, 0, s, args);
  if (st == GPU_OK) st = b->launch(finish, grid1, block1, 0, s, finish_args);
  if (st == GPU_OK) st = b->stream_wait_timeout(s, dev->timeout_ms);
  if (st == GPU_OK) st = b->copy_dtoh(&h, res, sizeof h);
  if (st == GPU_OK && h.nfirst > K) h.nfirst = K;
  if (st == GPU_OK && h.nfirst > 0) st = b->copy_dtoh(r->first, res + sizeof h, (size_t)h.nfirst * sizeof r->first[0]);
  if (st != GPU_OK) {
    char message[1024], api[64];
    snprintf(message, sizeof message, "%s", gpu_last_error());
    snprintf(api, sizeof api, "%s", gpu_last_error_api());
    (void)b->mem_free(res);
    return gpu_set_api_error(st, api, "%scompare %s: %s", st == GPU_ERR_TIMEOUT ? "timeout: " : "", kernel, message);
  }
  if ((st = b->mem_free(res)) != GPU_OK) return st;
  r->mismatches = h.mismatches;
  r->max_abs = bits_double(h.max_abs);
  r->max_rel = bits_double(h.max_rel);
  r->nfirst = (unsigned)h.nfirst;
  return GPU_OK;
}
