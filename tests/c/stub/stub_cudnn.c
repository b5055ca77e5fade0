/* stub_cudnn.c: a stand-in libcudnn.so.9 for tests/c/test_dnn.c (no GPU, no cuDNN needed). It
 * implements the backend-API entry points cuda_dnn.c calls and checks what cuDNN checks at
 * finalize for the batch-norm graph: every tensor has a data type, dimensions, strides and a
 * unique id; the norm operation is batch norm in the training phase with all seven tensors
 * linked and finalized; graph, heuristic, plan and variant pack have what they need. Its state
 * (stub_cudnn_state) says what it was given; the test sets how many engine configurations the
 * heuristic offers and how many of the first are refused. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cudnn_abi.h"

#define MAX_LINKS 16

typedef struct desc {
  int type, finalized;
  int has_dtype, has_dims, has_strides, has_uid, by_value;
  int dtype;
  int64_t uid, dims[4], strides[4];
  int mode, phase, heur_mode, has_handle;
  struct desc *links[MAX_LINKS]; /* norm op: by attribute - 2002; graph: ops; plan: cfg */
  int64_t rank;                  /* engine configuration / engine: the heuristic's rank */
  int64_t pack_uids[8];
  void *pack_ptrs[8];
  int pack_n, has_workspace;
} desc;

/* What the test reads and sets (found with dlsym). */
struct stub_cudnn_state {
  int configs, refuse;       /* heuristic results; the first `refuse` plans do not finalize */
  int create_status;         /* what cudnnCreate returns */
  int live;                  /* descriptors not yet destroyed */
  int executed;
  void *stream;
  int x_dtype, scale_dtype, mean_dtype;
  int64_t x_dims[4], x_strides[4], scale_dims[4];
  int eps_by_value;
  float eps_seen;
  char last_error[256];
} stub_cudnn_state = {.configs = 3};

#define FAIL(code, ...) do { snprintf(stub_cudnn_state.last_error, sizeof stub_cudnn_state.last_error, \
                                      __VA_ARGS__); return code; } while (0)
#define BAD 2000

size_t cudnnGetVersion(void) { return 91900; }
const char *cudnnGetErrorString(tb_cudnnStatus_t st) {
  return st == 0 ? "CUDNN_STATUS_SUCCESS" : st == 3000 ? "CUDNN_STATUS_NOT_SUPPORTED"
       : st == 1008 ? "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED" : "CUDNN_STATUS_BAD_PARAM";
}
void cudnnGetLastErrorString(char *m, size_t n) {
  snprintf(m, n, "%s", stub_cudnn_state.last_error);
  stub_cudnn_state.last_error[0] = '\0';
}
static int handle_storage;
tb_cudnnStatus_t cudnnCreate(tb_cudnnHandle_t *h) {
  if (stub_cudnn_state.create_status) FAIL(stub_cudnn_state.create_status, "stub: libcudnn_graph.so.9 not loaded");
  *h = (tb_cudnnHandle_t)&handle_storage;
  return 0;
}
tb_cudnnStatus_t cudnnDestroy(tb_cudnnHandle_t h) { return h ? 0 : BAD; }
tb_cudnnStatus_t cudnnSetStream(tb_cudnnHandle_t h, void *s) { stub_cudnn_state.stream = s; return 0; }

tb_cudnnStatus_t cudnnBackendCreateDescriptor(int type, tb_cudnnBackendDescriptor_t *d) {
  desc *x = calloc(1, sizeof *x);
  x->type = type;
  stub_cudnn_state.live++;
  *d = x;
  return 0;
}

tb_cudnnStatus_t cudnnBackendDestroyDescriptor(tb_cudnnBackendDescriptor_t d) {
  if (!d) FAIL(BAD, "destroy NULL");
  free(d);
  stub_cudnn_state.live--;
  return 0;
}

tb_cudnnStatus_t cudnnBackendSetAttribute(tb_cudnnBackendDescriptor_t dd, int name, int type, int64_t n,
                                          const void *v) {
  desc *d = dd;
  if (d->finalized) FAIL(BAD, "set on a finalized descriptor");
  const int64_t *i64 = v;
  switch (name) {
    case TB_CUDNN_ATTR_TENSOR_DATA_TYPE: d->dtype = *(const int *)v; d->has_dtype = type == TB_CUDNN_TYPE_DATA_TYPE; break;
    case TB_CUDNN_ATTR_TENSOR_DIMENSIONS: if (n != 4) FAIL(BAD, "dims"); memcpy(d->dims, i64, 32); d->has_dims = 1; break;
    case TB_CUDNN_ATTR_TENSOR_STRIDES: if (n != 4) FAIL(BAD, "strides"); memcpy(d->strides, i64, 32); d->has_strides = 1; break;
    case TB_CUDNN_ATTR_TENSOR_UNIQUE_ID: d->uid = *i64; d->has_uid = 1; break;
    case TB_CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT: break;
    case TB_CUDNN_ATTR_TENSOR_IS_BY_VALUE: d->by_value = *(const _Bool *)v; break;
    case TB_CUDNN_ATTR_OPERATION_NORM_FWD_MODE: d->mode = *(const int *)v; break;
    case TB_CUDNN_ATTR_OPERATION_NORM_FWD_PHASE: d->phase = *(const int *)v; break;
    case TB_CUDNN_ATTR_OPERATIONGRAPH_HANDLE: case TB_CUDNN_ATTR_EXECUTION_PLAN_HANDLE: d->has_handle = 1; break;
    case TB_CUDNN_ATTR_OPERATIONGRAPH_OPS: case TB_CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
    case TB_CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
      if (n != 1 || type != TB_CUDNN_TYPE_BACKEND_DESCRIPTOR) FAIL(BAD, "one descriptor expected");
      d->links[0] = *(desc *const *)v;
      break;
    case TB_CUDNN_ATTR_ENGINEHEUR_MODE: d->heur_mode = *(const int *)v; break;
    case TB_CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: d->pack_n = (int)n; memcpy(d->pack_uids, v, (size_t)n * 8); break;
    case TB_CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS: memcpy(d->pack_ptrs, v, (size_t)n * sizeof(void *)); break;
    case TB_CUDNN_ATTR_VARIANT_PACK_WORKSPACE: d->has_workspace = 1; break;
    default:
      if (name >= TB_CUDNN_ATTR_OPERATION_NORM_FWD_XDESC && name <= TB_CUDNN_ATTR_OPERATION_NORM_FWD_YDESC) {
        if (type != TB_CUDNN_TYPE_BACKEND_DESCRIPTOR) FAIL(BAD, "tensor link type");
        d->links[name - TB_CUDNN_ATTR_OPERATION_NORM_FWD_XDESC] = *(desc *const *)v;
        break;
      }
      FAIL(BAD, "stub: attribute %d not known", name);
  }
  return 0;
}

static tb_cudnnStatus_t finalize_norm(desc *d) {
  static const int needed[] = {0, 1, 2, 3, 4, 5, 11}; /* x, mean, inv_var, scale, bias, eps, y */
  if (d->mode != TB_CUDNN_BATCH_NORM || d->phase != TB_CUDNN_NORM_FWD_TRAINING) FAIL(BAD, "mode/phase");
  for (int i = 0; i < 7; i++)
    if (!d->links[needed[i]] || !d->links[needed[i]]->finalized) FAIL(BAD, "norm tensor %d missing", needed[i]);
  desc *x = d->links[0], *y = d->links[11], *scale = d->links[3], *mean = d->links[1], *eps = d->links[5];
  if (memcmp(x->dims, y->dims, 32) || memcmp(x->strides, y->strides, 32)) FAIL(BAD, "x and y differ");
  if (scale->dims[1] != x->dims[1]) FAIL(BAD, "scale is not per channel");
  stub_cudnn_state.x_dtype = x->dtype;
  stub_cudnn_state.scale_dtype = scale->dtype;
  stub_cudnn_state.mean_dtype = mean->dtype;
  memcpy(stub_cudnn_state.x_dims, x->dims, 32);
  memcpy(stub_cudnn_state.x_strides, x->strides, 32);
  memcpy(stub_cudnn_state.scale_dims, scale->dims, 32);
  stub_cudnn_state.eps_by_value = eps->by_value;
  return 0;
}

tb_cudnnStatus_t cudnnBackendFinalize(tb_cudnnBackendDescriptor_t dd) {
  desc *d = dd;
  switch (d->type) {
    case TB_CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      if (!d->has_dtype || !d->has_dims || !d->has_strides || !d->has_uid) FAIL(BAD, "tensor incomplete");
      break;
    case TB_CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: {
      tb_cudnnStatus_t st = finalize_norm(d);
      if (st) return st;
      break;
    }
    case TB_CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (!d->has_handle || !d->links[0] || !d->links[0]->finalized) FAIL(BAD, "graph incomplete");
      break;
    case TB_CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      if (!d->links[0] || !d->links[0]->finalized) FAIL(BAD, "heuristic without a graph");
      break;
    case TB_CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      if (!d->has_handle || !d->links[0]) FAIL(BAD, "plan incomplete");
      if (d->links[0]->rank < stub_cudnn_state.refuse)
        FAIL(TB_CUDNN_STATUS_NOT_SUPPORTED, "stub: engine %lld refused", (long long)d->links[0]->rank);
      break;
    case TB_CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      if (d->pack_n != 7 || !d->has_workspace) FAIL(BAD, "variant pack incomplete");
      for (int i = 0; i < 7; i++)
        if (d->pack_uids[i] == 3) stub_cudnn_state.eps_seen = *(const float *)d->pack_ptrs[i];
      break;
    default: break;
  }
  d->finalized = 1;
  return 0;
}

tb_cudnnStatus_t cudnnBackendGetAttribute(tb_cudnnBackendDescriptor_t dd, int name, int type, int64_t want,
                                          int64_t *count, void *out) {
  desc *d = dd;
  if (!d->finalized && d->type != TB_CUDNN_BACKEND_ENGINE_DESCRIPTOR && d->type != TB_CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)
    FAIL(BAD, "get on an unfinalized descriptor");
  desc **descs = out;
  switch (name) {
    case TB_CUDNN_ATTR_ENGINEHEUR_RESULTS:
      *count = want < stub_cudnn_state.configs ? want : stub_cudnn_state.configs;
      if (want == 0) *count = stub_cudnn_state.configs;
      for (int64_t i = 0; i < *count && want > 0; i++) { descs[i]->rank = i; descs[i]->finalized = 1; }
      return 0;
    case TB_CUDNN_ATTR_ENGINECFG_ENGINE: descs[0]->rank = 100 + d->rank; *count = 1; return 0;
    case TB_CUDNN_ATTR_ENGINE_GLOBAL_INDEX: *(int64_t *)out = d->rank; *count = 1; return 0;
    case TB_CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
      *count = 2;
      descs[0]->rank = 3; descs[0]->mode = (int)d->rank;
      descs[1]->rank = 5; descs[1]->mode = 2;
      return 0;
    case TB_CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE: *(int *)out = (int)d->rank; *count = 1; return 0;
    case TB_CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE: *(int64_t *)out = d->mode; *count = 1; return 0;
    case TB_CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: *(int64_t *)out = 0; *count = 1; return 0;
    default: FAIL(BAD, "stub: get %d not known", name);
  }
}

tb_cudnnStatus_t cudnnBackendExecute(tb_cudnnHandle_t h, tb_cudnnBackendDescriptor_t plan,
                                     tb_cudnnBackendDescriptor_t pack) {
  if (!((desc *)plan)->finalized || !((desc *)pack)->finalized) FAIL(BAD, "execute unfinalized");
  stub_cudnn_state.executed++;
  return 0;
}
