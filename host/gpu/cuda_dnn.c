/* cuda_dnn.c: CUDA's DNN table (gpu_dnn, dnn.h) and its batch-norm graph: training-mode batch
 * normalisation as a cuDNN 9 backend-API graph of one NORM_FORWARD operation (CUDNN_BATCH_NORM,
 * training phase). The attention graph is cuda_dnn_sdpa.c's; what both share (tensors, engine
 * choice, variant pack, execution) is cuda_dnn_graph.c's.
 *
 * x (n, c) row-major is cuDNN's 4-d (N, C, H, W) = (n, c, 1, 1) with strides (c, 1, c, c): channels
 * innermost, the NHWC order cuDNN's normalisation engines take; scale, bias and the saved mean and
 * inverse standard deviation are (1, c, 1, 1), epsilon a by-value (1, 1, 1, 1) fp32 scalar that
 * the variant pack points at in host memory. */
#include <stdio.h>
#include <string.h>

#include "cuda_dnn_graph.h"

enum { T_X, T_SCALE, T_BIAS, T_EPS, T_Y, T_MEAN, T_INV_VAR, T_COUNT };
static const char *const tensor_names[T_COUNT] = {"x", "scale", "bias", "epsilon", "y", "mean",
                                                  "inv_variance"};

static gpu_status make_operation(dnn_graph *g, const dnn_batchnorm_desc *d) {
  const int64_t xd[4] = {d->n, d->c, 1, 1}, xs[4] = {d->c, 1, d->c, d->c};
  const int64_t pd[4] = {1, d->c, 1, 1}, ps[4] = {d->c, 1, d->c, d->c};
  const int64_t one[4] = {1, 1, 1, 1};
  tb_cudnnBackendDescriptor_t t[T_COUNT];
  const struct { int id; dnn_type type; const int64_t *dims, *strides; int flags; gpu_ptr dev; } tensors[] = {
    {T_X, d->x_type, xd, xs, 0, d->x},
    {T_Y, d->x_type, xd, xs, 0, d->y},
    {T_SCALE, d->param_type, pd, ps, 0, d->scale},
    {T_BIAS, d->param_type, pd, ps, 0, d->bias},
    {T_MEAN, DNN_F32, pd, ps, 0, d->mean},
    {T_INV_VAR, DNN_F32, pd, ps, 0, d->inv_var},
    {T_EPS, DNN_F32, one, one, DG_BY_VALUE, 0},
  };
  gpu_status st;
  for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
    if ((st = dg_tensor(g, &t[tensors[i].id], tensor_names[tensors[i].id], tensors[i].id,
                        dg_cudnn_type(tensors[i].type), 4, tensors[i].dims, tensors[i].strides, tensors[i].flags,
                        tensors[i].dev, d->eps)) != GPU_OK)
      return st;
  const char *what = "the batch-norm operation";
  int mode = TB_CUDNN_BATCH_NORM, phase = TB_CUDNN_NORM_FWD_TRAINING;
  tb_cudnnBackendDescriptor_t op;
  if ((st = dg_desc(g, TB_CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, &op, "OPERATION_NORM_FORWARD", what)))
    return st;
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_NORM_FWD_MODE, TB_CUDNN_TYPE_NORM_MODE, 1, &mode),
           "cudnnBackendSetAttribute(NORM_FWD_MODE)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, TB_CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase),
           "cudnnBackendSetAttribute(NORM_FWD_PHASE)", what);
  static const struct { int attr, tensor; const char *api; } links[] = {
    {TB_CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, T_X, "cudnnBackendSetAttribute(NORM_FWD_XDESC)"},
    {TB_CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, T_MEAN, "cudnnBackendSetAttribute(NORM_FWD_MEAN_DESC)"},
    {TB_CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, T_INV_VAR,
     "cudnnBackendSetAttribute(NORM_FWD_INV_VARIANCE_DESC)"},
    {TB_CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, T_SCALE, "cudnnBackendSetAttribute(NORM_FWD_SCALE_DESC)"},
    {TB_CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, T_BIAS, "cudnnBackendSetAttribute(NORM_FWD_BIAS_DESC)"},
    {TB_CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, T_EPS, "cudnnBackendSetAttribute(NORM_FWD_EPSILON_DESC)"},
    {TB_CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, T_Y, "cudnnBackendSetAttribute(NORM_FWD_YDESC)"},
  };
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
    DG_CHECK(cudnn.set(op, links[i].attr, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[links[i].tensor]), links[i].api,
             what);
  return dg_add_op(g, op, "cudnnBackendFinalize(OPERATION_NORM_FORWARD)", what);
}

static gpu_status check_desc(const dnn_batchnorm_desc *d) {
  if (d->n <= 0 || d->c <= 0)
    return gpu_set_error(GPU_ERR_INVALID, "dnn batchnorm: n and c must be positive (n=%lld c=%lld)",
                         (long long)d->n, (long long)d->c);
  if ((unsigned)d->x_type > DNN_BF16 || (unsigned)d->param_type > DNN_BF16)
    return gpu_set_error(GPU_ERR_INVALID, "dnn batchnorm: unknown data type");
  if (!(d->eps > 0.0f))
    return gpu_set_error(GPU_ERR_INVALID, "dnn batchnorm: eps must be positive (got %g)", (double)d->eps);
  int any = d->x || d->scale || d->bias || d->y || d->mean || d->inv_var;
  int all = d->x && d->scale && d->bias && d->y && d->mean && d->inv_var;
  if (any && !all)
    return gpu_set_error(GPU_ERR_INVALID, "dnn batchnorm: give every buffer (x, scale, bias, y, mean, "
                         "inv_var) or none (a probe)");
  const gpu_ptr p[6] = {d->x, d->scale, d->bias, d->y, d->mean, d->inv_var};
  static const char *const names[6] = {"x", "scale", "bias", "y", "mean", "inv_var"};
  for (int i = 0; any && i < 6; i++)
    if (p[i] % 16)
      return gpu_set_error(GPU_ERR_INVALID, "dnn batchnorm: buffer %s at 0x%llx is not 16-byte aligned "
                           "(the alignment the graph declares)", names[i], (unsigned long long)p[i]);
  return GPU_OK;
}

static gpu_status batchnorm_create(dnn_graph **out, const dnn_batchnorm_desc *d) {
  *out = NULL;
  gpu_status st = check_desc(d);
  if (st != GPU_OK) return st;
  tb_cudnnHandle_t handle;
  if ((st = cudnn_get_handle(&handle)) != GPU_OK) return st;
  char problem[256];
  snprintf(problem, sizeof problem, "batch norm (training) of x (%lld, %lld) %s, scale/bias %s", (long long)d->n,
           (long long)d->c, dnn_type_name(d->x_type), dnn_type_name(d->param_type));
  dnn_graph *g = dg_new(problem);
  if (!g) return gpu_set_error(GPU_ERR_OOM, "dnn batchnorm: out of host memory");
  snprintf(g->layout, sizeof g->layout, "batch norm (training) x (%lld, %lld) %s as NCHW (%lld, %lld, 1, 1) "
           "strides (%lld, 1, %lld, %lld), scale/bias %s, mean/inv_variance fp32, eps %g", (long long)d->n,
           (long long)d->c, dnn_type_name(d->x_type), (long long)d->n, (long long)d->c, (long long)d->c,
           (long long)d->c, (long long)d->c, dnn_type_name(d->param_type), (double)d->eps);
  st = make_operation(g, d);
  if (st == GPU_OK) st = dg_build(g, handle);
  if (st == GPU_OK && d->x) st = dg_bind(g);
  return dg_finish(g, st, out);
}

static void engine_of(const dnn_graph *g, dnn_engine *e) { *e = g->engine; }

static gpu_status version_of(size_t *version, char *path, size_t path_len) {
  gpu_status st = cudnn_open();
  if (st != GPU_OK) return st;
  if (version) *version = cudnn.get_version();
  if (path && path_len) snprintf(path, path_len, "%s", cudnn.path);
  return GPU_OK;
}


extern const gpu_dnn gpu_cuda_dnn; /* cuda.c's backend table points here */
const gpu_dnn gpu_cuda_dnn = {
  .lib = {.name = "cuDNN", .init = cudnn_open, .version = version_of},
  .batchnorm_create = batchnorm_create,
  .sdpa_create = cuda_dnn_sdpa_create,
  .conv_create = cuda_dnn_conv_create,
  .pool_create = cuda_dnn_pool_create,
  .run = dg_run,
  .engine = engine_of,
  .describe = dg_describe,
  .destroy = dg_destroy,
};
