/* cuda_blas.c: CUDA's BLAS table (gpu_blas, blas.h): cuBLASLt, opened with dlopen, for matmul
 * baselines and measured matrix peaks.
 * Row-major problems are mapped onto cuBLASLt's column-major convention (C^T = B^T A^T).
 *
 * fp8: beta is 0, so C is never read, and C is passed as NULL rather than aliasing D. Since
 * CUDA 13, cublasLtMatmul (not the heuristic, which never sees pointers) validates a C pointer
 * equal to D, and fp8 gemms with C == D fail there with CUBLAS_STATUS_NOT_SUPPORTED although the
 * heuristic offered algorithms (our H200 log; XLA PR 34912 and PyTorch PR 167873 switched their
 * fp8 gemms to a NULL C for beta 0 for this). int8 keeps the in-place form PyTorch's int8 gemm
 * uses. Should a binding still be refused, run() tries the other one once (a refused call
 * enqueues nothing) and describe() says which is in use.
 * Failures carry cuBLASLt's own error log line and the full descriptor set. */
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#define BLAS_MAX_ALGOS 32
#define SCALE_SLOT 256 /* bytes between the A and B scale factors: each as aligned as an allocation */

static struct {
  void *lib;
  char path[512];
  cublasLtHandle_t handle;
  __typeof__(cublasLtCreate) *create;
  __typeof__(cublasLtDestroy) *destroy;
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
  /* optional: diagnostics only */
  __typeof__(cublasLtMatmulAlgoCapGetAttribute) *algo_cap;
  __typeof__(cublasLtLoggerSetCallback) *logger_callback;
  __typeof__(cublasLtLoggerSetMask) *logger_mask;
} lt;

/* cuBLASLt's last error-level log line (its own reason for a refusal), captured through the
 * logger callback when the user has not asked for cuBLASLt logging through the environment. */
static _Thread_local char lt_log[512];

static pthread_mutex_t lt_lock = PTHREAD_MUTEX_INITIALIZER;

/* One cuBLASLt operand: the buffer it reads, its column-major shape before op(), and op(). */
typedef struct lt_operand {
  const char *buffer; /* "a" or "b": which of the problem's buffers it is */
  int64_t rows, cols, ld, stride;
  cublasOperation_t op;
} lt_operand;

struct blas_matmul {
  blas_matmul_desc d;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  lt_operand x, y;       /* cuBLASLt's A and B */
  int64_t d_rows, d_cols;
  cublasComputeType_t compute_type;
  cudaDataType_t scale_type;
  int c_null;            /* pass C as NULL (beta 0) instead of aliasing D */
  int c_switched;        /* run() found the first binding refused and uses the other */
  cublasLtMatmulHeuristicResult_t algos[BLAS_MAX_ALGOS];
  int n_algos;
  gpu_ptr workspace;
  gpu_ptr scales;  /* fp8: 1.0 for A at +0 and for B at +SCALE_SLOT, each slot aligned */
  float alpha_f, beta_f;
  int32_t alpha_i, beta_i;
  uint16_t alpha_h, beta_h; /* fp16 bits, for BLAS_COMPUTE_F16 */
};

static void lt_matmul_destroy(blas_matmul *op);

static gpu_status lt_fail(const char *api, cublasStatus_t st, const char *what) {
  const char *name = lt.status_name ? lt.status_name(st) : "?";
  const char *text = lt.status_string ? lt.status_string(st) : "";
  gpu_status r = gpu_set_error(st == CUBLAS_STATUS_NOT_SUPPORTED ? GPU_ERR_INVALID : GPU_ERR_OTHER,
                               "%s: %s (%s)%s%s%s%s", api, name, text,
                               what && *what ? " for " : "", what ? what : "",
                               lt_log[0] ? "; cuBLASLt says: " : "", lt_log);
  lt_log[0] = '\0';
  return r;
}

static void lt_logger(int level, const char *function, const char *message) {
  if (level != 1) return; /* errors only: the mask asks for nothing else */
  snprintf(lt_log, sizeof lt_log, "[%s] %s", function ? function : "?", message ? message : "");
  size_t n = strlen(lt_log);
  while (n > 0 && (lt_log[n - 1] == '\n' || lt_log[n - 1] == '\r')) lt_log[--n] = '\0';
}

#define LT_CHECK(call, api, what)                  \
  do {                                             \
    cublasStatus_t st_ = (call);                   \
    if (st_ != CUBLAS_STATUS_SUCCESS) return lt_fail(api, st_, what); \
  } while (0)

/* The handle lives until the process ends; destroying it then keeps LeakSanitizer's report
 * (the sanitizer build in CI) to real leaks. atexit runs it before the CUDA libraries' own
 * exit handlers, registered earlier. */
static void lt_destroy_at_exit(void) {
  pthread_mutex_lock(&lt_lock);
  if (lt.handle && lt.destroy) lt.destroy(lt.handle);
  lt.handle = NULL;
  pthread_mutex_unlock(&lt_lock);
}

static gpu_status lt_init(void) {
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
    {(void **)&lt.destroy, "cublasLtDestroy"},
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
  lt.algo_cap = (__typeof__(lt.algo_cap))dlsym(lt.lib, "cublasLtMatmulAlgoCapGetAttribute");
  lt.logger_callback = (__typeof__(lt.logger_callback))dlsym(lt.lib, "cublasLtLoggerSetCallback");
  lt.logger_mask = (__typeof__(lt.logger_mask))dlsym(lt.lib, "cublasLtLoggerSetMask");
  /* cuBLASLt's error log names the rule a refused call broke; keep it for our messages unless
   * the user routes cuBLASLt's logging somewhere through its environment variables. */
  if (lt.logger_callback && lt.logger_mask && !getenv("CUBLASLT_LOG_LEVEL") &&
      !getenv("CUBLASLT_LOG_MASK") && !getenv("CUBLASLT_LOG_FILE")) {
    if (lt.logger_callback(lt_logger) == CUBLAS_STATUS_SUCCESS) lt.logger_mask(1);
  }
  {
    cublasStatus_t cs = lt.create(&lt.handle);
    if (cs != CUBLAS_STATUS_SUCCESS) { lt.handle = NULL; st = lt_fail("cublasLtCreate", cs, NULL); }
    else {
      static int registered;
      if (!registered) registered = atexit(lt_destroy_at_exit) == 0;
    }
  }
done:
  pthread_mutex_unlock(&lt_lock);
  return st;
}

static gpu_status lt_version(size_t *version, char *path, size_t path_len) {
  gpu_status st = lt_init();
  if (st != GPU_OK) return st;
  if (version) *version = lt.get_version();
  if (path && path_len) {
    strncpy(path, lt.path, path_len - 1);
    path[path_len - 1] = '\0';
  }
  return GPU_OK;
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

static const char *op_name(cublasOperation_t o) { return o == CUBLAS_OP_T ? "T" : "N"; }

static const char *compute_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case CUBLAS_COMPUTE_16F: return "CUBLAS_COMPUTE_16F";
    case CUBLAS_COMPUTE_32I: return "CUBLAS_COMPUTE_32I";
    default: return "?";
  }
}

static const char *scale_name(cudaDataType_t t) {
  return t == CUDA_R_32F ? "CUDA_R_32F" : t == CUDA_R_16F ? "CUDA_R_16F" : t == CUDA_R_32I ? "CUDA_R_32I" : "?";
}

/* The largest power of two (up to 256) dividing every batch entry's address. */
static unsigned alignment_of(gpu_ptr p, int64_t stride_bytes, int64_t batch) {
  uint64_t v = (uint64_t)p | 256u;
  if (batch > 1) v |= (uint64_t)stride_bytes;
  return (unsigned)(v & (~v + 1));
}

static size_t type_size(blas_type t) {
  return t == BLAS_F32 || t == BLAS_I32 ? 4 : t == BLAS_F16 || t == BLAS_BF16 ? 2 : 1;
}

static size_t lt_matmul_describe(const blas_matmul *op, char *buf, size_t len) {
  const blas_matmul_desc *d = &op->d;
  const char *ab = blas_type_name(d->ab_type), *c = blas_type_name(d->c_type);
  size_t ab_size = type_size(d->ab_type), c_size = type_size(d->c_type);
  gpu_ptr px = d->row_major ? d->b : d->a, py = d->row_major ? d->a : d->b;
  int n = snprintf(buf, len,
      "D = alpha op(A) op(B) + beta C (column-major), m=%lld n=%lld k=%lld batch %lld, %s; "
      "A = buffer %s %s %lld x %lld ld %lld op %s stride %lld; "
      "B = buffer %s %s %lld x %lld ld %lld op %s stride %lld; "
      "C = %s; D = buffer c %s %lld x %lld ld %lld stride %lld; "
      "compute %s, scale type %s, alpha 1 beta 0 (host)",
      (long long)d->m, (long long)d->n, (long long)d->k, (long long)d->batch,
      d->row_major ? (d->b_transposed ? "row-major, b holds B^T" : "row-major") :
                     (d->b_transposed ? "column-major, b holds B^T" : "column-major"),
      op->x.buffer, ab, (long long)op->x.rows, (long long)op->x.cols, (long long)op->x.ld,
      op_name(op->x.op), (long long)op->x.stride,
      op->y.buffer, ab, (long long)op->y.rows, (long long)op->y.cols, (long long)op->y.ld,
      op_name(op->y.op), (long long)op->y.stride,
      op->c_null ? "NULL (not read: beta 0)" : "D's pointer and layout (in place)", c,
      (long long)op->d_rows, (long long)op->d_cols, (long long)op->d_rows,
      (long long)d->stride_c, compute_name(op->compute_type), scale_name(op->scale_type));
  size_t used = n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
#define APPEND(...)                                                                   \
  do {                                                                                \
    if (used + 1 < len) {                                                             \
      int k_ = snprintf(buf + used, len - used, __VA_ARGS__);                         \
      if (k_ > 0) used = used + (size_t)k_ >= len ? len - 1 : used + (size_t)k_;       \
    }                                                                                 \
  } while (0)
  if (d->ab_type == BLAS_E4M3)
    APPEND("; A_SCALE_POINTER and B_SCALE_POINTER = device 1.0 (%u- and %u-byte aligned), "
           "FAST_ACCUM %d", alignment_of(op->scales, 0, 1),
           alignment_of(op->scales + SCALE_SLOT, 0, 1), d->fast_accum ? 1 : 0);
  APPEND("; pointers aligned to A %u, B %u, D %u bytes",
         alignment_of(px, op->x.stride * (int64_t)ab_size, d->batch),
         alignment_of(py, op->y.stride * (int64_t)ab_size, d->batch),
         alignment_of(d->c, d->stride_c * (int64_t)c_size, d->batch));
  if (op->n_algos > 0 && d->algo_index >= 0 && d->algo_index < op->n_algos) {
    const cublasLtMatmulHeuristicResult_t *r = &op->algos[d->algo_index];
    APPEND("; algorithm %d of %d (needs %zu of %zu workspace bytes)", d->algo_index + 1,
           op->n_algos, r->workspaceSize, d->workspace_bytes);
    static const cublasLtMatmulAlgoCapAttributes_t caps[4] = {
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES};
    uint32_t need[4] = {0, 0, 0, 0};
    int got = lt.algo_cap != NULL;
    for (int i = 0; got && i < 4; i++) {
      size_t written = 0;
      got = lt.algo_cap(&r->algo, caps[i], &need[i], sizeof need[i], &written) ==
            CUBLAS_STATUS_SUCCESS;
    }
    if (got) APPEND(", which wants A/B/C/D aligned to %u/%u/%u/%u bytes", need[0], need[1],
                    need[2], need[3]);
  }
  if (op->c_switched) APPEND("; the first C binding was refused by cublasLtMatmul");
#undef APPEND
  return used;
}

static gpu_status build(blas_matmul *op) {
  const blas_matmul_desc *d = &op->d;
  const gpu_backend *be = gpu_cuda_backend();
  cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  if (d->compute == BLAS_COMPUTE_TF32) ct = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (d->compute == BLAS_COMPUTE_F16) { ct = CUBLAS_COMPUTE_16F; scale = CUDA_R_16F; }
  if (d->compute == BLAS_COMPUTE_I32) { ct = CUBLAS_COMPUTE_32I; scale = CUDA_R_32I; }
  op->compute_type = ct;
  op->scale_type = scale;
  op->c_null = d->ab_type == BLAS_E4M3;
  LT_CHECK(lt.desc_create(&op->desc, ct, scale), "cublasLtMatmulDescCreate", NULL);

  /* Column-major operands X (cuBLASLt's "A") and Y ("B") with D = op(X) op(Y), D (rows x cols).
   * Row-major C (m, n) is column-major C^T (n, m) = B^T A^T: X is the b buffer, Y the a buffer.
   * fp8 and int8 (TN only: op(A) = T, op(B) = N) arrive here as row-major with b holding B^T
   * (check_desc): X is that (n, k) row-major buffer, i.e. column-major (k x n) ld k, with op T
   * giving B^T (n x k); Y is A (m, k) row-major = column-major A^T (k x m) ld k with op N. */
  int64_t k = d->k;
  lt_operand *x = &op->x, *y = &op->y;
  if (d->row_major) {
    op->d_rows = d->n; op->d_cols = d->m;
    x->buffer = "b"; y->buffer = "a";
    if (d->b_transposed) { x->op = CUBLAS_OP_T; x->rows = k; x->cols = d->n; x->ld = k; }
    else { x->op = CUBLAS_OP_N; x->rows = d->n; x->cols = k; x->ld = d->n; }
    y->op = CUBLAS_OP_N; y->rows = k; y->cols = d->m; y->ld = k;
    x->stride = d->stride_b; y->stride = d->stride_a;
  } else {
    op->d_rows = d->m; op->d_cols = d->n;
    x->buffer = "a"; y->buffer = "b";
    x->op = CUBLAS_OP_N; x->rows = d->m; x->cols = k; x->ld = d->m;  /* A (m x k) */
    if (d->b_transposed) { y->op = CUBLAS_OP_T; y->rows = d->n; y->cols = k; y->ld = d->n; }
    else { y->op = CUBLAS_OP_N; y->rows = k; y->cols = d->n; y->ld = k; }
    x->stride = d->stride_a; y->stride = d->stride_b;
  }
  LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_TRANSA, &x->op, sizeof x->op),
           "cublasLtMatmulDescSetAttribute(TRANSA)", NULL);
  LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_TRANSB, &y->op, sizeof y->op),
           "cublasLtMatmulDescSetAttribute(TRANSB)", NULL);
  if (d->ab_type == BLAS_E4M3) {
    /* Unit scales, A's and B's each at the start of its own aligned slot (as separately
     * allocated scale tensors are in PyTorch and TransformerEngine). */
    float slots[2 * SCALE_SLOT / sizeof(float)];
    memset(slots, 0, sizeof slots);
    slots[0] = 1.0f;
    slots[SCALE_SLOT / sizeof(float)] = 1.0f;
    gpu_status st = be->mem_alloc(&op->scales, sizeof slots);
    if (st != GPU_OK) return st;
    if ((st = be->copy_htod(op->scales, slots, sizeof slots)) != GPU_OK) return st;
    void *sa = (void *)(uintptr_t)op->scales, *sb = (void *)(uintptr_t)(op->scales + SCALE_SLOT);
    LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa),
             "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)", NULL);
    LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb),
             "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)", NULL);
    int8_t fast = d->fast_accum ? 1 : 0;
    LT_CHECK(lt.desc_set(op->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast),
             "cublasLtMatmulDescSetAttribute(FAST_ACCUM)", NULL);
  }
  gpu_status st;
  if ((st = make_layout(&op->la, d->ab_type, x->rows, x->cols, x->ld, d->batch, x->stride,
                        "operand A")) != GPU_OK ||
      (st = make_layout(&op->lb, d->ab_type, y->rows, y->cols, y->ld, d->batch, y->stride,
                        "operand B")) != GPU_OK ||
      (st = make_layout(&op->lc, d->c_type, op->d_rows, op->d_cols, op->d_rows, d->batch,
                        d->stride_c, "C")) != GPU_OK)
    return st;

  cublasLtMatmulPreference_t pref;
  LT_CHECK(lt.pref_create(&pref), "cublasLtMatmulPreferenceCreate", NULL);
  uint64_t ws = d->workspace_bytes;
  lt_log[0] = '\0';
  /* The heuristic sees exactly the descriptors run() passes (C's layout is D's). */
  cublasStatus_t cs = lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = lt.heuristic(lt.handle, op->desc, op->la, op->lb, op->lc, op->lc, pref, BLAS_MAX_ALGOS,
                      op->algos, &op->n_algos);
  lt.pref_destroy(pref);
  /* Results whose state is not SUCCESS carry no usable algorithm: keep the leading good ones. */
  if (cs == CUBLAS_STATUS_SUCCESS) {
    int good = 0;
    while (good < op->n_algos && op->algos[good].state == CUBLAS_STATUS_SUCCESS) good++;
    op->n_algos = good;
  }
  char what[1536];
  int w = snprintf(what, sizeof what, "%s x %s -> %s, m=%lld n=%lld k=%lld batch=%lld (",
                   blas_type_name(d->ab_type), blas_type_name(d->ab_type),
                   blas_type_name(d->c_type), (long long)d->m, (long long)d->n, (long long)d->k,
                   (long long)d->batch);
  if (w > 0 && (size_t)w < sizeof what - 2) {
    size_t used = (size_t)w + lt_matmul_describe(op, what + w, sizeof what - (size_t)w - 1);
    what[used] = ')';
    what[used + 1] = '\0';
  }
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

static gpu_status lt_matmul_create(blas_matmul **out, const blas_matmul_desc *d) {
  *out = NULL;
  gpu_status st = check_desc(d);
  if (st != GPU_OK) return st;
  if ((st = lt_init()) != GPU_OK) return st;
  blas_matmul *op = calloc(1, sizeof *op);
  if (!op) return gpu_set_error(GPU_ERR_OOM, "blas matmul: out of host memory");
  op->d = *d;
  if (op->d.batch == 1) op->d.stride_a = op->d.stride_b = op->d.stride_c = 0;
  if ((st = build(op)) != GPU_OK) {
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", gpu_last_error());
    lt_matmul_destroy(op);
    return gpu_set_error(st, "%s", keep);
  }
  *out = op;
  return GPU_OK;
}

static cublasStatus_t enqueue(blas_matmul *op, cudaStream_t cs) {
  const blas_matmul_desc *d = &op->d;
  const void *alpha = &op->alpha_f, *beta = &op->beta_f;
  if (d->compute == BLAS_COMPUTE_I32) { alpha = &op->alpha_i; beta = &op->beta_i; }
  if (d->compute == BLAS_COMPUTE_F16) { alpha = &op->alpha_h; beta = &op->beta_h; }
  const void *x = (const void *)(uintptr_t)(d->row_major ? d->b : d->a);
  const void *y = (const void *)(uintptr_t)(d->row_major ? d->a : d->b);
  void *dout = (void *)(uintptr_t)d->c;
  const void *cin = op->c_null ? NULL : dout;
  const cublasLtMatmulHeuristicResult_t *r = &op->algos[d->algo_index];
  return lt.matmul(lt.handle, op->desc, alpha, x, op->la, y, op->lb, beta, cin, op->lc, dout,
                   op->lc, &r->algo, (void *)(uintptr_t)op->workspace, d->workspace_bytes, cs);
}

static gpu_status lt_matmul_run(blas_matmul *op, gpu_stream s) {
  const blas_matmul_desc *d = &op->d;
  cudaStream_t cs = (cudaStream_t)gpu_cuda_backend()->native_stream(s);
  lt_log[0] = '\0';
  cublasStatus_t st = enqueue(op, cs);
  int tried_both = 0;
  /* fp8 and int8 only (fp32/fp16/bf16 run in place everywhere): a refusal is argument
   * validation, before anything is enqueued, so the other C binding may be tried once. */
  if (st == CUBLAS_STATUS_NOT_SUPPORTED && !op->c_switched &&
      (d->ab_type == BLAS_E4M3 || d->ab_type == BLAS_I8)) {
    char first[sizeof lt_log];
    memcpy(first, lt_log, sizeof first);
    op->c_null = !op->c_null;
    op->c_switched = 1;
    lt_log[0] = '\0';
    st = enqueue(op, cs);
    tried_both = 1;
    if (st != CUBLAS_STATUS_SUCCESS) { /* neither works: report the original binding */
      op->c_null = !op->c_null;
      op->c_switched = 0;
      if (first[0] && !lt_log[0]) memcpy(lt_log, first, sizeof first);
    }
  }
  if (st != CUBLAS_STATUS_SUCCESS) {
    char what[1536];
    size_t used = lt_matmul_describe(op, what, sizeof what);
    if (tried_both)
      snprintf(what + used, sizeof what - used, "; C passed as NULL and as D both refused");
    return lt_fail("cublasLtMatmul", st, what);
  }
  return GPU_OK;
}

static int lt_matmul_algo_count(const blas_matmul *op) { return op->n_algos; }
static int lt_matmul_algo_index(const blas_matmul *op) { return op->d.algo_index; }
static size_t lt_matmul_workspace(const blas_matmul *op) { return op->d.workspace_bytes; }

static void lt_matmul_destroy(blas_matmul *op) {
  if (!op) return;
  const gpu_backend *be = gpu_cuda_backend();
  if (op->workspace) be->mem_free(op->workspace);
  if (op->scales) be->mem_free(op->scales);
  if (op->la) lt.layout_destroy(op->la);
  if (op->lb) lt.layout_destroy(op->lb);
  if (op->lc) lt.layout_destroy(op->lc);
  if (op->desc) lt.desc_destroy(op->desc);
  free(op);
}

extern const gpu_blas gpu_cuda_blas; /* cuda.c's backend table points here */
const gpu_blas gpu_cuda_blas = {
  .lib = {.name = "cuBLASLt", .init = lt_init, .version = lt_version},
  .matmul_create = lt_matmul_create,
  .matmul_run = lt_matmul_run,
  .matmul_algo_count = lt_matmul_algo_count,
  .matmul_algo_index = lt_matmul_algo_index,
  .matmul_workspace = lt_matmul_workspace,
  .matmul_describe = lt_matmul_describe,
  .matmul_destroy = lt_matmul_destroy,
};
