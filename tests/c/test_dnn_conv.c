/* test_dnn_conv.c: cuda_dnn_conv.c without a GPU, against tests/c/stub/stub_cudnn.c opened through
 * TILEBENCH_CUDNN_LIB. Convolution: the graph given to cuDNN for a 1-d case (lifted to 2-d with
 * H = 1: dims, packed strides, cross-correlation, fp32 compute, paddings, strides), and for odd 1-d,
 * 2-d (dilated) and 3-d (depthwise, strided) cases the stub's host execution through the graph's
 * own strides compared with a convolution written here from OPERATORS.md's formula; the engine
 * kept when the first choices do not build and its workspace; probes; argument checks. Max pooling
 * (the legacy API): max mode with NaN propagation, the result on an odd image with a NaN and
 * padding compared with PyTorch's rule, the engine record (no engine: legacy_api), the probe that
 * cannot run; a cuDNN without the legacy pooling entry points (the stub built without them) makes
 * pooling no_library, naming the one missing, while the convolution still builds. Every descriptor is
 * destroyed. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_dnn_lib.h"
#include "gpu/dnn.h"
#include "stub/stub_cudnn.h"

#include "check.h"

extern const gpu_dnn gpu_cuda_dnn;
static struct stub_cudnn_state *stub;

static gpu_ptr host(const void *p) { return (gpu_ptr)(uintptr_t)p; }

static int64_t out_size(const dnn_conv_desc *d, int i) {
  return (d->in[i] + 2 * d->padding[i] - d->dilation[i] * (d->window[i] - 1) - 1) / d->stride[i] + 1;
}

/* OPERATORS.md 32-34: out[b, oc, o] = sum_{ic, t} in[b, g * Cin_g + ic, o * stride + t * dilation - pad]
 * * w[oc, ic, t], outside positions 0, every tensor packed NC(spatial). */
static void conv_ref(const dnn_conv_desc *d, const float *x, const float *w, float *y) {
  int64_t in[3] = {1, 1, 1}, win[3] = {1, 1, 1}, out[3] = {1, 1, 1}, str[3] = {1, 1, 1}, pad[3] = {0, 0, 0},
          dil[3] = {1, 1, 1};
  int off = 3 - d->nd; /* the sizes right-aligned: missing leading dimensions are 1 */
  for (int i = 0; i < d->nd; i++) {
    in[off + i] = d->in[i];
    win[off + i] = d->window[i];
    out[off + i] = out_size(d, i);
    str[off + i] = d->stride[i];
    pad[off + i] = d->padding[i];
    dil[off + i] = d->dilation[i];
  }
  int64_t cg = d->c / d->groups, kg = d->k / d->groups;
  for (int64_t b = 0; b < d->n; b++)
    for (int64_t oc = 0; oc < d->k; oc++)
      for (int64_t o0 = 0; o0 < out[0]; o0++)
        for (int64_t o1 = 0; o1 < out[1]; o1++)
          for (int64_t o2 = 0; o2 < out[2]; o2++) {
            double acc = 0;
            for (int64_t ic = 0; ic < cg; ic++)
              for (int64_t t0 = 0; t0 < win[0]; t0++)
                for (int64_t t1 = 0; t1 < win[1]; t1++)
                  for (int64_t t2 = 0; t2 < win[2]; t2++) {
                    int64_t p0 = o0 * str[0] + t0 * dil[0] - pad[0], p1 = o1 * str[1] + t1 * dil[1] - pad[1],
                            p2 = o2 * str[2] + t2 * dil[2] - pad[2];
                    if (p0 < 0 || p0 >= in[0] || p1 < 0 || p1 >= in[1] || p2 < 0 || p2 >= in[2]) continue;
                    int64_t c = (oc / kg) * cg + ic;
                    acc += (double)x[(((b * d->c + c) * in[0] + p0) * in[1] + p1) * in[2] + p2] *
                           w[(((oc * cg + ic) * win[0] + t0) * win[1] + t1) * win[2] + t2];
                  }
            y[(((b * d->k + oc) * out[0] + o0) * out[1] + o1) * out[2] + o2] = (float)acc;
          }
}

static float *filled(int64_t n, unsigned seed) {
  float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
  }
  return p;
}

static dnn_conv_desc conv(int nd, int64_t n, int64_t c, int64_t k, int64_t groups, const int64_t *in, int64_t window,
                          int64_t stride, int64_t padding, int64_t dilation) {
  dnn_conv_desc d = {.nd = nd, .n = n, .c = c, .k = k, .groups = groups, .type = DNN_F32};
  for (int i = 0; i < nd && i < DNN_MAX_SPATIAL; i++) { /* the bound for gcc's -Warray-bounds */
    d.in[i] = in[i];
    d.window[i] = window;
    d.stride[i] = stride;
    d.padding[i] = padding;
    d.dilation[i] = dilation;
  }
  return d;
}

/* Runs d through the stub with buffers and compares y with conv_ref. */
static void runs_like_the_formula(const char *label, dnn_conv_desc d) {
  int64_t nx = d.n * d.c, nw = d.k * (d.c / d.groups), ny = d.n * d.k;
  for (int i = 0; i < d.nd; i++) {
    nx *= d.in[i];
    nw *= d.window[i];
    ny *= out_size(&d, i);
  }
  float *x = filled(nx, 1), *w = filled(nw, 2), *y = filled(ny, 3), *want = filled(ny, 4);
  conv_ref(&d, x, w, want);
  d.x = host(x);
  d.w = host(w);
  d.y = host(y);
  dnn_graph *g = NULL;
  int before = stub->conv_computed;
  CHECK(gpu_cuda_dnn.conv_create(&g, &d) == GPU_OK && g, "%s: %s", label, gpu_last_error());
  if (g) {
    CHECK(gpu_cuda_dnn.run(g, (gpu_stream)0x1234) == GPU_OK, "%s: %s", label, gpu_last_error());
    CHECK(stub->conv_computed == before + 1, "%s: the stub did not compute", label);
    double worst = 0;
    for (int64_t i = 0; i < ny; i++) worst = fmax(worst, fabs((double)y[i] - want[i]));
    CHECK(worst < 1e-4, "%s: y differs from the formula by %g", label, worst);
    gpu_cuda_dnn.destroy(g);
  }
  free(x);
  free(w);
  free(y);
  free(want);
}

static void conv_1d_graph(void) {
  stub->configs = 3;
  stub->refuse = 1;
  const int64_t in[1] = {13};
  dnn_conv_desc d = conv(1, 2, 4, 6, 2, in, 3, 2, 1, 1);
  d.type = DNN_F16;
  dnn_graph *g = NULL;
  CHECK(gpu_cuda_dnn.conv_create(&g, &d) == GPU_OK && g, "%s", gpu_last_error());
  if (!g) return;
  const char *want = "conv mode 1 f32 dilation 1,1 stride 1,2 pre 0,1 post 0,1 #1 #2 -> #3\n"
                     "#1 f16 [2,4,1,13] [52,13,13,1]\n"
                     "#2 f16 [6,2,1,3] [6,3,3,1]\n"
                     "#3 f16 [2,6,1,7] [42,7,7,1]\n";
  CHECK(strcmp(stub->graph_text, want) == 0, "graph:\n%s\nwanted:\n%s", stub->graph_text, want);
  dnn_engine e;
  gpu_cuda_dnn.engine(g, &e);
  CHECK(e.rank == 1 && e.n_candidates == 3 && e.global_index == 101 && e.legacy_api[0] == '\0',
        "engine %lld rank %d of %d", (long long)e.global_index, e.rank, e.n_candidates);
  char text[1536];
  gpu_cuda_dnn.describe(g, text, sizeof text);
  CHECK(strstr(text, "1-d convolution forward of x (2, 4, 13) fp16 by w (6, 2, 3), groups 2, stride (2), padding (1), "
                     "dilation (1) as 2-d with H = 1") && strstr(text, "heuristic choice 2 of 3"), "%s", text);
  CHECK(gpu_cuda_dnn.run(g, NULL) == GPU_ERR_INVALID && strstr(gpu_last_error(), "a probe"), "a probe ran: %s",
        gpu_last_error());
  gpu_cuda_dnn.destroy(g);
  stub->refuse = 0;
  stub->configs = 0; /* no engine: the message names the problem */
  g = (dnn_graph *)1;
  CHECK(gpu_cuda_dnn.conv_create(&g, &d) == GPU_ERR_INVALID && g == NULL &&
            strstr(gpu_last_error(), "cuDNN offers no engine for 1-d convolution forward"), "%s", gpu_last_error());
  stub->configs = 3;
}

static void conv_results(void) {
  const int64_t l[1] = {13}, hw[2] = {7, 9}, dhw[3] = {5, 6, 7};
  runs_like_the_formula("1-d, groups 2, stride 2", conv(1, 2, 4, 6, 2, l, 3, 2, 1, 1));
  runs_like_the_formula("1-d, window 5, padding 2", conv(1, 1, 3, 5, 1, l, 5, 1, 2, 1));
  runs_like_the_formula("2-d, dilation 2", conv(2, 1, 3, 4, 1, hw, 3, 1, 2, 2));
  runs_like_the_formula("2-d, groups 3, stride 2", conv(2, 2, 6, 3, 3, hw, 3, 2, 1, 1));
  runs_like_the_formula("3-d, depthwise, stride 2", conv(3, 1, 2, 2, 2, dhw, 3, 2, 1, 1));
  runs_like_the_formula("3-d, padding 1", conv(3, 1, 2, 3, 1, dhw, 3, 1, 1, 1));
}

static void conv_bad_arguments(void) {
  const int64_t hw[2] = {7, 7};
  struct { dnn_conv_desc d; const char *says; } cases[] = {
    {conv(2, 1, 6, 4, 4, hw, 3, 1, 1, 1), "groups 4 must divide c = 6 and k = 4"},
    {conv(2, 1, 4, 4, 1, hw, 9, 1, 0, 1), "spatial dimension 0 gives no output"},
    {conv(2, 1, 4, 4, 1, hw, 3, 1, 1, 1), "4 spatial dimensions"}, /* nd set to 4 below */
    {conv(2, 1, 4, 4, 1, hw, 3, 0, 1, 1), "must be positive"},
  };
  cases[2].d.nd = 4; /* built as 2-d: conv() reads nd entries of hw */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dnn_graph *g = (dnn_graph *)1;
    CHECK(gpu_cuda_dnn.conv_create(&g, &cases[i].d) == GPU_ERR_INVALID && g == NULL &&
              strstr(gpu_last_error(), cases[i].says), "case %zu: %s", i, gpu_last_error());
  }
  float *buf = filled(1024, 5);
  dnn_conv_desc d = conv(2, 1, 4, 4, 1, hw, 3, 1, 1, 1);
  d.x = host(buf) + 4;
  d.w = host(buf);
  d.y = host(buf);
  dnn_graph *g = (dnn_graph *)1;
  CHECK(gpu_cuda_dnn.conv_create(&g, &d) == GPU_ERR_INVALID && g == NULL && strstr(gpu_last_error(), "16-byte aligned"),
        "%s", gpu_last_error());
  d.x = host(buf);
  d.w = 0;
  CHECK(gpu_cuda_dnn.conv_create(&g, &d) == GPU_ERR_INVALID && strstr(gpu_last_error(), "or none (a probe)"), "%s",
        gpu_last_error());
  free(buf);
}

/* PyTorch's max_pool2d: -inf padding, a NaN in the window gives NaN. */
static void pool_ref(const dnn_pool_desc *d, const float *x, float *y, int64_t ho, int64_t wo) {
  for (int64_t pl = 0; pl < d->n * d->c; pl++)
    for (int64_t oh = 0; oh < ho; oh++)
      for (int64_t ow = 0; ow < wo; ow++) {
        float m = -INFINITY;
        for (int i = 0; i < d->window; i++)
          for (int j = 0; j < d->window; j++) {
            int64_t r = oh * d->stride - d->padding + i, c = ow * d->stride - d->padding + j;
            if (r < 0 || r >= d->h || c < 0 || c >= d->w) continue;
            float v = x[(pl * d->h + r) * d->w + c];
            if (v > m || isnan(v)) m = v;
            if (isnan(m)) break;
          }
        y[(pl * ho + oh) * wo + ow] = m;
      }
}

static void max_pooling(void) {
  dnn_pool_desc d = {.n = 2, .c = 3, .h = 7, .w = 9, .window = 3, .stride = 2, .padding = 1, .type = DNN_F32};
  int64_t ho = 4, wo = 5, nx = 2 * 3 * 7 * 9, ny = 2 * 3 * ho * wo;
  float *x = filled(nx, 7), *y = filled(ny, 8), *want = filled(ny, 9);
  for (int64_t i = 0; i < 7 * 9; i++) x[i] = -2.0f - (float)i / 100.0f; /* plane 0 negative: padding must lose */
  x[63 + 3 * 9 + 5] = NAN; /* plane 1, row 3, column 5: in 2 x 2 windows */
  pool_ref(&d, x, want, ho, wo);
  dnn_graph *g = NULL;
  CHECK(gpu_cuda_dnn.pool_create(&g, &d) == GPU_OK && g, "probe: %s", gpu_last_error());
  if (g) {
    CHECK(gpu_cuda_dnn.run(g, NULL) == GPU_ERR_INVALID && strstr(gpu_last_error(), "a probe"), "a probe ran");
    gpu_cuda_dnn.destroy(g);
  }
  d.x = host(x);
  d.y = host(y);
  g = NULL;
  CHECK(gpu_cuda_dnn.pool_create(&g, &d) == GPU_OK && g, "%s", gpu_last_error());
  if (!g) return;
  CHECK(stub->pool_mode == 0 && stub->pool_nan == 1, "mode %d (max: 0), NaN option %d (propagate: 1)",
        stub->pool_mode, stub->pool_nan);
  int before = stub->pool_computed;
  CHECK(gpu_cuda_dnn.run(g, (gpu_stream)0x1234) == GPU_OK && stub->pool_computed == before + 1, "%s",
        gpu_last_error());
  int nans = 0, wrong = 0;
  for (int64_t i = 0; i < ny; i++) {
    nans += isnan(y[i]);
    wrong += isnan(want[i]) ? !isnan(y[i]) : y[i] != want[i];
  }
  CHECK(wrong == 0 && nans == 4, "%d outputs differ from max_pool2d's, %d NaN (4 windows hold the NaN)", wrong, nans);
  dnn_engine e;
  gpu_cuda_dnn.engine(g, &e);
  CHECK(strcmp(e.legacy_api, "cudnnPoolingForward") == 0 && e.global_index == -1 && e.workspace_bytes == 0,
        "engine record: '%s' %lld", e.legacy_api, (long long)e.global_index);
  char text[1536];
  gpu_cuda_dnn.describe(g, text, sizeof text);
  CHECK(strstr(text, "max pooling 3x3 stride 2 padding 1 of x (2, 3, 7, 9) fp32 into y (2, 3, 4, 5)") &&
            strstr(text, "legacy cudnnPoolingForward (no engine choice), workspace 0 B"), "%s", text);
  gpu_cuda_dnn.destroy(g);
  dnn_pool_desc bad = d;
  bad.padding = 2;
  g = (dnn_graph *)1;
  CHECK(gpu_cuda_dnn.pool_create(&g, &bad) == GPU_ERR_INVALID && g == NULL &&
            strstr(gpu_last_error(), "padding 2 in [0, window / 2]"), "%s", gpu_last_error());
  bad = d;
  bad.h = 1;
  bad.window = 5;
  bad.padding = 1;
  CHECK(gpu_cuda_dnn.pool_create(&g, &bad) == GPU_ERR_INVALID && strstr(gpu_last_error(), "gives no output"), "%s",
        gpu_last_error());
  free(x);
  free(y);
  free(want);
}

/* A library without the legacy pooling API: pooling is no_library, naming the entry point; the
 * convolution (the graph API) still builds. */
static void without_legacy_pooling(void) {
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", STUB_CUDNN_NOLEGACY_PATH, 1);
  dnn_pool_desc d = {.n = 1, .c = 1, .h = 8, .w = 8, .window = 3, .stride = 2, .padding = 1, .type = DNN_F16};
  dnn_graph *g = (dnn_graph *)1;
  CHECK(gpu_cuda_dnn.pool_create(&g, &d) == GPU_ERR_NO_LIBRARY && g == NULL &&
            strstr(gpu_last_error(), "lacks cudnnCreateTensorDescriptor: its legacy pooling API is not exported"),
        "%s", gpu_last_error());
  const int64_t in[2] = {8, 8};
  dnn_conv_desc c = conv(2, 1, 8, 8, 1, in, 3, 1, 1, 1);
  CHECK(gpu_cuda_dnn.conv_create(&g, &c) == GPU_OK && g, "conv without the legacy API: %s", gpu_last_error());
  if (g) gpu_cuda_dnn.destroy(g);
}

int main(void) {
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", STUB_CUDNN_PATH, 1);
  CHECK(gpu_cuda_dnn.lib.init() == GPU_OK, "%s", gpu_last_error());
  void *h = dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_NOLOAD);
  stub = h ? dlsym(h, "stub_cudnn_state") : NULL;
  CHECK(stub != NULL, "the stub is not the library opened");
  if (stub) {
    conv_1d_graph();
    conv_results();
    conv_bad_arguments();
    max_pooling();
    CHECK(stub->live == 0, "%d descriptors left", stub->live);
  }
  without_legacy_pooling();
  cudnn_reset_for_tests();
  if (failures == 0) printf("test_dnn_conv: ok\n");
  return failures != 0;
}
