/* blas.c: cuBLASLt, opened with dlopen, for matmul baselines and measured matrix peaks.
 * Row-major problems are mapped onto cuBLASLt's column-major convention (C^T = B^T A^T). */
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#define BLAS_MAX_ALGOS 32

static struct {
  void *lib;
  char path[512];
  cublasLtHandle_t handle;
  __typeof__(cublasLtCreate) *create;
  __typeof__(cublasLtGetVersion) *get_version;
  __typeof__(cublasLtGetStatusName) *status_name;
  __typeof__(cublasLtGetStatusString) *status_string;
  __typeof__(cublasLtMatmulDescCreate) *desc_create;
  __typeof__(cublasLtMatmulDescDestroy) *desc_destroy;
  __typeof__(cublasLtMatmulDescSetAttribute) *desc_set;
  __typeof__(cublasLtMatrixLayoutCreate) *layout_create;
  __typeof__(cublasLtMatrixLayoutDestroy) *layout_destroy;
  __typeof__(cublasLtMatrixLayoutSetAttribute) *layout_set;
  __typeof__(cublasLtMatmulPreferenceCreate) *pref_create;
  __typeof__(cublasLtMatmulPreferenceDestroy) *pref_destroy;
  __typeof__(cublasLtMatmulPreferenceSetAttribute) *pref_set;
  __typeof__(cublasLtMatmulAlgoGetHeuristic) *heuristic;
  __typeof__(cublasLtMatmul) *matmul;
} lt;

static pthread_mutex_t lt_lock = PTHREAD_MUTEX_INITIALIZER;

struct blas_matmul {
  blas_matmul_desc d;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulHeuristicResult_t algos[BLAS_MAX_ALGOS];
  int n_algos;
  gpu_ptr workspace;
  gpu_ptr scales;  /* fp8: two floats of 1.0 (A and B scale) */
  float alpha_f, beta_f;
  int32_t alpha_i, beta_i;
  uint16_t alpha_h, beta_h; /* fp16 bits, for BLAS_COMPUTE_F16 */
};

static gpu_status lt_fail(const char *api, cublasStatus_t st, const char *what) {
  const char *name = lt.status_name ? lt.status_name(st) : "?";
  const char *text = lt.status_string ? lt.status_string(st) : "";
  return gpu_set_error(st == CUBLAS_STATUS_NOT_SUPPORTED ? GPU_ERR_INVALID : GPU_ERR_OTHER,
                       "%s: %s (%s)%s%s", api, name, text, what && *what ? " for " : "",
                       what ? what : "");
}

#define LT_CHECK(call, api, what)                  \
  do {                                             \
    cublasStatus_t st_ = (call);                   \
    if (st_ != CUBLAS_STATUS_SUCCESS) return lt_fail(api, st_, what); \
  } while (0)

gpu_status blas_init(void) {
  gpu_status st = GPU_OK;
  pthread_mutex_lock(&lt_lock);
  if (lt.handle) goto done;
  if (!lt.lib) {
    static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                                        NULL};
    lt.lib = gpu_dlopen_first(names, lt.path, sizeof lt.path);
    if (!lt.lib) { st = GPU_ERR_NO_LIBRARY; goto done; } /* gpu_last_error names the places */
  }
  struct { void **slot; const char *sym; } syms[] = {
    {(void **)&lt.create, "cublasLtCreate"},
    {(void **)&lt.get_version, "cublasLtGetVersion"},
    {(void **)&lt.status_name, "cublasLtGetStatusName"},
    {(void **)&lt.status_string, "cublasLtGetStatusString"},
    {(void **)&lt.desc_create, "cublasLtMatmulDescCreate"},
    {(void **)&lt.desc_destroy, "cublasLtMatmulDescDestroy"},
    {(void **)&lt.desc_set, "cublasLtMatmulDescSetAttribute"},
    {(void **)&lt.layout_create, "cublasLtMatrixLayoutCreate"},
    {(void **)&lt.layout_destroy, "cublasLtMatrixLayoutDestroy"},
    {(void **)&lt.layout_set, "cublasLtMatrixLayoutSetAttribute"},
    {(void **)&lt.pref_create, "cublasLtMatmulPreferenceCreate"},
    {(void **)&lt.pref_destroy, "cublasLtMatmulPreferenceDestroy"},
    {(void **)&lt.pref_set, "cublasLtMatmulPreferenceSetAttribute"},
    {(void **)&lt.heuristic, "cublasLtMatmulAlgoGetHeuristic"},
    {(void **)&lt.matmul, "cublasLtMatmul"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(lt.lib, syms[i].sym);
    if (!*syms[i].slot) {
      st = gpu_set_error(GPU_ERR_NO_LIBRARY, "libcublasLt (%s) lacks %s", lt.path, syms[i].sym);
      goto done;
    }
  }
  {
    cublasStatus_t cs = lt.create(&lt.handle);
    if (cs != CUBLAS_STATUS_SUCCESS) { lt.handle = NULL; st = lt_fail("cublasLtCreate", cs, NULL); }
  }
done:
  pthread_mutex_unlock(&lt_lock);
  return st;
}

gpu_status blas_version(size_t *version, char *path, size_t path_len) {
  gpu_status st = blas_init();
  if (st != GPU_OK) return st;
  if (version) *version = lt.get_version();
  if (path && path_len) {
    strncpy(path, lt.path, path_len - 1);
    path[path_len - 1] = '\0';
  }
  return GPU_OK;
}

const char *blas_type_name(blas_type t) {
  static const char *const names[] = {"fp32", "fp16", "bf16", "fp8_e4m3", "int8", "int32"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static cudaDataType_t cuda_type(blas_type t) {
  switch (t) {
    case BLAS_F32: return CUDA_R_32F;
    case BLAS_F16: return CUDA_R_16F;
    case BLAS_BF16: return CUDA_R_16BF;
    case BLAS_E4M3: return CUDA_R_8F_E4M3;
    case BLAS_I8: return CUDA_R_8I;
    case BLAS_I32: return CUDA_R_32I;
  }
  return CUDA_R_32F;
}

/* fp16 bits of a small exact value (1.0 or 0.0) */
static uint16_t half_bits(float v) { return v == 1.0f ? 0x3C00 : 0x0000; }

/* Which (data types, compute) combinations are offered: cuBLASLt itself is the final judge,
 * this only turns nonsense into a clear message before any descriptor is made. */
static gpu_status check_desc(const blas_matmul_desc *d) {
  if (d->m <= 0 || d->n <= 0 || d->k <= 0 || d->batch <= 0)
    return gpu_set_error(GPU_ERR_INVALID, "blas matmul: m, n, k and batch must be positive "
                         "(m=%lld n=%lld k=%lld batch=%lld)", (long long)d->m, (long long)d->n,
                         (long long)d->k, (long long)d->batch);
  const char *ab = blas_type_name(d->ab_type), *c = blas_type_name(d->c_type);
  switch (d->compute) {
    case BLAS_COMPUTE_TF32:
      if (d->ab_type != BLAS_F32 || d->c_type != BLAS_F32)
        return gpu_set_error(GPU_ERR_INVALID, "blas matmul: compute tf32 needs fp32 a, b and c "
                             "(got %s, %s)", ab, c);
      break;
    case BLAS_COMPUTE_F16:
      if (d->ab_type != BLAS_F16 || d->c_type != BLAS_F16)
        return gpu_set_error(GPU_ERR_INVALID, "blas matmul: compute fp16 needs fp16 a, b and c "
                             "(got %s, %s)", ab, c);
      break;
    case BLAS_COMPUTE_I32:
      if (d->ab_type != BLAS_I8 || d->c_type != BLAS_I32)
        return gpu_set_error(GPU_ERR_INVALID, "blas matmul: compute int32 needs int8 a, b and "
                             "int32 c (got %s, %s)", ab, c);
      break;
    case BLAS_COMPUTE_F32:
      if (d->ab_type == BLAS_I8 || d->ab_type == BLAS_I32 || d->c_type == BLAS_I8 ||
          d->c_type == BLAS_I32)
        return gpu_set_error(GPU_ERR_INVALID, "blas matmul: compute fp32 needs floating-point "
                             "a, b and c (got %s, %s)", ab, c);
      if (d->ab_type == BLAS_E4M3 && d->c_type == BLAS_E4M3)
        return gpu_set_error(GPU_ERR_INVALID, "blas matmul: fp8 output is not offered; write "
                             "bf16, fp16 or fp32 and cast");
      if (d->ab_type != BLAS_E4M3 && d->c_type != d->ab_type && d->c_type != BLAS_F32)
        return gpu_set_error(GPU_ERR_INVALID, "blas matmul: c must be %s or fp32 for %s inputs "
                             "(got %s)", ab, ab, c);
      break;
  }
  /* cuBLASLt runs fp8 and int8 only as "TN": both operands contiguous along k. In row-major
   * terms that is A (m, k) as is and B given transposed, (n, k). */
  if ((d->ab_type == BLAS_E4M3 || d->ab_type == BLAS_I8) && !(d->row_major && d->b_transposed))
    return gpu_set_error(GPU_ERR_INVALID, "blas matmul: %s needs layout='row' with "
                         "b_transposed=true (cuBLASLt runs %s only as TN, both operands "
                         "contiguous along k)", ab, ab);
  return GPU_OK;
}

static gpu_status make_layout(cublasLtMatrixLayout_t *l, blas_type t, int64_t rows, int64_t cols,
                              int64_t ld, int64_t batch, int64_t stride, const char *what) {
  LT_CHECK(lt.layout_create(l, cuda_type(t), (uint64_t)rows, (uint64_t)cols, ld),
           "cublasLtMatrixLayoutCreate", what);
  if (batch > 1) {
    int32_t count = (int32_t)batch;
    LT_CHECK(lt.layout_set(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
             "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", what);
    LT_CHECK(lt.layout_set(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
             "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", what);
  }
  return GPU_OK;
}

static gpu_status build(blas_matmul *op) {
  const blas_matmul_desc *d = &op->d;
  const gpu_backend *be = gpu_backend_get();
  cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  if (d->compute == BLAS_COMPUTE_TF32) ct = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (d->compute == BLAS_COMPUTE_F16) { ct = CUBLAS_COMPUTE_16F; scale = CUDA_R_16F; }
  if (d->compute == BLAS_COMPUTE_I32) { ct = CUBLAS_COMPUTE_32I; scale = CUDA_R_32I; }
  LT_CHECK(lt.desc_create(&op->desc, ct, scale), "cublasLtMatmulDescCreate", NULL);

  /* Column-major operands X (cuBLASLt's "A") and Y ("B") with D = op(X) op(Y), D (rows x cols).
   * Row-major C (m, n) is column-major C^T (n, m) = B^T A^T: X is the b buffer, Y the a buffer. */
  int64_t rows, cols, k = d->k;
  blas_type tx = d->ab_type, ty = d->ab_type;
  cublasOperation_t opx, opy;
  int64_t x_rows, x_cols, x_ld, y_rows, y_cols, y_ld, sx, sy;
  if (d->row_major) {
    rows = d->n; cols = d->m;
    /* X = B^T (n x k): the row-major (k, n) buffer is column-major (n x k), ld n; a transposed
     * buffer (n, k) row-major is column-major (k x n), used with op T. */
    if (d->b_transposed) { opx = CUBLAS_OP_T; x_rows = k; x_cols = d->n; x_ld = k; }
    else { opx = CUBLAS_OP_N; x_rows = d->n; x_cols = k; x_ld = d->n; }
    opy = CUBLAS_OP_N; y_rows = k; y_cols = d->m; y_ld = k;  /* A^T (k x m), ld k */
    sx = d->stride_b; sy = d->stride_a;
  } else {
    rows = d->m; cols = d->n;
    opx = CUBLAS_OP_N; x_rows = d->m; x_cols = k; x_ld = d->m;  /* A (m x k) */
    if (d->b_transposed) { opy = CUBLAS_OP_T; y_rows = d->n; y_cols = k; y_ld = d->n; }
    else { opy = CUBLAS_OP_N; y_rows = k; y_cols = d->n; y_ld = k; }
    sx = d->stride_a; sy = d->stride_b;
  }
  LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opx, sizeof opx),
           "cublasLtMatmulDescSetAttribute(TRANSA)", NULL);
  LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opy, sizeof opy),
           "cublasLtMatmulDescSetAttribute(TRANSB)", NULL);
  if (d->ab_type == BLAS_E4M3) {
    float ones[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    gpu_status st = be->mem_alloc(&op->scales, sizeof ones);
    if (st != GPU_OK) return st;
    if ((st = be->copy_htod(op->scales, ones, sizeof ones)) != GPU_OK) return st;
    void *sa = (void *)(uintptr_t)op->scales, *sb = (void *)(uintptr_t)(op->scales + 4);
    LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa),
             "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)", NULL);
    LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb),
             "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)", NULL);
    int8_t fast = d->fast_accum ? 1 : 0;
    LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast),
             "cublasLtMatmulDescSetAttribute(FAST_ACCUM)", NULL);
  }
  gpu_status st;
  if ((st = make_layout(&op->la, tx, x_rows, x_cols, x_ld, d->batch, sx, "operand A")) != GPU_OK ||
      (st = make_layout(&op->lb, ty, y_rows, y_cols, y_ld, d->batch, sy, "operand B")) != GPU_OK ||
      (st = make_layout(&op->lc, d->c_type, rows, cols, rows, d->batch, d->stride_c, "C")) != GPU_OK)
    return st;

  cublasLtMatmulPreference_t pref;
  LT_CHECK(lt.pref_create(&pref), "cublasLtMatmulPreferenceCreate", NULL);
  uint64_t ws = d->workspace_bytes;
  cublasStatus_t cs = lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = lt.heuristic(lt.handle, op->desc, op->la, op->lb, op->lc, op->lc, pref, BLAS_MAX_ALGOS,
                      op->algos, &op->n_algos);
  lt.pref_destroy(pref);
  char what[160];
  snprintf(what, sizeof what, "%s x %s -> %s, m=%lld n=%lld k=%lld batch=%lld",
           blas_type_name(d->ab_type), blas_type_name(d->ab_type), blas_type_name(d->c_type),
           (long long)d->m, (long long)d->n, (long long)d->k, (long long)d->batch);
  if (cs != CUBLAS_STATUS_SUCCESS) return lt_fail("cublasLtMatmulAlgoGetHeuristic", cs, what);
  if (op->n_algos <= 0)
    return gpu_set_error(GPU_ERR_INVALID, "cublasLtMatmulAlgoGetHeuristic: no algorithm for %s",
                         what);
  if (d->algo_index < 0 || d->algo_index >= op->n_algos)
    return gpu_set_error(GPU_ERR_INVALID, "blas matmul: algo_index %d is past the %d algorithms "
                         "the heuristic offers for %s", d->algo_index + 1, op->n_algos, what);
  if (d->workspace_bytes > 0) {
    st = be->mem_alloc(&op->workspace, d->workspace_bytes);
    if (st != GPU_OK) return st;
  }
  op->alpha_f = 1.0f; op->beta_f = 0.0f;
  op->alpha_i = 1; op->beta_i = 0;
  op->alpha_h = half_bits(1.0f); op->beta_h = half_bits(0.0f);
  return GPU_OK;
}

gpu_status blas_matmul_create(blas_matmul **out, const blas_matmul_desc *d) {
  *out = NULL;
  gpu_status st = check_desc(d);
  if (st != GPU_OK) return st;
  if ((st = blas_init()) != GPU_OK) return st;
  blas_matmul *op = calloc(1, sizeof *op);
  if (!op) return gpu_set_error(GPU_ERR_OOM, "blas matmul: out of host memory");
  op->d = *d;
  if (op->d.batch == 1) op->d.stride_a = op->d.stride_b = op->d.stride_c = 0;
  if ((st = build(op)) != GPU_OK) {
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", gpu_last_error());
    blas_matmul_destroy(op);
    return gpu_set_error(st, "%s", keep);
  }
  *out = op;
  return GPU_OK;
}

gpu_status blas_matmul_run(blas_matmul *op, gpu_stream s) {
  const blas_matmul_desc *d = &op->d;
  const void *alpha = &op->alpha_f, *beta = &op->beta_f;
  if (d->compute == BLAS_COMPUTE_I32) { alpha = &op->alpha_i; beta = &op->beta_i; }
  if (d->compute == BLAS_COMPUTE_F16) { alpha = &op->alpha_h; beta = &op->beta_h; }
  const void *x = (const void *)(uintptr_t)(d->row_major ? d->b : d->a);
  const void *y = (const void *)(uintptr_t)(d->row_major ? d->a : d->b);
  void *c = (void *)(uintptr_t)d->c;
  cudaStream_t cs = (cudaStream_t)gpu_backend_get()->native_stream(s);
  const cublasLtMatmulHeuristicResult_t *r = &op->algos[d->algo_index];
  LT_CHECK(lt.matmul(lt.handle, op->desc, alpha, x, op->la, y, op->lb, beta, c, op->lc, c, op->lc,
                     &r->algo, (void *)(uintptr_t)op->workspace, d->workspace_bytes, cs),
           "cublasLtMatmul", NULL);
  return GPU_OK;
}

int blas_matmul_algo_count(const blas_matmul *op) { return op->n_algos; }
int blas_matmul_algo_index(const blas_matmul *op) { return op->d.algo_index; }
size_t blas_matmul_workspace(const blas_matmul *op) { return op->d.workspace_bytes; }

void blas_matmul_destroy(blas_matmul *op) {
  if (!op) return;
  const gpu_backend *be = gpu_backend_get();
  if (op->workspace) be->mem_free(op->workspace);
  if (op->scales) be->mem_free(op->scales);
  if (op->la) lt.layout_destroy(op->la);
  if (op->lb) lt.layout_destroy(op->lb);
  if (op->lc) lt.layout_destroy(op->lc);
  if (op->desc) lt.desc_destroy(op->desc);
  free(op);
}
