/* blas.c: the blas_* calls, dispatched to the BLAS table of the backend in use (blas.h). A
 * blas_matmul is made and run by one backend: the process's backend never changes after its
 * first GPU call. */
#include "blas.h"

#include <stddef.h>

static const gpu_blas *table(gpu_status *st) { return (const gpu_blas *)gpu_library_get(GPU_LIB_BLAS, st); }

gpu_status blas_init(void) { return gpu_library_init(GPU_LIB_BLAS); }

gpu_status blas_version(size_t *version, char *path, size_t path_len) {
  return gpu_library_version(GPU_LIB_BLAS, version, path, path_len);
}

gpu_status blas_matmul_create(blas_matmul **out, const blas_matmul_desc *d) {
  gpu_status st;
  const gpu_blas *t = table(&st); /* lib is its first member */
  *out = NULL;
  return t ? t->matmul_create(out, d) : st;
}

/* The calls below take a blas_matmul, which only exists where create found a table. */
gpu_status blas_matmul_run(blas_matmul *op, gpu_stream s) { return gpu_backend_get()->blas->matmul_run(op, s); }
int blas_matmul_algo_count(const blas_matmul *op) { return gpu_backend_get()->blas->matmul_algo_count(op); }
int blas_matmul_algo_index(const blas_matmul *op) { return gpu_backend_get()->blas->matmul_algo_index(op); }
size_t blas_matmul_workspace(const blas_matmul *op) { return gpu_backend_get()->blas->matmul_workspace(op); }

size_t blas_matmul_describe(const blas_matmul *op, char *buf, size_t len) {
  return gpu_backend_get()->blas->matmul_describe(op, buf, len);
}

void blas_matmul_destroy(blas_matmul *op) {
  if (op) gpu_backend_get()->blas->matmul_destroy(op);
}

const char *blas_type_name(blas_type t) {
  static const char *const names[] = {"fp32", "fp16", "bf16", "fp8_e4m3", "int8", "int32"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}
