/* cuda_dnn_conv.c: convolution forward (1d_conv, 2d_conv, 3d_conv's `lib`) as a cuDNN 9 backend
 * graph of one CONVOLUTION_FORWARD operation, and max pooling (2d_max_pooling's `lib`) through the
 * legacy cudnnPoolingForward.
 *
 * Convolution: x, w and y are our contiguous (row-major) NC[D]HW tensors, given to cuDNN with their
 * dimensions and packed strides; a 1-d convolution is cuDNN's 2-d one with H = 1 (cuDNN's engines
 * take 4-d and 5-d tensors; PyTorch does the same). The convolution descriptor is cross-correlation
 * (no kernel flip, PyTorch's), symmetric pre and post padding, fp32 compute for fp16 and fp32 data;
 * groups are implied by w's second dimension (c / groups), as in cuDNN's graph API. The engine is
 * the heuristic's first that finalises (cuda_dnn_graph.c), with no numerical-note filter, so for
 * fp32 the TF32 tensor-core engines are allowed (PyTorch's cudnn.allow_tf32 default).
 *
 * Pooling: the legacy pooling API, which libcudnn.so.9 (the shim) still exports, takes our NCHW
 * tensor as it is (the graph API's resample operation is the alternative; cudnn-frontend's pooling
 * samples run it channels-last only, so it was not chosen for an NCHW input): CUDNN_POOLING_MAX with CUDNN_PROPAGATE_NAN (a NaN in a
 * window gives NaN, as PyTorch's max_pool2d), padded positions never chosen. It has no engine
 * choice and no workspace; the engine record says so (legacy_api). */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cuda_dnn_graph.h"

enum { U_X = 1, U_W, U_Y };

/* ---- convolution ------------------------------------------------------------------------------- */

static int64_t conv_out(const dnn_conv_desc *d, int i) {
  return (d->in[i] + 2 * d->padding[i] - d->dilation[i] * (d->window[i] - 1) - 1) / d->stride[i] + 1;
}

static gpu_status check_conv(const dnn_conv_desc *d) {
  if (d->nd < 1 || d->nd > DNN_MAX_SPATIAL)
    return gpu_set_error(GPU_ERR_INVALID, "dnn conv: %d spatial dimensions (1, 2 or 3)", d->nd);
  if (d->n <= 0 || d->c <= 0 || d->k <= 0 || d->groups <= 0)
    return gpu_set_error(GPU_ERR_INVALID, "dnn conv: n, c, k and groups must be positive (n=%lld c=%lld k=%lld "
                         "groups=%lld)", (long long)d->n, (long long)d->c, (long long)d->k, (long long)d->groups);
  if (d->c % d->groups || d->k % d->groups)
    return gpu_set_error(GPU_ERR_INVALID, "dnn conv: groups %lld must divide c = %lld and k = %lld",
                         (long long)d->groups, (long long)d->c, (long long)d->k);
  for (int i = 0; i < d->nd; i++) {
    if (d->in[i] <= 0 || d->window[i] <= 0 || d->stride[i] <= 0 || d->dilation[i] <= 0 || d->padding[i] < 0)
      return gpu_set_error(GPU_ERR_INVALID, "dnn conv: spatial dimension %d: size %lld, window %lld, stride %lld, "
                           "dilation %lld must be positive and padding %lld not negative", i, (long long)d->in[i],
                           (long long)d->window[i], (long long)d->stride[i], (long long)d->dilation[i],
                           (long long)d->padding[i]);
    if (conv_out(d, i) < 1)
      return gpu_set_error(GPU_ERR_INVALID, "dnn conv: spatial dimension %d gives no output (size %lld, window "
                           "%lld, padding %lld)", i, (long long)d->in[i], (long long)d->window[i],
                           (long long)d->padding[i]);
  }
  if ((unsigned)d->type > DNN_BF16) return gpu_set_error(GPU_ERR_INVALID, "dnn conv: unknown data type");
  int any = d->x || d->w || d->y, all = d->x && d->w && d->y;
  if (any && !all) return gpu_set_error(GPU_ERR_INVALID, "dnn conv: give every buffer (x, w, y) or none (a probe)");
  const gpu_ptr p[3] = {d->x, d->w, d->y};
  static const char *const names[3] = {"x", "w", "y"};
  for (int i = 0; any && i < 3; i++)
    if (p[i] % 16)
      return gpu_set_error(GPU_ERR_INVALID, "dnn conv: buffer %s at 0x%llx is not 16-byte aligned (the alignment "
                           "the graph declares)", names[i], (unsigned long long)p[i]);
  return GPU_OK;
}

/* Packed (row-major) strides of dims[0..nd-1]. */
static void packed(int nd, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i];
  }
}

/* The problem as cuDNN's spatial dimensions: a 1-d convolution as 2-d with H = 1. */
typedef struct conv_shape {
  int sd; /* 2 or 3 */
  int64_t in[3], window[3], out[3], stride[3], padding[3], dilation[3];
} conv_shape;

static conv_shape shape_of(const dnn_conv_desc *d) {
  conv_shape s;
  int lift = d->nd == 1;
  s.sd = lift ? 2 : d->nd;
  if (lift) {
    s.in[0] = s.window[0] = s.out[0] = s.stride[0] = s.dilation[0] = 1;
    s.padding[0] = 0;
  }
  for (int i = 0; i < d->nd; i++) {
    s.in[i + lift] = d->in[i];
    s.window[i + lift] = d->window[i];
    s.out[i + lift] = conv_out(d, i);
    s.stride[i + lift] = d->stride[i];
    s.padding[i + lift] = d->padding[i];
    s.dilation[i + lift] = d->dilation[i];
  }
  return s;
}

static size_t dims_text(char *buf, size_t len, int n, const int64_t *v) {
  size_t used = 0;
  for (int i = 0; i < n && used + 1 < len; i++) {
    int k = snprintf(buf + used, len - used, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (k < 0) break;
    used += (size_t)k < len - used ? (size_t)k : len - used - 1;
  }
  return used;
}

static gpu_status make_conv(dnn_graph *g, const dnn_conv_desc *d, const conv_shape *s) {
  const char *what = "the convolution";
  int nt = s->sd + 2, type = dg_cudnn_type(d->type);
  int64_t xd[5] = {d->n, d->c}, wd[5] = {d->k, d->c / d->groups}, yd[5] = {d->n, d->k};
  for (int i = 0; i < s->sd; i++) {
    xd[2 + i] = s->in[i];
    wd[2 + i] = s->window[i];
    yd[2 + i] = s->out[i];
  }
  int64_t xs[5], ws[5], ys[5];
  packed(nt, xd, xs);
  packed(nt, wd, ws);
  packed(nt, yd, ys);
  tb_cudnnBackendDescriptor_t x, w, y, conv, op;
  gpu_status st;
  if ((st = dg_tensor(g, &x, "x", U_X, type, nt, xd, xs, 0, d->x, 0.0f)) ||
      (st = dg_tensor(g, &w, "w", U_W, type, nt, wd, ws, 0, d->w, 0.0f)) ||
      (st = dg_tensor(g, &y, "y", U_Y, type, nt, yd, ys, 0, d->y, 0.0f)))
    return st;
  int comp = TB_CUDNN_DATA_FLOAT, mode = TB_CUDNN_CROSS_CORRELATION;
  int64_t sd = s->sd;
  if ((st = dg_desc(g, TB_CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv, "CONVOLUTION", what))) return st;
  DG_CHECK(cudnn.set(conv, TB_CUDNN_ATTR_CONVOLUTION_COMP_TYPE, TB_CUDNN_TYPE_DATA_TYPE, 1, &comp),
           "cudnnBackendSetAttribute(CONVOLUTION_COMP_TYPE)", what);
  DG_CHECK(cudnn.set(conv, TB_CUDNN_ATTR_CONVOLUTION_CONV_MODE, TB_CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode),
           "cudnnBackendSetAttribute(CONVOLUTION_CONV_MODE)", what);
  DG_CHECK(cudnn.set(conv, TB_CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, TB_CUDNN_TYPE_INT64, 1, &sd),
           "cudnnBackendSetAttribute(CONVOLUTION_SPATIAL_DIMS)", what);
  static const struct { int attr; size_t offset; const char *api; } vectors[] = {
    {TB_CUDNN_ATTR_CONVOLUTION_DILATIONS, offsetof(conv_shape, dilation), "cudnnBackendSetAttribute(CONVOLUTION_DILATIONS)"},
    {TB_CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, offsetof(conv_shape, stride),
     "cudnnBackendSetAttribute(CONVOLUTION_FILTER_STRIDES)"},
    {TB_CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, offsetof(conv_shape, padding),
     "cudnnBackendSetAttribute(CONVOLUTION_PRE_PADDINGS)"},
    {TB_CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, offsetof(conv_shape, padding),
     "cudnnBackendSetAttribute(CONVOLUTION_POST_PADDINGS)"},
  };
  for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++)
    DG_CHECK(cudnn.set(conv, vectors[i].attr, TB_CUDNN_TYPE_INT64, sd,
                       (const int64_t *)((const char *)s + vectors[i].offset)), vectors[i].api, what);
  DG_CHECK(cudnn.finalize(conv), "cudnnBackendFinalize(CONVOLUTION)", what);
  if ((st = dg_desc(g, TB_CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op, "OPERATION_CONVOLUTION_FORWARD",
                    what)))
    return st;
  const float alpha = 1.0f, beta = 0.0f; /* y = conv(x, w): nothing of y's old content kept */
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, TB_CUDNN_TYPE_FLOAT, 1, &alpha),
           "cudnnBackendSetAttribute(OPERATION_CONVOLUTION_FORWARD_ALPHA)", what);
  DG_CHECK(cudnn.set(op, TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, TB_CUDNN_TYPE_FLOAT, 1, &beta),
           "cudnnBackendSetAttribute(OPERATION_CONVOLUTION_FORWARD_BETA)", what);
  const struct { int attr; tb_cudnnBackendDescriptor_t *d; const char *api; } links[] = {
    {TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, &conv,
     "cudnnBackendSetAttribute(OPERATION_CONVOLUTION_FORWARD_CONV_DESC)"},
    {TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, &x, "cudnnBackendSetAttribute(OPERATION_CONVOLUTION_FORWARD_X)"},
    {TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, &w, "cudnnBackendSetAttribute(OPERATION_CONVOLUTION_FORWARD_W)"},
    {TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, &y, "cudnnBackendSetAttribute(OPERATION_CONVOLUTION_FORWARD_Y)"},
  };
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
    DG_CHECK(cudnn.set(op, links[i].attr, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, links[i].d), links[i].api, what);
  return dg_add_op(g, op, "cudnnBackendFinalize(OPERATION_CONVOLUTION_FORWARD)", what);
}

gpu_status cuda_dnn_conv_create(dnn_graph **out, const dnn_conv_desc *d) {
  *out = NULL;
  gpu_status st = check_conv(d);
  if (st != GPU_OK) return st;
  tb_cudnnHandle_t handle;
  if ((st = cudnn_get_handle(&handle)) != GPU_OK) return st;
  conv_shape s = shape_of(d);
  char in[48], win[48], pad[48], str[48], dil[48];
  dims_text(in, sizeof in, d->nd, d->in);
  dims_text(win, sizeof win, d->nd, d->window);
  dims_text(pad, sizeof pad, d->nd, d->padding);
  dims_text(str, sizeof str, d->nd, d->stride);
  dims_text(dil, sizeof dil, d->nd, d->dilation);
  char problem[512];
  snprintf(problem, sizeof problem, "%d-d convolution forward of x (%lld, %lld, %s) %s by w (%lld, %lld, %s), groups "
           "%lld, stride (%s), padding (%s), dilation (%s)", d->nd, (long long)d->n, (long long)d->c, in,
           dnn_type_name(d->type), (long long)d->k, (long long)(d->c / d->groups), win, (long long)d->groups, str,
           pad, dil);
  dnn_graph *g = dg_new(problem);
  if (!g) return gpu_set_error(GPU_ERR_OOM, "dnn conv: out of host memory");
  char sin[48], swin[48], sout[48];
  dims_text(sin, sizeof sin, s.sd, s.in);
  dims_text(swin, sizeof swin, s.sd, s.window);
  dims_text(sout, sizeof sout, s.sd, s.out);
  snprintf(g->layout, sizeof g->layout, "%.300s%s: cross-correlation, %d spatial dims, x (%lld, %lld, %s), w (%lld, %lld, "
           "%s), y (%lld, %lld, %s) packed, %s data, fp32 compute", problem, d->nd == 1 ? " as 2-d with H = 1" : "",
           s.sd, (long long)d->n, (long long)d->c, sin, (long long)d->k, (long long)(d->c / d->groups), swin,
           (long long)d->n, (long long)d->k, sout, dnn_type_name(d->type));
  st = make_conv(g, d, &s);
  if (st == GPU_OK) st = dg_build(g, handle);
  if (st == GPU_OK && d->x) st = dg_bind(g);
  return dg_finish(g, st, out);
}

/* ---- max pooling (legacy API) ------------------------------------------------------------------ */

enum { P_X, P_Y, P_POOL };

static gpu_status pool_run(dnn_graph *g, tb_cudnnHandle_t handle) {
  const float one = 1.0f, zero = 0.0f; /* y = pool(x) */
  tb_cudnnStatus_t cs = cudnn.pool.forward(handle, g->legacy_desc[P_POOL], &one, g->legacy_desc[P_X],
                                           (const void *)(uintptr_t)g->legacy_io[0], &zero, g->legacy_desc[P_Y],
                                           (void *)(uintptr_t)g->legacy_io[1]);
  if (cs == TB_CUDNN_STATUS_SUCCESS) return GPU_OK;
  char what[1536];
  dg_describe(g, what, sizeof what);
  return cudnn_fail("cudnnPoolingForward", cs, what);
}

static void pool_destroy(dnn_graph *g) {
  if (g->legacy_desc[P_X]) cudnn.pool.destroy_tensor(g->legacy_desc[P_X]);
  if (g->legacy_desc[P_Y]) cudnn.pool.destroy_tensor(g->legacy_desc[P_Y]);
  if (g->legacy_desc[P_POOL]) cudnn.pool.destroy_pooling(g->legacy_desc[P_POOL]);
}

static gpu_status check_pool(const dnn_pool_desc *d, int64_t *ho, int64_t *wo) {
  if (d->n <= 0 || d->c <= 0 || d->h <= 0 || d->w <= 0)
    return gpu_set_error(GPU_ERR_INVALID, "dnn pool: n, c, h and w must be positive (n=%lld c=%lld h=%lld w=%lld)",
                         (long long)d->n, (long long)d->c, (long long)d->h, (long long)d->w);
  if (d->window < 1 || d->stride < 1 || d->padding < 0 || 2 * d->padding > d->window)
    return gpu_set_error(GPU_ERR_INVALID, "dnn pool: window %d and stride %d must be positive and padding %d in "
                         "[0, window / 2]", d->window, d->stride, d->padding);
  *ho = (d->h + 2 * d->padding - d->window) / d->stride + 1;
  *wo = (d->w + 2 * d->padding - d->window) / d->stride + 1;
  if (*ho < 1 || *wo < 1)
    return gpu_set_error(GPU_ERR_INVALID, "dnn pool: a %lld x %lld image gives no output", (long long)d->h,
                         (long long)d->w);
  /* the legacy descriptors take int dimensions and strides */
  if (d->n * d->c * d->h * d->w > INT_MAX)
    return gpu_set_error(GPU_ERR_INVALID, "dnn pool: %lld elements: cuDNN's legacy pooling takes int sizes",
                         (long long)(d->n * d->c * d->h * d->w));
  if ((unsigned)d->type > DNN_BF16) return gpu_set_error(GPU_ERR_INVALID, "dnn pool: unknown data type");
  if (!d->x != !d->y) return gpu_set_error(GPU_ERR_INVALID, "dnn pool: give both buffers (x, y) or none (a probe)");
  return GPU_OK;
}

gpu_status cuda_dnn_pool_create(dnn_graph **out, const dnn_pool_desc *d) {
  *out = NULL;
  int64_t ho = 0, wo = 0;
  gpu_status st = check_pool(d, &ho, &wo);
  if (st != GPU_OK) return st;
  if ((st = cudnn_legacy_pooling()) != GPU_OK) return st;
  tb_cudnnHandle_t handle;
  if ((st = cudnn_get_handle(&handle)) != GPU_OK) return st; /* a library that cannot run says so now */
  char problem[256];
  snprintf(problem, sizeof problem, "max pooling %dx%d stride %d padding %d of x (%lld, %lld, %lld, %lld) %s",
           d->window, d->window, d->stride, d->padding, (long long)d->n, (long long)d->c, (long long)d->h,
           (long long)d->w, dnn_type_name(d->type));
  dnn_graph *g = dg_new(problem);
  if (!g) return gpu_set_error(GPU_ERR_OOM, "dnn pool: out of host memory");
  snprintf(g->layout, sizeof g->layout, "%s into y (%lld, %lld, %lld, %lld), NCHW, CUDNN_POOLING_MAX, "
           "CUDNN_PROPAGATE_NAN", problem, (long long)d->n, (long long)d->c, (long long)ho, (long long)wo);
  g->legacy_destroy = pool_destroy;
  g->legacy_run = pool_run;
  snprintf(g->engine.legacy_api, sizeof g->engine.legacy_api, "cudnnPoolingForward");
  g->engine.global_index = -1;
  const char *what = g->problem;
  int type = dg_cudnn_type(d->type);
  tb_cudnnStatus_t cs;
  const char *api = "cudnnCreateTensorDescriptor";
  if ((cs = cudnn.pool.create_tensor(&g->legacy_desc[P_X])) == TB_CUDNN_STATUS_SUCCESS &&
      (cs = cudnn.pool.create_tensor(&g->legacy_desc[P_Y])) == TB_CUDNN_STATUS_SUCCESS) {
    api = "cudnnSetTensor4dDescriptor";
    if ((cs = cudnn.pool.set_tensor_4d(g->legacy_desc[P_X], TB_CUDNN_TENSOR_NCHW, type, (int)d->n, (int)d->c,
                                       (int)d->h, (int)d->w)) == TB_CUDNN_STATUS_SUCCESS)
      cs = cudnn.pool.set_tensor_4d(g->legacy_desc[P_Y], TB_CUDNN_TENSOR_NCHW, type, (int)d->n, (int)d->c, (int)ho,
                                    (int)wo);
  }
  if (cs == TB_CUDNN_STATUS_SUCCESS) {
    api = "cudnnCreatePoolingDescriptor";
    if ((cs = cudnn.pool.create_pooling(&g->legacy_desc[P_POOL])) == TB_CUDNN_STATUS_SUCCESS) {
      api = "cudnnSetPooling2dDescriptor";
      cs = cudnn.pool.set_pooling_2d(g->legacy_desc[P_POOL], TB_CUDNN_POOLING_MAX, TB_CUDNN_PROPAGATE_NAN, d->window,
                                     d->window, d->padding, d->padding, d->stride, d->stride);
    }
  }
  st = cs == TB_CUDNN_STATUS_SUCCESS ? GPU_OK : cudnn_fail(api, cs, what);
  if (st == GPU_OK && d->x) {
    g->legacy_io[0] = d->x;
    g->legacy_io[1] = d->y;
    g->bound = 1;
  }
  return dg_finish(g, st, out);
}
