/* cuda_dnn_sdpa.c: scaled dot-product attention forward (flash_attention's `lib`) as cuDNN 9's
 * fused-attention pattern in the backend (graph) API: the operation graph cuDNN's flash-attention
 * engines match (the one cudnn-frontend's SDPA node lowers to for a top-left causal mask without
 * dropout or bias):
 *
 *   S  = matmul(Q, K^T)                       fp32, (b, h, s, s)
 *   S1 = S * scale                             pointwise MUL by a by-value fp32 scalar
 *   [causal] R = GEN_INDEX(S1, axis 2), C = GEN_INDEX(S1, axis 3)   int32 row and column
 *            M = CMP_GE(R, C)                  boolean: key j admissible for query i iff i >= j
 *            S1 = BINARY_SELECT(S1, -inf, M)   S1 where M, else the by-value -inf
 *   mx = reduce MAX over keys (b, h, s, 1); E = exp(S1 - mx); Z = reduce ADD(E) (b, h, s, 1)
 *   stats = mx + log(Z)                        virtual: the engines' pattern keeps the statistics
 *                                              branch even for inference (the frontend emits it
 *                                              virtual when no statistics are asked for)
 *   P  = E / Z                                 virtual in the input type (bmm2's A operand)
 *   O  = matmul(P, V)
 *
 * Layout: q, k, v, o are our (b, h, s, d) row-major tensors, cuDNN's BHSD with strides
 * (h s d, s d, d, 1); K enters the first matmul transposed, as the (b, h, d, s) tensor with
 * strides (h s d, s d, 1, d) over the same memory. The masked value is -inf from cuDNN 9.10 on and
 * the lowest float before (what cudnn-frontend passes to each). Virtual intermediates are fp32,
 * the matmuls, reductions and pointwise operations compute in fp32 (int32 for the indices,
 * boolean for the comparison). Every tensor, virtual ones included, has a unique id; the variant
 * pack binds q, k, v, o and the two by-value scalars. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "cuda_dnn_graph.h"

enum {
  U_Q = 1, U_K, U_V, U_O, U_SCALE, U_NEG_INF,
  U_S = 101, U_S_SCALED, U_ROW, U_COL, U_MASK, U_S_MASKED, U_MAX, U_SUB, U_EXP, U_SUM, U_LOG, U_STATS, U_P,
};

typedef tb_cudnnBackendDescriptor_t desc_t;

/* A virtual tensor, row-major over dims. */
static gpu_status virtual_tensor(dnn_graph *g, desc_t *t, const char *name, int64_t uid, int type,
                                 const int64_t dims[4]) {
  const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  return dg_tensor(g, t, name, uid, type, 4, dims, strides, DG_VIRTUAL, 0, 0.0f);
}

/* A pointwise operation y = mode(x[, b[, t]]) computing in prec (axis: GEN_INDEX's, else < 0). */
static gpu_status pointwise(dnn_graph *g, const char *what, int mode, int prec, int64_t axis, desc_t x, desc_t b,
                            desc_t t, desc_t y) {
  desc_t pw, op;
  gpu_status st = dg_desc(g, TB_CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw, "POINTWISE", what);
  if (st != GPU_OK) return st;
  DG_CHECK(cudnn.set(pw, TB_CUDNN_ATTR_POINTWISE_MODE, TB_CUDNN_TYPE_POINTWISE_MODE, 1, &mode),
           "cudnnBackendSetAttribute(POINTWISE_MODE)", what);
  DG_CHECK(cudnn.set(pw, TB_CUDNN_ATTR_POINTWISE_MATH_PREC, TB_CUDNN_TYPE_DATA_TYPE, 1, &prec),
           "cudnnBackendSetAttribute(POINTWISE_MATH_PREC)", what);
  if (axis >= 0)
    DG_CHECK(cudnn.set(pw, TB_CUDNN_ATTR_POINTWISE_AXIS, TB_CUDNN_TYPE_INT64, 1, &axis),
             "cudnnBackendSetAttribute(POINTWISE_AXIS)", what);
  DG_CHECK(cudnn.finalize(pw), "cudnnBackendFinalize(POINTWISE)", what);
  if ((st = dg_desc(g, TB_CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op, "OPERATION_POINTWISE", what)))
    return st;
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw),
           "cudnnBackendSetAttribute(OPERATION_POINTWISE_PW_DESCRIPTOR)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_POINTWISE_XDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x),
           "cudnnBackendSetAttribute(OPERATION_POINTWISE_XDESC)", what);
  if (b)
    DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_POINTWISE_BDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b),
             "cudnnBackendSetAttribute(OPERATION_POINTWISE_BDESC)", what);
  if (t)
    DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_POINTWISE_TDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t),
             "cudnnBackendSetAttribute(OPERATION_POINTWISE_TDESC)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_POINTWISE_YDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y),
           "cudnnBackendSetAttribute(OPERATION_POINTWISE_YDESC)", what);
  return dg_add_op(g, op, "cudnnBackendFinalize(OPERATION_POINTWISE)", what);
}

/* y = reduction of x over the dimensions where y has extent 1, in fp32. */
static gpu_status reduction(dnn_graph *g, const char *what, int reduce_op, desc_t x, desc_t y) {
  desc_t rd, op;
  int comp = TB_CUDNN_DATA_FLOAT;
  gpu_status st = dg_desc(g, TB_CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &rd, "REDUCTION", what);
  if (st != GPU_OK) return st;
  DG_CHECK(cudnn.set(rd, TB_CUDNN_ATTR_REDUCTION_OPERATOR, TB_CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce_op),
           "cudnnBackendSetAttribute(REDUCTION_OPERATOR)", what);
  DG_CHECK(cudnn.set(rd, TB_CUDNN_ATTR_REDUCTION_COMP_TYPE, TB_CUDNN_TYPE_DATA_TYPE, 1, &comp),
           "cudnnBackendSetAttribute(REDUCTION_COMP_TYPE)", what);
  DG_CHECK(cudnn.finalize(rd), "cudnnBackendFinalize(REDUCTION)", what);
  if ((st = dg_desc(g, TB_CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &op, "OPERATION_REDUCTION", what)))
    return st;
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_REDUCTION_DESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd),
           "cudnnBackendSetAttribute(OPERATION_REDUCTION_DESC)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_REDUCTION_XDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x),
           "cudnnBackendSetAttribute(OPERATION_REDUCTION_XDESC)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_REDUCTION_YDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y),
           "cudnnBackendSetAttribute(OPERATION_REDUCTION_YDESC)", what);
  return dg_add_op(g, op, "cudnnBackendFinalize(OPERATION_REDUCTION)", what);
}

/* c = a b (batched over the two leading dimensions), fp32 accumulation. */
static gpu_status matmul(dnn_graph *g, const char *what, desc_t a, desc_t b, desc_t c) {
  desc_t mm, op;
  int comp = TB_CUDNN_DATA_FLOAT;
  gpu_status st = dg_desc(g, TB_CUDNN_BACKEND_MATMUL_DESCRIPTOR, &mm, "MATMUL", what);
  if (st != GPU_OK) return st;
  DG_CHECK(cudnn.set(mm, TB_CUDNN_ATTR_MATMUL_COMP_TYPE, TB_CUDNN_TYPE_DATA_TYPE, 1, &comp),
           "cudnnBackendSetAttribute(MATMUL_COMP_TYPE)", what);
  DG_CHECK(cudnn.finalize(mm), "cudnnBackendFinalize(MATMUL)", what);
  if ((st = dg_desc(g, TB_CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op, "OPERATION_MATMUL", what))) return st;
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_MATMUL_ADESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a),
           "cudnnBackendSetAttribute(OPERATION_MATMUL_ADESC)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_MATMUL_BDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b),
           "cudnnBackendSetAttribute(OPERATION_MATMUL_BDESC)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_MATMUL_CDESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c),
           "cudnnBackendSetAttribute(OPERATION_MATMUL_CDESC)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_MATMUL_DESC, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm),
           "cudnnBackendSetAttribute(OPERATION_MATMUL_DESC)", what);
  return dg_add_op(g, op, "cudnnBackendFinalize(OPERATION_MATMUL)", what);
}

static gpu_status make_graph(dnn_graph *g, const dnn_sdpa_desc *d) {
  const int64_t B = d->b, H = d->h, S = d->s, D = d->d;
  const int io = dg_cudnn_type(d->type), f32 = TB_CUDNN_DATA_FLOAT;
  const int64_t bhsd[4] = {B, H, S, D}, bhsd_strides[4] = {H * S * D, S * D, D, 1};
  const int64_t kt[4] = {B, H, D, S}, kt_strides[4] = {H * S * D, S * D, 1, D}; /* K^T over K's memory */
  const int64_t scores[4] = {B, H, S, S}, rows[4] = {B, H, S, 1}, one[4] = {1, 1, 1, 1};
  const float neg_inf = cudnn.get_version() < 91000 ? -FLT_MAX : -INFINITY;
  desc_t q, k, v, o, scale, ninf = NULL, s, s1, row, col, mask, sm = NULL, mx, sub, ex, sum, lg, stats, p;
  gpu_status st;
#define TRY(call) if ((st = (call)) != GPU_OK) return st
  TRY(dg_tensor(g, &q, "q", U_Q, io, 4, bhsd, bhsd_strides, 0, d->q, 0.0f));
  TRY(dg_tensor(g, &k, "k (as K^T)", U_K, io, 4, kt, kt_strides, 0, d->k, 0.0f));
  TRY(dg_tensor(g, &v, "v", U_V, io, 4, bhsd, bhsd_strides, 0, d->v, 0.0f));
  TRY(dg_tensor(g, &o, "o", U_O, io, 4, bhsd, bhsd_strides, 0, d->o, 0.0f));
  TRY(dg_tensor(g, &scale, "the attention scale", U_SCALE, f32, 4, one, one, DG_BY_VALUE, 0, d->scale));
  TRY(virtual_tensor(g, &s, "the scores Q K^T", U_S, f32, scores));
  TRY(virtual_tensor(g, &s1, "the scaled scores", U_S_SCALED, f32, scores));
  TRY(matmul(g, "bmm1 (Q K^T)", q, k, s));
  TRY(pointwise(g, "the scale", TB_CUDNN_POINTWISE_MUL, f32, -1, s, scale, NULL, s1));
  sm = s1;
  if (d->causal) {
    TRY(dg_tensor(g, &ninf, "the mask value", U_NEG_INF, f32, 4, one, one, DG_BY_VALUE, 0, neg_inf));
    TRY(virtual_tensor(g, &row, "the row index", U_ROW, TB_CUDNN_DATA_INT32, scores));
    TRY(virtual_tensor(g, &col, "the column index", U_COL, TB_CUDNN_DATA_INT32, scores));
    TRY(virtual_tensor(g, &mask, "the causal mask", U_MASK, TB_CUDNN_DATA_BOOLEAN, scores));
    TRY(virtual_tensor(g, &sm, "the masked scores", U_S_MASKED, f32, scores));
    TRY(pointwise(g, "the row index", TB_CUDNN_POINTWISE_GEN_INDEX, TB_CUDNN_DATA_INT32, 2, s1, NULL, NULL, row));
    TRY(pointwise(g, "the column index", TB_CUDNN_POINTWISE_GEN_INDEX, TB_CUDNN_DATA_INT32, 3, s1, NULL, NULL, col));
    TRY(pointwise(g, "row >= column", TB_CUDNN_POINTWISE_CMP_GE, TB_CUDNN_DATA_BOOLEAN, -1, row, col, NULL, mask));
    TRY(pointwise(g, "the causal select", TB_CUDNN_POINTWISE_BINARY_SELECT, f32, -1, s1, ninf, mask, sm));
  }
  TRY(virtual_tensor(g, &mx, "the row maxima", U_MAX, f32, rows));
  TRY(virtual_tensor(g, &sub, "the scores less the maxima", U_SUB, f32, scores));
  TRY(virtual_tensor(g, &ex, "the exponentials", U_EXP, f32, scores));
  TRY(virtual_tensor(g, &sum, "the row sums", U_SUM, f32, rows));
  TRY(virtual_tensor(g, &lg, "the log of the row sums", U_LOG, f32, rows));
  TRY(virtual_tensor(g, &stats, "the softmax statistics", U_STATS, f32, rows));
  TRY(virtual_tensor(g, &p, "the probabilities P", U_P, io, scores));
  TRY(reduction(g, "the row maxima", TB_CUDNN_REDUCE_TENSOR_MAX, sm, mx));
  TRY(pointwise(g, "scores - max", TB_CUDNN_POINTWISE_SUB, f32, -1, sm, mx, NULL, sub));
  TRY(pointwise(g, "exp", TB_CUDNN_POINTWISE_EXP, f32, -1, sub, NULL, NULL, ex));
  TRY(reduction(g, "the row sums", TB_CUDNN_REDUCE_TENSOR_ADD, ex, sum));
  TRY(pointwise(g, "log of the sums", TB_CUDNN_POINTWISE_LOG, f32, -1, sum, NULL, NULL, lg));
  TRY(pointwise(g, "the statistics", TB_CUDNN_POINTWISE_ADD, f32, -1, mx, lg, NULL, stats));
  TRY(pointwise(g, "exp / sum", TB_CUDNN_POINTWISE_DIV, f32, -1, ex, sum, NULL, p));
  TRY(matmul(g, "bmm2 (P V)", p, v, o));
#undef TRY
  return GPU_OK;
}

static gpu_status check_desc(const dnn_sdpa_desc *d) {
  if (d->b <= 0 || d->h <= 0 || d->s <= 0 || d->d <= 0)
    return gpu_set_error(GPU_ERR_INVALID, "dnn sdpa: b, h, s and d must be positive (b=%lld h=%lld s=%lld d=%lld)",
                         (long long)d->b, (long long)d->h, (long long)d->s, (long long)d->d);
  if (d->type != DNN_F16 && d->type != DNN_BF16)
    return gpu_set_error(GPU_ERR_INVALID, "dnn sdpa: q, k, v and o must be fp16 or bf16 (got %s)",
                         dnn_type_name(d->type));
  if (!(d->scale > 0.0f) || !isfinite(d->scale))
    return gpu_set_error(GPU_ERR_INVALID, "dnn sdpa: the scale must be positive and finite (got %g)",
                         (double)d->scale);
  int any = d->q || d->k || d->v || d->o, all = d->q && d->k && d->v && d->o;
  if (any && !all) return gpu_set_error(GPU_ERR_INVALID, "dnn sdpa: give every buffer (q, k, v, o) or none (a probe)");
  const gpu_ptr p[4] = {d->q, d->k, d->v, d->o};
  static const char *const names[4] = {"q", "k", "v", "o"};
  for (int i = 0; any && i < 4; i++)
    if (p[i] % 16)
      return gpu_set_error(GPU_ERR_INVALID, "dnn sdpa: buffer %s at 0x%llx is not 16-byte aligned "
                           "(the alignment the graph declares)", names[i], (unsigned long long)p[i]);
  return GPU_OK;
}

gpu_status cuda_dnn_sdpa_create(dnn_graph **out, const dnn_sdpa_desc *d) {
  *out = NULL;
  gpu_status st = check_desc(d);
  if (st != GPU_OK) return st;
  tb_cudnnHandle_t handle;
  if ((st = cudnn_get_handle(&handle)) != GPU_OK) return st;
  const long long B = d->b, H = d->h, S = d->s, D = d->d;
  const char *type = dnn_type_name(d->type), *mask = d->causal ? "causal" : "no mask";
  char problem[256];
  snprintf(problem, sizeof problem, "attention forward (%s) of q/k/v (%lld, %lld, %lld, %lld) %s", mask, B, H, S, D,
           type);
  dnn_graph *g = dg_new(problem);
  if (!g) return gpu_set_error(GPU_ERR_OOM, "dnn sdpa: out of host memory");
  snprintf(g->layout, sizeof g->layout, "attention forward (%s, inference) q/v/o (%lld, %lld, %lld, %lld) %s strides "
           "(%lld, %lld, %lld, 1), k as K^T (%lld, %lld, %lld, %lld) strides (%lld, %lld, 1, %lld), scale %g, "
           "fp32 scores and softmax", mask, B, H, S, D, type, H * S * D, S * D, D, B, H, D, S, H * S * D, S * D, D,
           (double)d->scale);
  st = make_graph(g, d);
  if (st == GPU_OK) st = dg_build(g, handle);
  if (st == GPU_OK && d->q) st = dg_bind(g);
  return dg_finish(g, st, out);
}
