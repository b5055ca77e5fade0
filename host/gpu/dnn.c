/* dnn.c: the dnn_* calls, dispatched to the DNN table of the backend in use (dnn.h). A
 * dnn_graph is made and run by one backend: the process's backend never changes after its
 * first GPU call. */
#include "dnn.h"

#include <stddef.h>

static const gpu_dnn *table(gpu_status *st) { return (const gpu_dnn *)gpu_library_get(GPU_LIB_DNN, st); }

gpu_status dnn_init(void) { return gpu_library_init(GPU_LIB_DNN); }

gpu_status dnn_version(size_t *version, char *path, size_t path_len) {
  return gpu_library_version(GPU_LIB_DNN, version, path, path_len);
}

/* Each create: the backend's table, or its absence said; *out is NULL on failure. */
#define DISPATCH_CREATE(name, slot, desc_type)                \
  gpu_status name(dnn_graph **out, const desc_type *d) {     \
    gpu_status st;                                           \
    const gpu_dnn *t = table(&st);                           \
    *out = NULL;                                             \
    return t ? t->slot(out, d) : st;                         \
  }

DISPATCH_CREATE(dnn_batchnorm_create, batchnorm_create, dnn_batchnorm_desc)
DISPATCH_CREATE(dnn_sdpa_create, sdpa_create, dnn_sdpa_desc)
DISPATCH_CREATE(dnn_conv_create, conv_create, dnn_conv_desc)
DISPATCH_CREATE(dnn_pool_create, pool_create, dnn_pool_desc)

/* The calls below take a dnn_graph, which only exists where create found a table. */
gpu_status dnn_graph_run(dnn_graph *g, gpu_stream s) { return gpu_backend_get()->dnn->run(g, s); }
void dnn_graph_engine(const dnn_graph *g, dnn_engine *e) { gpu_backend_get()->dnn->engine(g, e); }

size_t dnn_graph_describe(const dnn_graph *g, char *buf, size_t len) {
  return gpu_backend_get()->dnn->describe(g, buf, len);
}

void dnn_graph_destroy(dnn_graph *g) {
  if (g) gpu_backend_get()->dnn->destroy(g);
}

const char *dnn_type_name(dnn_type t) {
  static const char *const names[] = {"fp32", "fp16", "bf16"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}
