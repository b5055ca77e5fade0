/* cuda_dnn.c: CUDA's DNN table (gpu_dnn, dnn.h): training-mode batch normalisation as a cuDNN 9
 * backend-API graph of one NORM_FORWARD operation (CUDNN_BATCH_NORM, training phase).
 *
 * x (n, c) row-major is cuDNN's 4-d (N, C, H, W) = (n, c, 1, 1) with strides (c, 1, c, c): channels
 * innermost, the NHWC order cuDNN's normalisation engines take; scale, bias and the saved mean and
 * inverse standard deviation are (1, c, 1, 1), epsilon a by-value (1, 1, 1, 1) fp32 scalar that
 * the variant pack points at in host memory. The heuristic (instant mode, then fallback) ranks the
 * engines; the first whose execution plan finalises is kept, and which one (global index, knob
 * choices, its rank) is recorded for the results. Every failing call names itself, the tensor or
 * step it was for, and cuDNN's own last error message. */
#include "dnn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_dnn_lib.h"

enum { T_X, T_SCALE, T_BIAS, T_EPS, T_Y, T_MEAN, T_INV_VAR, T_COUNT };
static const char *const tensor_names[T_COUNT] = {"x", "scale", "bias", "epsilon", "y", "mean",
                                                  "inv_variance"};
#define MAX_CANDIDATES 64

struct dnn_graph {
  dnn_batchnorm_desc d;
  tb_cudnnBackendDescriptor_t t[T_COUNT], op, graph, plan, pack;
  dnn_engine engine;
  gpu_ptr workspace;
  _Alignas(16) float eps_value; /* the by-value epsilon: the variant pack points here */
  int bound;
};

#define CHECK(call, api, what)                                             \
  do {                                                                     \
    tb_cudnnStatus_t st_ = (call);                                         \
    if (st_ != TB_CUDNN_STATUS_SUCCESS) return cudnn_fail(api, st_, what); \
  } while (0)

static int cudnn_type(dnn_type t) {
  return t == DNN_F16 ? TB_CUDNN_DATA_HALF : t == DNN_BF16 ? TB_CUDNN_DATA_BFLOAT16 : TB_CUDNN_DATA_FLOAT;
}

static gpu_status make_tensor(tb_cudnnBackendDescriptor_t *t, int64_t uid, dnn_type type,
                              const int64_t dims[4], const int64_t strides[4], int by_value) {
  const char *what = tensor_names[uid];
  int dt = cudnn_type(type);
  int64_t align = 16;
  _Bool value = by_value != 0;
  CHECK(cudnn.desc_create(TB_CUDNN_BACKEND_TENSOR_DESCRIPTOR, t), "cudnnBackendCreateDescriptor(TENSOR)", what);
  CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_DATA_TYPE, TB_CUDNN_TYPE_DATA_TYPE, 1, &dt),
        "cudnnBackendSetAttribute(TENSOR_DATA_TYPE)", what);
  CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_DIMENSIONS, TB_CUDNN_TYPE_INT64, 4, dims),
        "cudnnBackendSetAttribute(TENSOR_DIMENSIONS)", what);
  CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_STRIDES, TB_CUDNN_TYPE_INT64, 4, strides),
        "cudnnBackendSetAttribute(TENSOR_STRIDES)", what);
  CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_UNIQUE_ID, TB_CUDNN_TYPE_INT64, 1, &uid),
        "cudnnBackendSetAttribute(TENSOR_UNIQUE_ID)", what);
  CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, TB_CUDNN_TYPE_INT64, 1, &align),
        "cudnnBackendSetAttribute(TENSOR_BYTE_ALIGNMENT)", what);
  if (by_value)
    CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_IS_BY_VALUE, TB_CUDNN_TYPE_BOOLEAN, 1, &value),
          "cudnnBackendSetAttribute(TENSOR_IS_BY_VALUE)", what);
  CHECK(cudnn.finalize(*t), "cudnnBackendFinalize(TENSOR)", what);
  return GPU_OK;
}

static gpu_status make_operation(dnn_graph *g, tb_cudnnHandle_t handle) {
  const dnn_batchnorm_desc *d = &g->d;
  const int64_t xd[4] = {d->n, d->c, 1, 1}, xs[4] = {d->c, 1, d->c, d->c};
  const int64_t pd[4] = {1, d->c, 1, 1}, ps[4] = {d->c, 1, d->c, d->c};
  const int64_t one[4] = {1, 1, 1, 1};
  gpu_status st;
  if ((st = make_tensor(&g->t[T_X], T_X, d->x_type, xd, xs, 0)) ||
      (st = make_tensor(&g->t[T_Y], T_Y, d->x_type, xd, xs, 0)) ||
      (st = make_tensor(&g->t[T_SCALE], T_SCALE, d->param_type, pd, ps, 0)) ||
      (st = make_tensor(&g->t[T_BIAS], T_BIAS, d->param_type, pd, ps, 0)) ||
      (st = make_tensor(&g->t[T_MEAN], T_MEAN, DNN_F32, pd, ps, 0)) ||
      (st = make_tensor(&g->t[T_INV_VAR], T_INV_VAR, DNN_F32, pd, ps, 0)) ||
      (st = make_tensor(&g->t[T_EPS], T_EPS, DNN_F32, one, one, 1)))
    return st;
  const char *what = "the batch-norm operation";
  int mode = TB_CUDNN_BATCH_NORM, phase = TB_CUDNN_NORM_FWD_TRAINING;
  CHECK(cudnn.desc_create(TB_CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, &g->op),
        "cudnnBackendCreateDescriptor(OPERATION_NORM_FORWARD)", what);
  CHECK(cudnn.set(g->op, TB_CUDNN_ATTR_OPERATION_NORM_FWD_MODE, TB_CUDNN_TYPE_NORM_MODE, 1, &mode),
        "cudnnBackendSetAttribute(NORM_FWD_MODE)", what);
  CHECK(cudnn.set(g->op, TB_CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, TB_CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase),
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
    CHECK(cudnn.set(g->op, links[i].attr, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->t[links[i].tensor]),
          links[i].api, what);
  CHECK(cudnn.finalize(g->op), "cudnnBackendFinalize(OPERATION_NORM_FORWARD)", what);
  what = "the operation graph";
  CHECK(cudnn.desc_create(TB_CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph),
        "cudnnBackendCreateDescriptor(OPERATIONGRAPH)", what);
  CHECK(cudnn.set(g->graph, TB_CUDNN_ATTR_OPERATIONGRAPH_HANDLE, TB_CUDNN_TYPE_HANDLE, 1, &handle),
        "cudnnBackendSetAttribute(OPERATIONGRAPH_HANDLE)", what);
  CHECK(cudnn.set(g->graph, TB_CUDNN_ATTR_OPERATIONGRAPH_OPS, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->op),
        "cudnnBackendSetAttribute(OPERATIONGRAPH_OPS)", what);
  CHECK(cudnn.finalize(g->graph), "cudnnBackendFinalize(OPERATIONGRAPH)", what);
  return GPU_OK;
}

static void destroy_all(tb_cudnnBackendDescriptor_t *ds, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (ds[i]) cudnn.desc_destroy(ds[i]);
}

/* The heuristic's engine configurations in rank order (mode instant, or fallback when instant
 * offers none); *n of them in cfgs, each to be destroyed by the caller. */
static gpu_status heuristic(dnn_graph *g, tb_cudnnBackendDescriptor_t cfgs[MAX_CANDIDATES], int64_t *n) {
  static const int modes[] = {TB_CUDNN_HEUR_MODE_INSTANT, TB_CUDNN_HEUR_MODE_FALLBACK};
  const char *what = "the engine heuristic";
  *n = 0;
  for (int m = 0; m < 2 && *n == 0; m++) {
    tb_cudnnBackendDescriptor_t heur = NULL;
    gpu_status st = GPU_OK;
    tb_cudnnStatus_t cs;
    int64_t count = 0;
#define STEP(call, api)                                                            \
    if (st == GPU_OK && (cs = (call)) != TB_CUDNN_STATUS_SUCCESS) st = cudnn_fail(api, cs, what)
    STEP(cudnn.desc_create(TB_CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur), "cudnnBackendCreateDescriptor(ENGINEHEUR)");
    STEP(cudnn.set(heur, TB_CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->graph),
         "cudnnBackendSetAttribute(ENGINEHEUR_OPERATION_GRAPH)");
    STEP(cudnn.set(heur, TB_CUDNN_ATTR_ENGINEHEUR_MODE, TB_CUDNN_TYPE_HEUR_MODE, 1, &modes[m]),
         "cudnnBackendSetAttribute(ENGINEHEUR_MODE)");
    STEP(cudnn.finalize(heur), "cudnnBackendFinalize(ENGINEHEUR)");
    STEP(cudnn.get(heur, TB_CUDNN_ATTR_ENGINEHEUR_RESULTS, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL),
         "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS count)");
    if (count > MAX_CANDIDATES) count = MAX_CANDIDATES;
    for (int64_t i = 0; st == GPU_OK && i < count; i++)
      STEP(cudnn.desc_create(TB_CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]),
           "cudnnBackendCreateDescriptor(ENGINECFG)");
    int64_t got = 0;
    if (count > 0)
      STEP(cudnn.get(heur, TB_CUDNN_ATTR_ENGINEHEUR_RESULTS, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs),
           "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)");
#undef STEP
    if (heur) cudnn.desc_destroy(heur);
    if (st != GPU_OK) {
      destroy_all(cfgs, count);
      memset(cfgs, 0, sizeof(cfgs[0]) * (size_t)count);
      return st;
    }
    if (got < count) { /* fewer than announced: free the unfilled ones */
      destroy_all(cfgs + got, count - got);
      memset(cfgs + got, 0, sizeof(cfgs[0]) * (size_t)(count - got));
    }
    *n = got;
  }
  return GPU_OK;
}

/* Reads which engine cfg names and its knob choices into g->engine. */
static gpu_status read_engine(dnn_graph *g, tb_cudnnBackendDescriptor_t cfg) {
  const char *what = "the chosen engine configuration";
  tb_cudnnBackendDescriptor_t engine = NULL, knobs[DNN_MAX_KNOBS] = {0};
  int64_t n = 0, nk = 0;
  gpu_status st = GPU_OK;
  tb_cudnnStatus_t cs;
#define STEP(call, api) \
  if (st == GPU_OK && (cs = (call)) != TB_CUDNN_STATUS_SUCCESS) st = cudnn_fail(api, cs, what)
  STEP(cudnn.desc_create(TB_CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine), "cudnnBackendCreateDescriptor(ENGINE)");
  STEP(cudnn.get(cfg, TB_CUDNN_ATTR_ENGINECFG_ENGINE, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine),
       "cudnnBackendGetAttribute(ENGINECFG_ENGINE)");
  STEP(cudnn.get(engine, TB_CUDNN_ATTR_ENGINE_GLOBAL_INDEX, TB_CUDNN_TYPE_INT64, 1, &n, &g->engine.global_index),
       "cudnnBackendGetAttribute(ENGINE_GLOBAL_INDEX)");
  for (int i = 0; st == GPU_OK && i < DNN_MAX_KNOBS; i++)
    STEP(cudnn.desc_create(TB_CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]),
         "cudnnBackendCreateDescriptor(KNOB_CHOICE)");
  STEP(cudnn.get(cfg, TB_CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, DNN_MAX_KNOBS, &nk,
                 knobs), "cudnnBackendGetAttribute(ENGINECFG_KNOB_CHOICES)");
  if (nk > DNN_MAX_KNOBS) nk = DNN_MAX_KNOBS;
  for (int64_t i = 0; st == GPU_OK && i < nk; i++) {
    int type = 0;
    int64_t value = 0;
    STEP(cudnn.get(knobs[i], TB_CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, TB_CUDNN_TYPE_KNOB_TYPE, 1, &n, &type),
         "cudnnBackendGetAttribute(KNOB_CHOICE_KNOB_TYPE)");
    STEP(cudnn.get(knobs[i], TB_CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, TB_CUDNN_TYPE_INT64, 1, &n, &value),
         "cudnnBackendGetAttribute(KNOB_CHOICE_KNOB_VALUE)");
    g->engine.knob_type[i] = type;
    g->engine.knob_value[i] = value;
  }
#undef STEP
  if (st == GPU_OK) g->engine.n_knobs = (int)nk;
  destroy_all(knobs, DNN_MAX_KNOBS);
  if (engine) cudnn.desc_destroy(engine);
  return st;
}

/* The first configuration, in the heuristic's order, whose execution plan finalises. */
static gpu_status choose_plan(dnn_graph *g, tb_cudnnHandle_t handle) {
  tb_cudnnBackendDescriptor_t cfgs[MAX_CANDIDATES] = {0};
  int64_t n = 0;
  gpu_status st = heuristic(g, cfgs, &n);
  if (st != GPU_OK) return st;
  char first_refusal[1024] = "";
  for (int64_t i = 0; i < n && !g->plan; i++) {
    tb_cudnnBackendDescriptor_t plan = NULL;
    tb_cudnnStatus_t cs = cudnn.desc_create(TB_CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
    const char *api = "cudnnBackendCreateDescriptor(EXECUTION_PLAN)";
    if (cs == TB_CUDNN_STATUS_SUCCESS) {
      api = "cudnnBackendSetAttribute(EXECUTION_PLAN_HANDLE)";
      cs = cudnn.set(plan, TB_CUDNN_ATTR_EXECUTION_PLAN_HANDLE, TB_CUDNN_TYPE_HANDLE, 1, &handle);
    }
    if (cs == TB_CUDNN_STATUS_SUCCESS) {
      api = "cudnnBackendSetAttribute(EXECUTION_PLAN_ENGINE_CONFIG)";
      cs = cudnn.set(plan, TB_CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
    }
    if (cs == TB_CUDNN_STATUS_SUCCESS) {
      api = "cudnnBackendFinalize(EXECUTION_PLAN)";
      cs = cudnn.finalize(plan);
    }
    if (cs != TB_CUDNN_STATUS_SUCCESS) {
      if (plan) cudnn.desc_destroy(plan);
      if (!first_refusal[0]) {
        char what[64];
        snprintf(what, sizeof what, "engine configuration %lld", (long long)i + 1);
        cudnn_fail(api, cs, what);
        snprintf(first_refusal, sizeof first_refusal, "%s", gpu_last_error());
      }
      continue;
    }
    g->plan = plan;
    g->engine.rank = (int)i;
    st = read_engine(g, cfgs[i]);
  }
  destroy_all(cfgs, n);
  if (st != GPU_OK) return st;
  g->engine.n_candidates = (int)n;
  if (!g->plan)
    return gpu_set_error(GPU_ERR_INVALID, "cuDNN offers no engine for batch norm (training) of x "
                         "(%lld, %lld) %s, scale/bias %s: the heuristic gave %lld configuration%s%s%s",
                         (long long)g->d.n, (long long)g->d.c, dnn_type_name(g->d.x_type),
                         dnn_type_name(g->d.param_type), (long long)n, n == 1 ? "" : "s",
                         first_refusal[0] ? "; the first refused: " : "", first_refusal);
  int64_t ws = 0, cnt = 0;
  CHECK(cudnn.get(g->plan, TB_CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, TB_CUDNN_TYPE_INT64, 1, &cnt, &ws),
        "cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)", "the execution plan");
  g->engine.workspace_bytes = ws > 0 ? (size_t)ws : 0;
  return GPU_OK;
}

static gpu_status bind(dnn_graph *g) {
  const dnn_batchnorm_desc *d = &g->d;
  const char *what = "the variant pack";
  if (g->engine.workspace_bytes) {
    gpu_status st = gpu_cuda_backend()->mem_alloc(&g->workspace, g->engine.workspace_bytes);
    if (st != GPU_OK) return st;
  }
  g->eps_value = d->eps;
  int64_t uids[T_COUNT];
  void *ptrs[T_COUNT];
  const gpu_ptr dev[T_COUNT] = {d->x, d->scale, d->bias, 0, d->y, d->mean, d->inv_var};
  for (int i = 0; i < T_COUNT; i++) {
    uids[i] = i;
    ptrs[i] = i == T_EPS ? (void *)&g->eps_value : (void *)(uintptr_t)dev[i];
  }
  void *ws = (void *)(uintptr_t)g->workspace;
  CHECK(cudnn.desc_create(TB_CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &g->pack),
        "cudnnBackendCreateDescriptor(VARIANT_PACK)", what);
  CHECK(cudnn.set(g->pack, TB_CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, TB_CUDNN_TYPE_INT64, T_COUNT, uids),
        "cudnnBackendSetAttribute(VARIANT_PACK_UNIQUE_IDS)", what);
  CHECK(cudnn.set(g->pack, TB_CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, TB_CUDNN_TYPE_VOID_PTR, T_COUNT, ptrs),
        "cudnnBackendSetAttribute(VARIANT_PACK_DATA_POINTERS)", what);
  CHECK(cudnn.set(g->pack, TB_CUDNN_ATTR_VARIANT_PACK_WORKSPACE, TB_CUDNN_TYPE_VOID_PTR, 1, &ws),
        "cudnnBackendSetAttribute(VARIANT_PACK_WORKSPACE)", what);
  CHECK(cudnn.finalize(g->pack), "cudnnBackendFinalize(VARIANT_PACK)", what);
  g->bound = 1;
  return GPU_OK;
}

static void dnn_destroy(dnn_graph *g);

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

static gpu_status dnn_batchnorm_create_(dnn_graph **out, const dnn_batchnorm_desc *d) {
  *out = NULL;
  gpu_status st = check_desc(d);
  if (st != GPU_OK) return st;
  tb_cudnnHandle_t handle;
  if ((st = cudnn_get_handle(&handle)) != GPU_OK) return st;
  dnn_graph *g = calloc(1, sizeof *g);
  if (!g) return gpu_set_error(GPU_ERR_OOM, "dnn batchnorm: out of host memory");
  g->d = *d;
  st = make_operation(g, handle);
  if (st == GPU_OK) st = choose_plan(g, handle);
  if (st == GPU_OK && d->x) st = bind(g);
  if (st != GPU_OK) {
    char keep[2048];
    snprintf(keep, sizeof keep, "%s", gpu_last_error());
    dnn_destroy(g);
    return gpu_set_error(st, "%s", keep);
  }
  *out = g;
  return GPU_OK;
}

static size_t dnn_describe(const dnn_graph *g, char *buf, size_t len) {
  const dnn_batchnorm_desc *d = &g->d;
  const dnn_engine *e = &g->engine;
  int n = snprintf(buf, len, "cuDNN batch norm (training) x (%lld, %lld) %s as NCHW (%lld, %lld, 1, 1) "
                   "strides (%lld, 1, %lld, %lld), scale/bias %s, mean/inv_variance fp32, eps %g; "
                   "engine %lld, knobs {",
                   (long long)d->n, (long long)d->c, dnn_type_name(d->x_type), (long long)d->n,
                   (long long)d->c, (long long)d->c, (long long)d->c, (long long)d->c,
                   dnn_type_name(d->param_type), (double)d->eps, (long long)e->global_index);
  size_t used = n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
  for (int i = 0; i < e->n_knobs && used + 1 < len; i++) {
    n = snprintf(buf + used, len - used, "%s%lld=%lld", i ? ", " : "", (long long)e->knob_type[i],
                 (long long)e->knob_value[i]);
    used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
  }
  if (used + 1 < len) {
    n = snprintf(buf + used, len - used, "}, heuristic choice %d of %d, workspace %zu B", e->rank + 1,
                 e->n_candidates, e->workspace_bytes);
    used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
  }
  return used;
}

static gpu_status dnn_run(dnn_graph *g, gpu_stream s) {
  if (!g->bound)
    return gpu_set_error(GPU_ERR_INVALID, "dnn graph: a probe (made without buffers) cannot run");
  tb_cudnnHandle_t handle;
  gpu_status st = cudnn_get_handle(&handle);
  if (st != GPU_OK) return st;
  char what[1024];
  tb_cudnnStatus_t cs = cudnn.set_stream(handle, gpu_cuda_backend()->native_stream(s));
  if (cs != TB_CUDNN_STATUS_SUCCESS) {
    dnn_describe(g, what, sizeof what);
    return cudnn_fail("cudnnSetStream", cs, what);
  }
  cs = cudnn.execute(handle, g->plan, g->pack);
  if (cs != TB_CUDNN_STATUS_SUCCESS) {
    dnn_describe(g, what, sizeof what);
    return cudnn_fail("cudnnBackendExecute", cs, what);
  }
  return GPU_OK;
}

static void dnn_engine_of(const dnn_graph *g, dnn_engine *e) { *e = g->engine; }

static void dnn_destroy(dnn_graph *g) {
  if (!g) return;
  if (g->workspace) gpu_cuda_backend()->mem_free(g->workspace);
  tb_cudnnBackendDescriptor_t rest[] = {g->pack, g->plan, g->graph, g->op};
  destroy_all(rest, 4);
  destroy_all(g->t, T_COUNT);
  free(g);
}

static gpu_status dnn_version_(size_t *version, char *path, size_t path_len) {
  gpu_status st = cudnn_open();
  if (st != GPU_OK) return st;
  if (version) *version = cudnn.get_version();
  if (path && path_len) snprintf(path, path_len, "%s", cudnn.path);
  return GPU_OK;
}

extern const gpu_dnn gpu_cuda_dnn; /* cuda.c's backend table points here */
const gpu_dnn gpu_cuda_dnn = {
  .name = "cuDNN",
  .init = cudnn_open,
  .version = dnn_version_,
  .batchnorm_create = dnn_batchnorm_create_,
  .run = dnn_run,
  .engine = dnn_engine_of,
  .describe = dnn_describe,
  .destroy = dnn_destroy,
};
