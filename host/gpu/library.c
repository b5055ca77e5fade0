/* library.c: the vendor libraries of the backend in use (gpu_library in gpu.h), found through one
 * descriptor per kind, so blas.c and dnn.c need not each say how a missing one is reported. */
#include <stddef.h>

#include "blas.h"
#include "dnn.h"
#include "gpu.h"

static const gpu_library *blas_of(const gpu_backend *b) { return b->blas ? &b->blas->lib : NULL; }
static const gpu_library *dnn_of(const gpu_backend *b) { return b->dnn ? &b->dnn->lib : NULL; }

static const struct {
  const char *prefix; /* of the message: the calls' prefix */
  const char *what;   /* the kind in words */
  const gpu_library *(*of)(const gpu_backend *b);
} kinds[GPU_NLIBRARY_KINDS] = {
  [GPU_LIB_BLAS] = {"blas", "BLAS", blas_of},
  [GPU_LIB_DNN] = {"dnn", "DNN", dnn_of},
};

const gpu_library *gpu_library_get(gpu_library_kind k, gpu_status *st) {
  const gpu_backend *b = gpu_backend_get();
  const gpu_library *l = kinds[k].of(b);
  if (l == NULL) {
    *st = gpu_set_error(GPU_ERR_NO_LIBRARY, "%s: the %s backend has no %s library", kinds[k].prefix, b->name,
                        kinds[k].what);
    return NULL;
  }
  *st = GPU_OK;
  return l;
}

gpu_status gpu_library_init(gpu_library_kind k) {
  gpu_status st;
  const gpu_library *l = gpu_library_get(k, &st);
  return l ? l->init() : st;
}

gpu_status gpu_library_version(gpu_library_kind k, size_t *version, char *path, size_t path_len) {
  gpu_status st;
  const gpu_library *l = gpu_library_get(k, &st);
  return l ? l->version(version, path, path_len) : st;
}
