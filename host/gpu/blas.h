/* blas.h: the vendor BLAS's matmuls for the `lib` baselines and `tilebench peaks`, as a table each
 * backend fills (gpu_backend.blas; CUDA: cuBLASLt in cuda_blas.c, opened with dlopen on first use)
 * and the blas_* calls that dispatch to the backend in use (blas.c). No Lua header is included.
 *
 * A blas_matmul is one prepared problem: descriptors, the heuristic's algorithm list, a
 * workspace and (for fp8) device scale factors of 1.0, all made once; blas_matmul_run only
 * enqueues the library's matmul on a stream, so a launch plan can replay it with no set-up cost. */
#ifndef TB_BLAS_H
#define TB_BLAS_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"

typedef enum blas_type { BLAS_F32 = 0, BLAS_F16, BLAS_BF16, BLAS_E4M3, BLAS_I8, BLAS_I32 } blas_type;

typedef enum blas_compute {
  BLAS_COMPUTE_F32 = 0,  /* fp32 accumulate, full fp32 for fp32 inputs */
  BLAS_COMPUTE_TF32,     /* fp32 inputs rounded to TF32 on the tensor cores, fp32 accumulate */
  BLAS_COMPUTE_F16,      /* fp16 accumulate (fp16 inputs only) */
  BLAS_COMPUTE_I32       /* int8 inputs, int32 accumulate and output */
} blas_compute;

typedef struct blas_matmul_desc {
  int64_t m, n, k;          /* C (m, n) = A (m, k) @ B (k, n) */
  int64_t batch;            /* >= 1 */
  int64_t stride_a, stride_b, stride_c; /* elements between batch entries */
  int row_major;            /* 1: A, B, C row-major (PyTorch); 0: column-major (BLAS) */
  int b_transposed;         /* 1: the b buffer holds B^T, i.e. B in the other major order */
  blas_type ab_type, c_type;
  blas_compute compute;
  int fast_accum;           /* fp8: accumulate in the tensor cores' fast (reduced) precision */
  int algo_index;           /* 0-based index into the heuristic's list */
  size_t workspace_bytes;
  gpu_ptr a, b, c;
} blas_matmul_desc;

typedef struct blas_matmul blas_matmul;

/* A backend's BLAS: the operations below, with the same contracts. */
typedef struct gpu_blas {
  gpu_library lib; /* name ("cuBLASLt"), init, version (gpu.h) */
  gpu_status (*matmul_create)(blas_matmul **out, const blas_matmul_desc *d);
  gpu_status (*matmul_run)(blas_matmul *op, gpu_stream s);
  int (*matmul_algo_count)(const blas_matmul *op);
  int (*matmul_algo_index)(const blas_matmul *op);
  size_t (*matmul_workspace)(const blas_matmul *op);
  size_t (*matmul_describe)(const blas_matmul *op, char *buf, size_t len);
  void (*matmul_destroy)(blas_matmul *op);
} gpu_blas;

/* Opens the backend's BLAS library (GPU_ERR_NO_LIBRARY naming it and every place searched when
 * absent, or saying the backend has none). */
gpu_status blas_init(void);
/* The library's version (cuBLASLt: cublasLtGetVersion(), e.g. 130000) and where it was found. */
gpu_status blas_version(size_t *version, char *path, size_t path_len);

/* Builds descriptors, asks the heuristic for its algorithms (GPU_ERR_INVALID when none applies
 * or algo_index is past the list), allocates the workspace. *out is NULL on failure. */
gpu_status blas_matmul_create(blas_matmul **out, const blas_matmul_desc *d);
/* Enqueues the matmul on s (asynchronous); a plan step (tb_native_run_fn). */
gpu_status blas_matmul_run(blas_matmul *op, gpu_stream s);
int blas_matmul_algo_count(const blas_matmul *op);
int blas_matmul_algo_index(const blas_matmul *op);
size_t blas_matmul_workspace(const blas_matmul *op);
/* Writes what the library is given (operand buffers, shapes, ops, leading dimensions, strides, types,
 * compute and scale types, fp8 scale pointers and fast accumulation, how C is bound, pointer
 * alignments, the algorithm and its alignment needs) into buf; returns the length written. */
size_t blas_matmul_describe(const blas_matmul *op, char *buf, size_t len);
/* Frees everything; NULL is fine. */
void blas_matmul_destroy(blas_matmul *op);

const char *blas_type_name(blas_type t);

#endif
