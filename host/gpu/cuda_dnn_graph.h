/* cuda_dnn_graph.h: what the cuDNN graphs of cuda_dnn.c (batch norm), cuda_dnn_sdpa.c (attention)
 * and cuda_dnn_conv.c (convolution, and pooling through the legacy API) share, in cuda_dnn_graph.c: a dnn_graph under construction keeps every backend
 * descriptor it made (destroyed with it), its operations, the engine chosen for them (the
 * heuristic's ranking, the first whose execution plan finalises), the tensors the variant pack
 * binds (device buffers and by-value host scalars), the workspace. Only cuda_dnn*.c include it. */
#ifndef TB_CUDA_DNN_GRAPH_H
#define TB_CUDA_DNN_GRAPH_H

#include "cuda_dnn_lib.h"
#include "dnn.h"

#define DNN_MAX_DESCS 96 /* tensors, operations and their helpers (the attention graph: ~45) */
#define DNN_MAX_OPS 24
#define DNN_MAX_IO 8 /* tensors the variant pack binds */

enum { DG_VIRTUAL = 1, DG_BY_VALUE = 2 };

struct dnn_graph {
  char problem[384]; /* what the graph computes: "batch norm (training) of x (N, C) fp16, ..." */
  char layout[640];  /* the problem as cuDNN gets it (dims, strides, types): describe() */
  tb_cudnnBackendDescriptor_t descs[DNN_MAX_DESCS];
  int n_descs;
  tb_cudnnBackendDescriptor_t ops[DNN_MAX_OPS];
  int n_ops;
  tb_cudnnBackendDescriptor_t graph, plan, pack;
  dnn_engine engine;
  gpu_ptr workspace;
  int n_io;
  int64_t io_uid[DNN_MAX_IO];
  gpu_ptr io_dev[DNN_MAX_IO]; /* 0 for a by-value scalar */
  _Alignas(16) float io_value[DNN_MAX_IO]; /* the by-value scalars the variant pack points at */
  int bound;
  /* A legacy-API call instead of a plan (pooling): run on the handle (its stream set), and what
   * frees its descriptors; the engine's legacy_api names it. */
  gpu_status (*legacy_run)(dnn_graph *g, tb_cudnnHandle_t handle);
  void (*legacy_destroy)(dnn_graph *g);
  void *legacy_desc[4];
  gpu_ptr legacy_io[2];
};

/* A failing cuDNN call returns cudnn_fail(api, status, what) from the function it is in. */
#define DG_CHECK(call, api, what)                                          \
  do {                                                                     \
    tb_cudnnStatus_t st_ = (call);                                         \
    if (st_ != TB_CUDNN_STATUS_SUCCESS) return cudnn_fail(api, st_, what); \
  } while (0)

int dg_cudnn_type(dnn_type t);

/* A new empty graph (calloc) with problem set; NULL when out of host memory. */
dnn_graph *dg_new(const char *problem);
/* Creates a backend descriptor of type and records it for destruction. */
gpu_status dg_desc(dnn_graph *g, int type, tb_cudnnBackendDescriptor_t *out, const char *type_name, const char *what);
/* A finalized tensor descriptor: nd dims and strides, a unique id, 16-byte alignment, virtual or
 * by value (flags). A non-virtual tensor is also entered in the variant pack: by value with
 * *value (copied into the graph), else with device pointer dev (0 for a probe). */
gpu_status dg_tensor(dnn_graph *g, tb_cudnnBackendDescriptor_t *out, const char *name, int64_t uid, int cudnn_type,
                     int nd, const int64_t *dims, const int64_t *strides, int flags, gpu_ptr dev, float value);
/* Finalizes op (what names it in messages) and appends it to the graph's operations. */
gpu_status dg_add_op(dnn_graph *g, tb_cudnnBackendDescriptor_t op, const char *api, const char *what);
/* The operation graph over the operations added, then the engine: the heuristic's configurations
 * (instant mode, fallback when instant offers none) tried in rank order, the first whose execution
 * plan finalises kept; GPU_ERR_INVALID "cuDNN offers no engine for <problem>: ..." when none does. */
gpu_status dg_build(dnn_graph *g, tb_cudnnHandle_t handle);
/* Allocates the workspace and makes the variant pack from the tensors entered (all with buffers). */
gpu_status dg_bind(dnn_graph *g);
/* "cuDNN <layout>; engine E, knobs {...}, heuristic choice R of N, workspace W B" */
size_t dg_describe(const dnn_graph *g, char *buf, size_t len);
gpu_status dg_run(dnn_graph *g, gpu_stream s);
void dg_destroy(dnn_graph *g);
/* The creates of the graphs other than batch norm's (the gpu_dnn table is cuda_dnn.c's). */
gpu_status cuda_dnn_sdpa_create(dnn_graph **out, const dnn_sdpa_desc *d); /* cuda_dnn_sdpa.c */
gpu_status cuda_dnn_conv_create(dnn_graph **out, const dnn_conv_desc *d); /* cuda_dnn_conv.c */
gpu_status cuda_dnn_pool_create(dnn_graph **out, const dnn_pool_desc *d); /* cuda_dnn_conv.c */

/* Finishes a create: on failure frees g keeping the error message; on success *out = g. */
gpu_status dg_finish(dnn_graph *g, gpu_status st, dnn_graph **out);

#endif
