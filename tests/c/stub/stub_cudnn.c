/* stub_cudnn.c: a stand-in libcudnn.so.9 for tests/c/test_dnn.c (no GPU, no cuDNN needed). It
 * implements the backend-API entry points cuda_dnn*.c call and checks at finalize what cuDNN
 * checks of the graphs tilebench builds: every tensor has a data type, dimensions, strides and a
 * unique id; the norm operation is batch norm in the training phase with its seven tensors; a
 * pointwise operation has its mode, precision (and GEN_INDEX's axis), the inputs its mode takes
 * (b for binary ones, t for BINARY_SELECT) with shapes that broadcast to y's; a reduction's y is x
 * with some dimensions 1; a matmul's A (.., m, k), B (.., k, n) and C (.., m, n) agree; a graph's
 * unique ids are unique and each virtual tensor is produced by exactly one of its operations; an
 * execution's variant pack binds exactly the graph's non-virtual tensors. It writes the graph it
 * was given as text (stub_cudnn_state.graph_text) so the test compares it with the graph meant,
 * and records the by-value scalars of each execution. The test sets how many engine
 * configurations the heuristic offers and how many of the first are refused; $STUB_CUDNN_VERSION
 * the version it reports.
 *
 * Convolution forward: the descriptor needs its compute type, mode, spatial dimensions and a value
 * for each of them in dilations, strides and paddings; the operation checks that x, w and y agree
 * (groups = x's channels / w's, y's spatial sizes from the formula) and that alpha is 1 and beta 0;
 * an execution over fp32 tensors computes the convolution on the host through the pack's pointers,
 * so the test checks the result, not only the descriptors. The legacy pooling API likewise
 * computes max pooling of fp32 NCHW data on the host, honouring the NaN option as cuDNN documents
 * it (propagate: a NaN in the window gives NaN; else NaNs are skipped). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cudnn_abi.h"
#include "stub_cudnn.h"

#define MAX_OPS 32

enum { L_DESC, L_X, L_B, L_T, L_Y, L_A, L_C, L_W, L_N }; /* an operation's links by role */

typedef struct desc {
  int type, finalized;
  /* tensor */
  int has_dtype, has_dims, has_strides, has_uid, by_value, is_virtual, nd;
  int dtype;
  int64_t uid, dims[8], strides[8];
  /* norm op, pointwise / reduction / matmul descriptors */
  int mode, phase, heur_mode, has_handle, has_mode, prec, has_prec, has_axis;
  int64_t axis;
  struct desc *links[MAX_OPS]; /* norm op: by attribute - 2002; graph: ops; heuristic, plan: one */
  int n_links;
  struct desc *role[L_N];      /* pointwise, reduction, matmul operations */
  struct desc *graph;          /* engine configuration: the graph the heuristic ranked it for */
  int64_t rank;                /* engine configuration / engine: the heuristic's rank */
  int64_t pack_uids[16];
  void *pack_ptrs[16];
  int pack_n, has_workspace;
  /* convolution descriptor: spatial dims and the vectors set (dilations, strides, pre, post) */
  int64_t sd, conv_vec[4][8], conv_vec_n[4];
  /* convolution operation: alpha and beta */
  float alpha, beta;
  int has_alpha, has_beta;
} desc;

struct stub_cudnn_state stub_cudnn_state = {.configs = 3};

#define FAIL(code, ...) do { snprintf(stub_cudnn_state.last_error, sizeof stub_cudnn_state.last_error, \
                                      __VA_ARGS__); return code; } while (0)
#define BAD 2000

/* 9.19.0, or $STUB_CUDNN_VERSION: a cuDNN too old (8.9) or too new for tilebench */
size_t cudnnGetVersion(void) {
  const char *v = getenv("STUB_CUDNN_VERSION");
  return v && *v ? (size_t)strtoul(v, NULL, 10) : 91900;
}
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
tb_cudnnStatus_t cudnnSetStream(tb_cudnnHandle_t h, void *s) { (void)h; stub_cudnn_state.stream = s; return 0; }

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

/* The role an operation attribute links, or -1. */
static int role_of(int name) {
  switch (name) {
    case TB_CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR: case TB_CUDNN_ATTR_OPERATION_REDUCTION_DESC:
    case TB_CUDNN_ATTR_OPERATION_MATMUL_DESC: return L_DESC;
    case TB_CUDNN_ATTR_OPERATION_POINTWISE_XDESC: case TB_CUDNN_ATTR_OPERATION_REDUCTION_XDESC: return L_X;
    case TB_CUDNN_ATTR_OPERATION_POINTWISE_BDESC: case TB_CUDNN_ATTR_OPERATION_MATMUL_BDESC: return L_B;
    case TB_CUDNN_ATTR_OPERATION_POINTWISE_TDESC: return L_T;
    case TB_CUDNN_ATTR_OPERATION_POINTWISE_YDESC: case TB_CUDNN_ATTR_OPERATION_REDUCTION_YDESC: return L_Y;
    case TB_CUDNN_ATTR_OPERATION_MATMUL_ADESC: return L_A;
    case TB_CUDNN_ATTR_OPERATION_MATMUL_CDESC: return L_C;
    case TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC: return L_DESC;
    case TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X: return L_X;
    case TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W: return L_W;
    case TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y: return L_Y;
    default: return -1;
  }
}

tb_cudnnStatus_t cudnnBackendSetAttribute(tb_cudnnBackendDescriptor_t dd, int name, int type, int64_t n,
                                          const void *v) {
  desc *d = dd;
  if (d->finalized) FAIL(BAD, "set on a finalized descriptor");
  const int64_t *i64 = v;
  int role = role_of(name);
  if (role >= 0) {
    if (n != 1 || type != TB_CUDNN_TYPE_BACKEND_DESCRIPTOR) FAIL(BAD, "attribute %d: one descriptor expected", name);
    d->role[role] = *(desc *const *)v;
    return 0;
  }
  switch (name) {
    case TB_CUDNN_ATTR_TENSOR_DATA_TYPE: d->dtype = *(const int *)v; d->has_dtype = type == TB_CUDNN_TYPE_DATA_TYPE; break;
    case TB_CUDNN_ATTR_TENSOR_DIMENSIONS:
      if (n < 1 || n > 8 || type != TB_CUDNN_TYPE_INT64) FAIL(BAD, "dims");
      memcpy(d->dims, i64, (size_t)n * 8); d->nd = (int)n; d->has_dims = 1; break;
    case TB_CUDNN_ATTR_TENSOR_STRIDES:
      if (n != d->nd || type != TB_CUDNN_TYPE_INT64) FAIL(BAD, "strides: %lld for %d dims", (long long)n, d->nd);
      memcpy(d->strides, i64, (size_t)n * 8); d->has_strides = 1; break;
    case TB_CUDNN_ATTR_TENSOR_UNIQUE_ID: d->uid = *i64; d->has_uid = 1; break;
    case TB_CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT: break;
    case TB_CUDNN_ATTR_TENSOR_IS_BY_VALUE: d->by_value = *(const _Bool *)v; break;
    case TB_CUDNN_ATTR_TENSOR_IS_VIRTUAL:
      if (type != TB_CUDNN_TYPE_BOOLEAN) FAIL(BAD, "is_virtual type");
      d->is_virtual = *(const _Bool *)v;
      break;
    case TB_CUDNN_ATTR_OPERATION_NORM_FWD_MODE: d->mode = *(const int *)v; break;
    case TB_CUDNN_ATTR_OPERATION_NORM_FWD_PHASE: d->phase = *(const int *)v; break;
    case TB_CUDNN_ATTR_POINTWISE_MODE: case TB_CUDNN_ATTR_REDUCTION_OPERATOR:
      if (type != (name == TB_CUDNN_ATTR_POINTWISE_MODE ? TB_CUDNN_TYPE_POINTWISE_MODE
                                                        : TB_CUDNN_TYPE_REDUCTION_OPERATOR_TYPE)) FAIL(BAD, "mode type");
      d->mode = *(const int *)v; d->has_mode = 1; break;
    case TB_CUDNN_ATTR_POINTWISE_MATH_PREC: case TB_CUDNN_ATTR_REDUCTION_COMP_TYPE: case TB_CUDNN_ATTR_MATMUL_COMP_TYPE:
      if (type != TB_CUDNN_TYPE_DATA_TYPE) FAIL(BAD, "precision type");
      d->prec = *(const int *)v; d->has_prec = 1; break;
    case TB_CUDNN_ATTR_POINTWISE_AXIS:
      if (type != TB_CUDNN_TYPE_INT64) FAIL(BAD, "axis type");
      d->axis = *i64;
      d->has_axis = 1;
      break;
    case TB_CUDNN_ATTR_OPERATIONGRAPH_HANDLE: case TB_CUDNN_ATTR_EXECUTION_PLAN_HANDLE: d->has_handle = 1; break;
    case TB_CUDNN_ATTR_OPERATIONGRAPH_OPS: case TB_CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
    case TB_CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
      if (n < 1 || n > MAX_OPS || type != TB_CUDNN_TYPE_BACKEND_DESCRIPTOR) FAIL(BAD, "descriptors expected");
      if (name != TB_CUDNN_ATTR_OPERATIONGRAPH_OPS && n != 1) FAIL(BAD, "one descriptor expected");
      memcpy(d->links, v, (size_t)n * sizeof(desc *));
      d->n_links = (int)n;
      break;
    case TB_CUDNN_ATTR_ENGINEHEUR_MODE: d->heur_mode = *(const int *)v; break;
    case TB_CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
      if (type != TB_CUDNN_TYPE_DATA_TYPE) FAIL(BAD, "convolution compute type type");
      d->prec = *(const int *)v; d->has_prec = 1; break;
    case TB_CUDNN_ATTR_CONVOLUTION_CONV_MODE:
      if (type != TB_CUDNN_TYPE_CONVOLUTION_MODE) FAIL(BAD, "convolution mode type");
      d->mode = *(const int *)v; d->has_mode = 1; break;
    case TB_CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
      if (type != TB_CUDNN_TYPE_INT64 || n != 1) FAIL(BAD, "spatial dims: one int64");
      d->sd = *i64; break;
    case TB_CUDNN_ATTR_CONVOLUTION_DILATIONS: case TB_CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
    case TB_CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS: case TB_CUDNN_ATTR_CONVOLUTION_POST_PADDINGS: {
      int k = name == TB_CUDNN_ATTR_CONVOLUTION_DILATIONS ? 0 : name == TB_CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES ? 1
            : name == TB_CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS ? 2 : 3;
      if (type != TB_CUDNN_TYPE_INT64 || n < 1 || n > 8) FAIL(BAD, "convolution vector %d", name);
      memcpy(d->conv_vec[k], i64, (size_t)n * 8);
      d->conv_vec_n[k] = n;
      break;
    }
    case TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA: case TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA:
      if (type != TB_CUDNN_TYPE_FLOAT || n != 1) FAIL(BAD, "alpha/beta: one float for fp32 compute");
      if (name == TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA) { d->alpha = *(const float *)v; d->has_alpha = 1; }
      else { d->beta = *(const float *)v; d->has_beta = 1; }
      break;
    case TB_CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
      if (n > 16) FAIL(BAD, "pack too big");
      d->pack_n = (int)n;
      memcpy(d->pack_uids, v, (size_t)n * 8);
      break;
    case TB_CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
      if (n != d->pack_n) FAIL(BAD, "%lld pointers for %d ids", (long long)n, d->pack_n);
      memcpy(d->pack_ptrs, v, (size_t)n * sizeof(void *)); break;
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

static int is_tensor(const desc *t) { return t && t->type == TB_CUDNN_BACKEND_TENSOR_DESCRIPTOR && t->finalized; }

/* b broadcasts to y's shape: each dimension equal or 1. */
static int broadcasts(const desc *b, const desc *y) {
  if (b->nd != y->nd) return 0;
  for (int i = 0; i < b->nd; i++)
    if (b->dims[i] != y->dims[i] && b->dims[i] != 1) return 0;
  return 1;
}

static tb_cudnnStatus_t finalize_pointwise_op(desc *d) {
  desc *pw = d->role[L_DESC], *x = d->role[L_X], *b = d->role[L_B], *t = d->role[L_T], *y = d->role[L_Y];
  if (!pw || pw->type != TB_CUDNN_BACKEND_POINTWISE_DESCRIPTOR || !pw->finalized) FAIL(BAD, "pointwise: no PW_DESCRIPTOR");
  if (!is_tensor(x) || !is_tensor(y)) FAIL(BAD, "pointwise: x and y are needed");
  int m = pw->mode;
  int binary = m == TB_CUDNN_POINTWISE_ADD || m == TB_CUDNN_POINTWISE_MUL || m == TB_CUDNN_POINTWISE_DIV ||
               m == TB_CUDNN_POINTWISE_SUB || m == TB_CUDNN_POINTWISE_CMP_GE || m == TB_CUDNN_POINTWISE_BINARY_SELECT;
  if (binary != (b != NULL)) FAIL(BAD, "pointwise mode %d: b %s", m, b ? "given to a unary mode" : "missing");
  if ((m == TB_CUDNN_POINTWISE_BINARY_SELECT) != (t != NULL)) FAIL(BAD, "pointwise mode %d: t misplaced", m);
  if (b && (!is_tensor(b) || !broadcasts(b, y))) FAIL(BAD, "pointwise mode %d: b does not broadcast to y", m);
  if (t && (!is_tensor(t) || !broadcasts(t, y) || t->dtype != TB_CUDNN_DATA_BOOLEAN))
    FAIL(BAD, "pointwise select: t is not a boolean of y's shape");
  if (!broadcasts(x, y)) FAIL(BAD, "pointwise mode %d: x does not broadcast to y", m);
  if (m == TB_CUDNN_POINTWISE_CMP_GE && y->dtype != TB_CUDNN_DATA_BOOLEAN) FAIL(BAD, "a comparison's y is boolean");
  if (m == TB_CUDNN_POINTWISE_GEN_INDEX && (y->dtype != TB_CUDNN_DATA_INT32 || pw->axis >= y->nd))
    FAIL(BAD, "GEN_INDEX: y int32 and the axis one of its dimensions");
  return 0;
}

static tb_cudnnStatus_t finalize_reduction_op(desc *d) {
  desc *rd = d->role[L_DESC], *x = d->role[L_X], *y = d->role[L_Y];
  if (!rd || rd->type != TB_CUDNN_BACKEND_REDUCTION_DESCRIPTOR || !rd->finalized) FAIL(BAD, "reduction: no DESC");
  if (!is_tensor(x) || !is_tensor(y) || x->nd != y->nd) FAIL(BAD, "reduction: x and y of one rank are needed");
  int reduced = 0;
  for (int i = 0; i < x->nd; i++) {
    if (y->dims[i] != x->dims[i] && y->dims[i] != 1) FAIL(BAD, "reduction: y dimension %d is neither x's nor 1", i);
    reduced += y->dims[i] != x->dims[i];
  }
  if (!reduced) FAIL(BAD, "reduction: nothing reduced");
  return 0;
}

static tb_cudnnStatus_t finalize_matmul_op(desc *d) {
  desc *mm = d->role[L_DESC], *a = d->role[L_A], *b = d->role[L_B], *c = d->role[L_C];
  if (!mm || mm->type != TB_CUDNN_BACKEND_MATMUL_DESCRIPTOR || !mm->finalized) FAIL(BAD, "matmul: no DESC");
  if (!is_tensor(a) || !is_tensor(b) || !is_tensor(c) || a->nd != 4 || b->nd != 4 || c->nd != 4)
    FAIL(BAD, "matmul: 4-d A, B and C are needed");
  for (int i = 0; i < 2; i++)
    if (a->dims[i] != c->dims[i] || b->dims[i] != c->dims[i]) FAIL(BAD, "matmul: batch dimension %d differs", i);
  if (a->dims[2] != c->dims[2] || b->dims[3] != c->dims[3] || a->dims[3] != b->dims[2])
    FAIL(BAD, "matmul: A (.., %lld, %lld) B (.., %lld, %lld) C (.., %lld, %lld) do not agree", (long long)a->dims[2],
         (long long)a->dims[3], (long long)b->dims[2], (long long)b->dims[3], (long long)c->dims[2],
         (long long)c->dims[3]);
  return 0;
}

static tb_cudnnStatus_t finalize_conv_desc(desc *d) {
  if (!d->has_prec || !d->has_mode) FAIL(BAD, "convolution descriptor: compute type and mode");
  if (d->sd < 1 || d->sd > 3) FAIL(BAD, "convolution descriptor: %lld spatial dims", (long long)d->sd);
  for (int k = 0; k < 4; k++)
    if (d->conv_vec_n[k] != d->sd) FAIL(BAD, "convolution descriptor: vector %d has %lld values for %lld dims", k,
                                        (long long)d->conv_vec_n[k], (long long)d->sd);
  return 0;
}

/* y's spatial size i of a convolution op (its descriptor, x and w). */
static int64_t conv_out(const desc *cd, const desc *x, const desc *w, int i) {
  int64_t pad = cd->conv_vec[2][i], post = cd->conv_vec[3][i], str = cd->conv_vec[1][i], dil = cd->conv_vec[0][i];
  return (x->dims[2 + i] + pad + post - dil * (w->dims[2 + i] - 1) - 1) / str + 1;
}

static tb_cudnnStatus_t finalize_conv_op(desc *d) {
  desc *cd = d->role[L_DESC], *x = d->role[L_X], *w = d->role[L_W], *y = d->role[L_Y];
  if (!cd || cd->type != TB_CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR || !cd->finalized) FAIL(BAD, "conv: no CONV_DESC");
  if (!is_tensor(x) || !is_tensor(w) || !is_tensor(y)) FAIL(BAD, "conv: x, w and y are needed");
  if (!d->has_alpha || !d->has_beta || d->alpha != 1.0f || d->beta != 0.0f) FAIL(BAD, "conv: alpha 1, beta 0 expected");
  int nd = (int)cd->sd + 2;
  if (x->nd != nd || w->nd != nd || y->nd != nd) FAIL(BAD, "conv: %d-d tensors expected", nd);
  if (w->dims[1] < 1 || x->dims[1] % w->dims[1]) FAIL(BAD, "conv: w's channels do not divide x's");
  int64_t groups = x->dims[1] / w->dims[1];
  if (w->dims[0] % groups) FAIL(BAD, "conv: groups %lld do not divide k = %lld", (long long)groups, (long long)w->dims[0]);
  if (y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0]) FAIL(BAD, "conv: y is not (n, k, ...)");
  for (int i = 0; i < cd->sd; i++)
    if (y->dims[2 + i] != conv_out(cd, x, w, i))
      FAIL(BAD, "conv: y spatial %d is %lld, the formula gives %lld", i, (long long)y->dims[2 + i],
           (long long)conv_out(cd, x, w, i));
  if (x->dtype != w->dtype || x->dtype != y->dtype) FAIL(BAD, "conv: mixed data types");
  return 0;
}

static const char *type_name(int t) {
  return t == 0 ? "f32" : t == 2 ? "f16" : t == 4 ? "i32" : t == 9 ? "bf16" : t == 11 ? "bool" : "?";
}

static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...) {
  size_t used = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  if (used < cap) vsnprintf(buf + used, cap - used, fmt, ap);
  va_end(ap);
}

/* The tensors an operation reads (t[0 .. *n_in - 1]) and writes (the rest); returns how many. */
static int op_tensors(const desc *op, desc *t[8], int *n_in) {
  int n = 0;
  if (op->type == TB_CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR) {
    static const int links[] = {0, 3, 4, 5, 11, 1, 2}; /* x, scale, bias, eps; y, mean, inv_var */
    for (int i = 0; i < 7; i++) t[n++] = op->links[links[i]];
    *n_in = 4;
    return n;
  }
  const int roles[] = {L_A, L_X, L_W, L_B, L_T};
  for (int i = 0; i < 5; i++)
    if (op->role[roles[i]]) t[n++] = op->role[roles[i]];
  *n_in = n;
  t[n++] = op->type == TB_CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ? op->role[L_C] : op->role[L_Y];
  return n;
}

/* Checks the graph's tensors and writes it as text into stub_cudnn_state.graph_text. */
static tb_cudnnStatus_t finalize_graph(desc *g) {
  desc *tensors[4 * MAX_OPS];
  int nt = 0;
  char *text = stub_cudnn_state.graph_text;
  size_t cap = sizeof stub_cudnn_state.graph_text;
  text[0] = '\0';
  for (int i = 0; i < g->n_links; i++) {
    desc *op = g->links[i], *t8[8];
    if (!op || !op->finalized) FAIL(BAD, "graph: operation %d not finalized", i);
    int n_in, n = op_tensors(op, t8, &n_in);
    switch (op->type) {
      case TB_CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: append(text, cap, "norm"); break;
      case TB_CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
        append(text, cap, "matmul %s", type_name(op->role[L_DESC]->prec)); break;
      case TB_CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
        append(text, cap, "reduce %d %s", op->role[L_DESC]->mode, type_name(op->role[L_DESC]->prec)); break;
      case TB_CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        append(text, cap, "pointwise %d %s", op->role[L_DESC]->mode, type_name(op->role[L_DESC]->prec));
        if (op->role[L_DESC]->has_axis) append(text, cap, " axis %lld", (long long)op->role[L_DESC]->axis);
        break;
      case TB_CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: {
        const desc *cd = op->role[L_DESC];
        append(text, cap, "conv mode %d %s", cd->mode, type_name(cd->prec));
        static const char *const vec[4] = {"dilation", "stride", "pre", "post"};
        for (int v = 0; v < 4; v++) {
          append(text, cap, " %s", vec[v]);
          for (int e = 0; e < cd->sd; e++) append(text, cap, "%s%lld", e ? "," : " ", (long long)cd->conv_vec[v][e]);
        }
        break;
      }
      default: FAIL(BAD, "graph: operation type %d not known", op->type);
    }
    for (int k = 0; k < n; k++) append(text, cap, "%s#%lld", k == n_in ? " -> " : " ", (long long)t8[k]->uid);
    append(text, cap, "\n");
    for (int k = 0; k < n; k++) {
      desc *t = t8[k];
      int seen = 0;
      for (int j = 0; j < nt; j++) {
        if (tensors[j] == t) seen = 1;
        else if (tensors[j]->uid == t->uid) FAIL(BAD, "graph: unique id %lld used twice", (long long)t->uid);
      }
      if (!seen) tensors[nt++] = t;
    }
  }
  for (int j = 0; j < nt; j++) { /* a virtual tensor comes from exactly one operation */
    int produced = 0;
    for (int i = 0; i < g->n_links; i++) {
      desc *t8[8];
      int n_in, n = op_tensors(g->links[i], t8, &n_in);
      for (int k = n_in; k < n; k++) produced += t8[k] == tensors[j];
    }
    if (tensors[j]->is_virtual && produced != 1)
      FAIL(BAD, "graph: virtual tensor #%lld produced by %d operations", (long long)tensors[j]->uid, produced);
    if (!tensors[j]->is_virtual && tensors[j]->by_value && produced)
      FAIL(BAD, "graph: by-value tensor #%lld is an output", (long long)tensors[j]->uid);
  }
  for (int64_t uid = -1, next; ; uid = next) { /* the tensors in id order */
    desc *t = NULL;
    next = INT64_MAX;
    for (int j = 0; j < nt; j++)
      if (tensors[j]->uid > uid && tensors[j]->uid < next) { next = tensors[j]->uid; t = tensors[j]; }
    if (!t) break;
    append(text, cap, "#%lld %s [", (long long)t->uid, type_name(t->dtype));
    for (int i = 0; i < t->nd; i++) append(text, cap, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    append(text, cap, "] [");
    for (int i = 0; i < t->nd; i++) append(text, cap, "%s%lld", i ? "," : "", (long long)t->strides[i]);
    append(text, cap, "]%s%s\n", t->is_virtual ? " virtual" : "", t->by_value ? " by-value" : "");
  }
  return 0;
}

tb_cudnnStatus_t cudnnBackendFinalize(tb_cudnnBackendDescriptor_t dd) {
  desc *d = dd;
  tb_cudnnStatus_t st = 0;
  switch (d->type) {
    case TB_CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      if (!d->has_dtype || !d->has_dims || !d->has_strides || !d->has_uid) FAIL(BAD, "tensor incomplete");
      if (d->is_virtual && d->by_value) FAIL(BAD, "tensor both virtual and by value");
      break;
    case TB_CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: st = finalize_norm(d); break;
    case TB_CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      if (!d->has_mode || !d->has_prec) FAIL(BAD, "pointwise descriptor: mode and precision");
      if ((d->mode == TB_CUDNN_POINTWISE_GEN_INDEX) != d->has_axis) FAIL(BAD, "pointwise descriptor: axis is GEN_INDEX's");
      break;
    case TB_CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      if (!d->has_mode || !d->has_prec) FAIL(BAD, "reduction descriptor: operator and precision");
      break;
    case TB_CUDNN_BACKEND_MATMUL_DESCRIPTOR:
      if (!d->has_prec) FAIL(BAD, "matmul descriptor: compute type");
      break;
    case TB_CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: st = finalize_pointwise_op(d); break;
    case TB_CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: st = finalize_reduction_op(d); break;
    case TB_CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: st = finalize_matmul_op(d); break;
    case TB_CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: st = finalize_conv_desc(d); break;
    case TB_CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: st = finalize_conv_op(d); break;
    case TB_CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (!d->has_handle || d->n_links < 1) FAIL(BAD, "graph incomplete");
      st = finalize_graph(d);
      break;
    case TB_CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      if (!d->links[0] || !d->links[0]->finalized) FAIL(BAD, "heuristic without a graph");
      break;
    case TB_CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      if (!d->has_handle || !d->links[0]) FAIL(BAD, "plan incomplete");
      if (d->links[0]->rank < stub_cudnn_state.refuse)
        FAIL(TB_CUDNN_STATUS_NOT_SUPPORTED, "stub: engine %lld refused", (long long)d->links[0]->rank);
      d->graph = d->links[0]->graph; /* the plan keeps what it needs of the configuration, as cuDNN's does */
      d->links[0] = NULL;
      break;
    case TB_CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      if (d->pack_n < 1 || !d->has_workspace) FAIL(BAD, "variant pack incomplete");
      break;
    default: break;
  }
  if (st) return st;
  d->finalized = 1;
  return 0;
}

tb_cudnnStatus_t cudnnBackendGetAttribute(tb_cudnnBackendDescriptor_t dd, int name, int type, int64_t want,
                                          int64_t *count, void *out) {
  desc *d = dd;
  (void)type;
  if (!d->finalized && d->type != TB_CUDNN_BACKEND_ENGINE_DESCRIPTOR && d->type != TB_CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)
    FAIL(BAD, "get on an unfinalized descriptor");
  desc **descs = out;
  switch (name) {
    case TB_CUDNN_ATTR_ENGINEHEUR_RESULTS:
      *count = want < stub_cudnn_state.configs ? want : stub_cudnn_state.configs;
      if (want == 0) *count = stub_cudnn_state.configs;
      for (int64_t i = 0; i < *count && want > 0; i++) {
        descs[i]->rank = i;
        descs[i]->finalized = 1;
        descs[i]->graph = d->links[0];
      }
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
    case TB_CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: *(int64_t *)out = stub_cudnn_state.workspace; *count = 1; return 0;
    default: FAIL(BAD, "stub: get %d not known", name);
  }
}

/* The variant pack binds exactly the graph's non-virtual tensors; the by-value ones are recorded. */
static tb_cudnnStatus_t check_pack(const desc *graph, const desc *pack) {
  int bound = 0;
  stub_cudnn_state.n_scalars = 0;
  for (int i = 0; i < pack->pack_n; i++)
    for (int j = 0; j < i; j++)
      if (pack->pack_uids[i] == pack->pack_uids[j]) FAIL(BAD, "pack: id %lld twice", (long long)pack->pack_uids[i]);
  desc *seen[4 * MAX_OPS];
  int ns = 0;
  for (int i = 0; i < graph->n_links; i++) {
    desc *t8[8];
    int n_in, n = op_tensors(graph->links[i], t8, &n_in);
    for (int k = 0; k < n; k++) {
      desc *t = t8[k];
      int dup = 0;
      for (int j = 0; j < ns; j++) dup |= seen[j] == t;
      if (dup || t->is_virtual) continue;
      seen[ns++] = t;
      int at = -1;
      for (int p = 0; p < pack->pack_n; p++)
        if (pack->pack_uids[p] == t->uid) at = p;
      if (at < 0) FAIL(BAD, "pack: tensor #%lld not bound", (long long)t->uid);
      if (!pack->pack_ptrs[at]) FAIL(BAD, "pack: tensor #%lld bound to NULL", (long long)t->uid);
      bound++;
      if (t->by_value && stub_cudnn_state.n_scalars < STUB_MAX_SCALARS) {
        stub_cudnn_state.scalar_uid[stub_cudnn_state.n_scalars] = t->uid;
        stub_cudnn_state.scalar_value[stub_cudnn_state.n_scalars++] = *(const float *)pack->pack_ptrs[at];
      }
    }
  }
  if (bound != pack->pack_n) FAIL(BAD, "pack: %d ids for %d tensors", pack->pack_n, bound);
  return 0;
}

static const float *bound_ptr(const desc *pack, const desc *t) {
  for (int i = 0; i < pack->pack_n; i++)
    if (pack->pack_uids[i] == t->uid) return pack->pack_ptrs[i];
  return NULL;
}

/* y = conv(x, w) on the host, through each tensor's own strides (so a layout the descriptors get
 * wrong gives a wrong result); 2 or 3 spatial dimensions. */
static void compute_conv(const desc *op, const desc *pack) {
  const desc *cd = op->role[L_DESC], *x = op->role[L_X], *w = op->role[L_W], *y = op->role[L_Y];
  const float *xp = bound_ptr(pack, x), *wp = bound_ptr(pack, w);
  float *yp = (float *)bound_ptr(pack, y);
  int sd = (int)cd->sd;
  int64_t cg = w->dims[1], groups = x->dims[1] / cg, kg = w->dims[0] / groups;
  int64_t ye[3] = {1, 1, 1}, we[3] = {1, 1, 1};
  for (int i = 0; i < sd; i++) {
    ye[i] = y->dims[2 + i];
    we[i] = w->dims[2 + i];
  }
  for (int64_t n = 0; n < y->dims[0]; n++)
    for (int64_t k = 0; k < y->dims[1]; k++)
      for (int64_t o0 = 0; o0 < ye[0]; o0++)
        for (int64_t o1 = 0; o1 < ye[1]; o1++)
          for (int64_t o2 = 0; o2 < ye[2]; o2++) {
            const int64_t o[3] = {o0, o1, o2};
            double acc = 0;
            int64_t g = k / kg;
            for (int64_t c = 0; c < cg; c++)
              for (int64_t r0 = 0; r0 < we[0]; r0++)
                for (int64_t r1 = 0; r1 < we[1]; r1++)
                  for (int64_t r2 = 0; r2 < we[2]; r2++) {
                    const int64_t r[3] = {r0, r1, r2};
                    int64_t xoff = n * x->strides[0] + (g * cg + c) * x->strides[1];
                    int64_t woff = k * w->strides[0] + c * w->strides[1];
                    int inside = 1;
                    for (int i = 0; i < sd; i++) {
                      int64_t at = o[i] * cd->conv_vec[1][i] - cd->conv_vec[2][i] + r[i] * cd->conv_vec[0][i];
                      if (at < 0 || at >= x->dims[2 + i]) inside = 0;
                      xoff += at * x->strides[2 + i];
                      woff += r[i] * w->strides[2 + i];
                    }
                    if (inside) acc += (double)xp[xoff] * wp[woff];
                  }
            int64_t yoff = n * y->strides[0] + k * y->strides[1];
            for (int i = 0; i < sd; i++) yoff += o[i] * y->strides[2 + i];
            yp[yoff] = (float)acc;
          }
  stub_cudnn_state.conv_computed++;
}

tb_cudnnStatus_t cudnnBackendExecute(tb_cudnnHandle_t h, tb_cudnnBackendDescriptor_t plan,
                                     tb_cudnnBackendDescriptor_t pack) {
  (void)h;
  desc *p = plan;
  if (!p->finalized || !((desc *)pack)->finalized) FAIL(BAD, "execute unfinalized");
  if (!p->graph) FAIL(BAD, "execute: the plan has no graph");
  tb_cudnnStatus_t st = check_pack(p->graph, pack);
  if (st) return st;
  stub_cudnn_state.executed++;
  const desc *op = p->graph->links[0];
  if (p->graph->n_links == 1 && op->type == TB_CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR &&
      op->role[L_X]->dtype == TB_CUDNN_DATA_FLOAT)
    compute_conv(op, pack);
  return 0;
}

/* ---- the legacy pooling API ---------------------------------------------------------------------- */
#ifndef STUB_NO_LEGACY_POOLING /* built without: a cuDNN that no longer exports it */

typedef struct legacy_tensor { int format, dtype, n, c, h, w, set; } legacy_tensor;
typedef struct legacy_pool { int mode, nan, wh, ww, ph, pw, sh, sw, set; } legacy_pool;

tb_cudnnStatus_t cudnnCreateTensorDescriptor(tb_cudnnTensorDescriptor_t *d) {
  *d = calloc(1, sizeof(legacy_tensor));
  stub_cudnn_state.live++;
  return 0;
}
tb_cudnnStatus_t cudnnSetTensor4dDescriptor(tb_cudnnTensorDescriptor_t dd, int format, int dtype, int n, int c, int h,
                                            int w) {
  legacy_tensor *t = dd;
  if (format != TB_CUDNN_TENSOR_NCHW) FAIL(BAD, "stub: only NCHW");
  if (n < 1 || c < 1 || h < 1 || w < 1) FAIL(BAD, "stub: tensor dims");
  *t = (legacy_tensor){format, dtype, n, c, h, w, 1};
  return 0;
}
tb_cudnnStatus_t cudnnDestroyTensorDescriptor(tb_cudnnTensorDescriptor_t d) {
  if (!d) FAIL(BAD, "destroy NULL tensor");
  free(d);
  stub_cudnn_state.live--;
  return 0;
}
tb_cudnnStatus_t cudnnCreatePoolingDescriptor(tb_cudnnPoolingDescriptor_t *d) {
  *d = calloc(1, sizeof(legacy_pool));
  stub_cudnn_state.live++;
  return 0;
}
tb_cudnnStatus_t cudnnSetPooling2dDescriptor(tb_cudnnPoolingDescriptor_t dd, int mode, int nan, int wh, int ww, int ph,
                                             int pw, int sh, int sw) {
  legacy_pool *p = dd;
  if (wh < 1 || ww < 1 || sh < 1 || sw < 1 || ph < 0 || pw < 0) FAIL(BAD, "stub: pooling window");
  *p = (legacy_pool){mode, nan, wh, ww, ph, pw, sh, sw, 1};
  stub_cudnn_state.pool_mode = mode;
  stub_cudnn_state.pool_nan = nan;
  return 0;
}
tb_cudnnStatus_t cudnnDestroyPoolingDescriptor(tb_cudnnPoolingDescriptor_t d) {
  if (!d) FAIL(BAD, "destroy NULL pooling");
  free(d);
  stub_cudnn_state.live--;
  return 0;
}

tb_cudnnStatus_t cudnnPoolingForward(tb_cudnnHandle_t h, tb_cudnnPoolingDescriptor_t pd, const void *alpha,
                                     tb_cudnnTensorDescriptor_t xd, const void *x, const void *beta,
                                     tb_cudnnTensorDescriptor_t yd, void *y) {
  const legacy_pool *p = pd;
  const legacy_tensor *xt = xd, *yt = yd;
  if (!h || !p->set || !xt->set || !yt->set) FAIL(BAD, "stub: pooling forward with unset descriptors");
  if (p->mode != TB_CUDNN_POOLING_MAX) FAIL(TB_CUDNN_STATUS_NOT_SUPPORTED, "stub: only max pooling");
  if (yt->n != xt->n || yt->c != xt->c || yt->h != (xt->h + 2 * p->ph - p->wh) / p->sh + 1 ||
      yt->w != (xt->w + 2 * p->pw - p->ww) / p->sw + 1 || yt->dtype != xt->dtype)
    FAIL(BAD, "stub: y descriptor does not match the pooling of x");
  if (xt->dtype != TB_CUDNN_DATA_FLOAT) return 0; /* computed only for fp32 */
  const float a = *(const float *)alpha, b = *(const float *)beta;
  const float *xp = x;
  float *yp = y;
  for (long long pl = 0; pl < (long long)xt->n * xt->c; pl++)
    for (int oh = 0; oh < yt->h; oh++)
      for (int ow = 0; ow < yt->w; ow++) {
        float m = -1.0f / 0.0f;
        int nan = 0;
        for (int i = 0; i < p->wh; i++)
          for (int j = 0; j < p->ww; j++) {
            int r = oh * p->sh - p->ph + i, c = ow * p->sw - p->pw + j;
            if (r < 0 || r >= xt->h || c < 0 || c >= xt->w) continue;
            float v = xp[(pl * xt->h + r) * xt->w + c];
            if (v != v) nan = 1;
            else if (v > m) m = v;
          }
        float *out = &yp[(pl * yt->h + oh) * yt->w + ow];
        float res = nan && p->nan == TB_CUDNN_PROPAGATE_NAN ? 0.0f / 0.0f : m;
        *out = a * res + (b != 0.0f ? b * *out : 0.0f);
      }
  stub_cudnn_state.pool_computed++;
  return 0;
}
#endif
