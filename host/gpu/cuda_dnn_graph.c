/* cuda_dnn_graph.c: the cuDNN backend graph machinery cuda_dnn.c (batch norm) and cuda_dnn_sdpa.c
 * (attention) share (cuda_dnn_graph.h): descriptors recorded for destruction, tensors, the
 * operation graph, the engine choice (the heuristic's configurations in rank order, instant mode
 * then fallback; the first whose execution plan finalises is kept and what it is recorded: global
 * index, knob choices, rank, workspace), the variant pack, execution. Every failing call names
 * itself, the tensor or step it was for, and cuDNN's own last error message. */
#include "cuda_dnn_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDIDATES 64

int dg_cudnn_type(dnn_type t) {
  return t == DNN_F16 ? TB_CUDNN_DATA_HALF : t == DNN_BF16 ? TB_CUDNN_DATA_BFLOAT16 : TB_CUDNN_DATA_FLOAT;
}

dnn_graph *dg_new(const char *problem) {
  dnn_graph *g = calloc(1, sizeof *g);
  if (g) snprintf(g->problem, sizeof g->problem, "%s", problem);
  return g;
}

gpu_status dg_desc(dnn_graph *g, int type, tb_cudnnBackendDescriptor_t *out, const char *type_name,
                   const char *what) {
  *out = NULL;
  if (g->n_descs == DNN_MAX_DESCS)
    return gpu_set_error(GPU_ERR_INVALID, "dnn graph: more than %d descriptors (%s for %s)", DNN_MAX_DESCS,
                         type_name, what);
  char api[96];
  snprintf(api, sizeof api, "cudnnBackendCreateDescriptor(%s)", type_name);
  DG_CHECK(cudnn.desc_create(type, out), api, what);
  g->descs[g->n_descs++] = *out;
  return GPU_OK;
}

gpu_status dg_tensor(dnn_graph *g, tb_cudnnBackendDescriptor_t *t, const char *what, int64_t uid, int dt, int nd,
                     const int64_t *dims, const int64_t *strides, int flags, gpu_ptr dev, float value) {
  int64_t align = 16;
  _Bool yes = 1;
  gpu_status st = dg_desc(g, TB_CUDNN_BACKEND_TENSOR_DESCRIPTOR, t, "TENSOR", what);
  if (st != GPU_OK) return st;
  DG_CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_DATA_TYPE, TB_CUDNN_TYPE_DATA_TYPE, 1, &dt),
           "cudnnBackendSetAttribute(TENSOR_DATA_TYPE)", what);
  DG_CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_DIMENSIONS, TB_CUDNN_TYPE_INT64, nd, dims),
           "cudnnBackendSetAttribute(TENSOR_DIMENSIONS)", what);
  DG_CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_STRIDES, TB_CUDNN_TYPE_INT64, nd, strides),
           "cudnnBackendSetAttribute(TENSOR_STRIDES)", what);
  DG_CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_UNIQUE_ID, TB_CUDNN_TYPE_INT64, 1, &uid),
           "cudnnBackendSetAttribute(TENSOR_UNIQUE_ID)", what);
  DG_CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, TB_CUDNN_TYPE_INT64, 1, &align),
           "cudnnBackendSetAttribute(TENSOR_BYTE_ALIGNMENT)", what);
  if (flags & DG_VIRTUAL)
    DG_CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_IS_VIRTUAL, TB_CUDNN_TYPE_BOOLEAN, 1, &yes),
             "cudnnBackendSetAttribute(TENSOR_IS_VIRTUAL)", what);
  if (flags & DG_BY_VALUE)
    DG_CHECK(cudnn.set(*t, TB_CUDNN_ATTR_TENSOR_IS_BY_VALUE, TB_CUDNN_TYPE_BOOLEAN, 1, &yes),
             "cudnnBackendSetAttribute(TENSOR_IS_BY_VALUE)", what);
  DG_CHECK(cudnn.finalize(*t), "cudnnBackendFinalize(TENSOR)", what);
  if (!(flags & DG_VIRTUAL)) {
    if (g->n_io == DNN_MAX_IO)
      return gpu_set_error(GPU_ERR_INVALID, "dnn graph: more than %d bound tensors (%s)", DNN_MAX_IO, what);
    g->io_uid[g->n_io] = uid;
    g->io_dev[g->n_io] = (flags & DG_BY_VALUE) ? 0 : dev;
    g->io_value[g->n_io] = value;
    g->n_io++;
  }
  return GPU_OK;
}

gpu_status dg_add_op(dnn_graph *g, tb_cudnnBackendDescriptor_t op, const char *api, const char *what) {
  if (g->n_ops == DNN_MAX_OPS)
    return gpu_set_error(GPU_ERR_INVALID, "dnn graph: more than %d operations (%s)", DNN_MAX_OPS, what);
  DG_CHECK(cudnn.finalize(op), api, what);
  g->ops[g->n_ops++] = op;
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
    return gpu_set_error(GPU_ERR_INVALID, "cuDNN offers no engine for %s: the heuristic gave %lld configuration%s%s%s",
                         g->problem, (long long)n, n == 1 ? "" : "s",
                         first_refusal[0] ? "; the first refused: " : "", first_refusal);
  int64_t ws = 0, cnt = 0;
  DG_CHECK(cudnn.get(g->plan, TB_CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, TB_CUDNN_TYPE_INT64, 1, &cnt, &ws),
           "cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)", "the execution plan");
  g->engine.workspace_bytes = ws > 0 ? (size_t)ws : 0;
  return GPU_OK;
}

gpu_status dg_build(dnn_graph *g, tb_cudnnHandle_t handle) {
  const char *what = "the operation graph";
  gpu_status st = dg_desc(g, TB_CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph, "OPERATIONGRAPH", what);
  if (st != GPU_OK) return st;
  DG_CHECK(cudnn.set(g->graph, TB_CUDNN_ATTR_OPERATIONGRAPH_HANDLE, TB_CUDNN_TYPE_HANDLE, 1, &handle),
           "cudnnBackendSetAttribute(OPERATIONGRAPH_HANDLE)", what);
  DG_CHECK(cudnn.set(g->graph, TB_CUDNN_ATTR_OPERATIONGRAPH_OPS, TB_CUDNN_TYPE_BACKEND_DESCRIPTOR, g->n_ops, g->ops),
           "cudnnBackendSetAttribute(OPERATIONGRAPH_OPS)", what);
  DG_CHECK(cudnn.finalize(g->graph), "cudnnBackendFinalize(OPERATIONGRAPH)", what);
  return choose_plan(g, handle);
}

gpu_status dg_bind(dnn_graph *g) {
  const char *what = "the variant pack";
  if (g->engine.workspace_bytes) {
    gpu_status st = gpu_cuda_backend()->mem_alloc(&g->workspace, g->engine.workspace_bytes);
    if (st != GPU_OK) return st;
  }
  void *ptrs[DNN_MAX_IO];
  for (int i = 0; i < g->n_io; i++)
    ptrs[i] = g->io_dev[i] ? (void *)(uintptr_t)g->io_dev[i] : (void *)&g->io_value[i];
  void *ws = (void *)(uintptr_t)g->workspace;
  gpu_status st = dg_desc(g, TB_CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &g->pack, "VARIANT_PACK", what);
  if (st != GPU_OK) return st;
  DG_CHECK(cudnn.set(g->pack, TB_CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, TB_CUDNN_TYPE_INT64, g->n_io, g->io_uid),
           "cudnnBackendSetAttribute(VARIANT_PACK_UNIQUE_IDS)", what);
  DG_CHECK(cudnn.set(g->pack, TB_CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, TB_CUDNN_TYPE_VOID_PTR, g->n_io, ptrs),
           "cudnnBackendSetAttribute(VARIANT_PACK_DATA_POINTERS)", what);
  DG_CHECK(cudnn.set(g->pack, TB_CUDNN_ATTR_VARIANT_PACK_WORKSPACE, TB_CUDNN_TYPE_VOID_PTR, 1, &ws),
           "cudnnBackendSetAttribute(VARIANT_PACK_WORKSPACE)", what);
  DG_CHECK(cudnn.finalize(g->pack), "cudnnBackendFinalize(VARIANT_PACK)", what);
  g->bound = 1;
  return GPU_OK;
}

static size_t advance(size_t used, int n, size_t len) {
  return n < 0 ? used : (size_t)n >= len - used ? len - 1 : used + (size_t)n;
}

size_t dg_describe(const dnn_graph *g, char *buf, size_t len) {
  const dnn_engine *e = &g->engine;
  if (len == 0) return 0;
  if (e->legacy_api[0]) /* no engine: the legacy entry point */
    return advance(0, snprintf(buf, len, "cuDNN %s; legacy %s (no engine choice), workspace %zu B", g->layout,
                               e->legacy_api, e->workspace_bytes), len);
  size_t used = advance(0, snprintf(buf, len, "cuDNN %s; engine %lld, knobs {", g->layout,
                                    (long long)e->global_index), len);
  for (int i = 0; i < e->n_knobs && used + 1 < len; i++)
    used = advance(used, snprintf(buf + used, len - used, "%s%lld=%lld", i ? ", " : "", (long long)e->knob_type[i],
                                  (long long)e->knob_value[i]), len);
  if (used + 1 < len)
    used = advance(used, snprintf(buf + used, len - used, "}, heuristic choice %d of %d, workspace %zu B",
                                  e->rank + 1, e->n_candidates, e->workspace_bytes), len);
  return used;
}

gpu_status dg_run(dnn_graph *g, gpu_stream s) {
  if (!g->bound)
    return gpu_set_error(GPU_ERR_INVALID, "dnn graph: a probe (made without buffers) cannot run");
  tb_cudnnHandle_t handle;
  gpu_status st = cudnn_get_handle(&handle);
  if (st != GPU_OK) return st;
  char what[1536];
  tb_cudnnStatus_t cs = cudnn.set_stream(handle, gpu_cuda_backend()->native_stream(s));
  if (cs != TB_CUDNN_STATUS_SUCCESS) {
    dg_describe(g, what, sizeof what);
    return cudnn_fail("cudnnSetStream", cs, what);
  }
  if (g->legacy_run) return g->legacy_run(g, handle);
  cs = cudnn.execute(handle, g->plan, g->pack);
  if (cs != TB_CUDNN_STATUS_SUCCESS) {
    dg_describe(g, what, sizeof what);
    return cudnn_fail("cudnnBackendExecute", cs, what);
  }
  return GPU_OK;
}

void dg_destroy(dnn_graph *g) {
  if (!g) return;
  if (g->workspace) gpu_cuda_backend()->mem_free(g->workspace);
  if (g->plan) cudnn.desc_destroy(g->plan);
  if (g->legacy_destroy) g->legacy_destroy(g);
  for (int i = g->n_descs - 1; i >= 0; i--) /* the pack and graph first, the tensors last */
    if (g->descs[i]) cudnn.desc_destroy(g->descs[i]);
  free(g);
}

gpu_status dg_finish(dnn_graph *g, gpu_status st, dnn_graph **out) {
  if (st != GPU_OK) {
    char keep[2048];
    snprintf(keep, sizeof keep, "%s", gpu_last_error());
    dg_destroy(g);
    return gpu_set_error(st, "%s", keep);
  }
  *out = g;
  return GPU_OK;
}
