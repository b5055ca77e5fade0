/* tb_dnn.c: luaopen_tb_dnn, the vendor DNN library's graphs as launch-plan steps (cuDNN's batch
 * norm: batch_normalization's `lib`; its fused attention: flash_attention's `lib`; convolution
 * forward: the convolutions' `lib`; max pooling: 2d_max_pooling's). The library work is in
 * gpu/dnn.c and gpu/cuda_dnn*.c.
 *
 * Lua API
 *   tb.dnn.available()       -> true | false, message (cuDNN absent: every place searched)
 *   tb.dnn.version()         -> {version = 91900, path = "/.../libcudnn.so.9"}
 *   tb.dnn.batchnorm{x=, scale=, bias=, y=, mean=, inv_var=, eps=}  -> op ("tb.dnn.graph")
 *       training-mode batch norm of x (N, C) over the N rows into y (x's dtype and shape); scale
 *       and bias (C) in one float dtype, mean and inv_var (C) fp32 (the saved statistics).
 *   tb.dnn.batchnorm{n=, c=, dtype=, param_dtype=, eps=}   -> op, a probe: the engine cuDNN
 *       would run, without buffers (op:run raises). Raises a tb.error when cuDNN has no engine.
 *   tb.dnn.sdpa{q=, k=, v=, o=, scale=, causal=}  -> op: attention forward (inference), o =
 *       softmax(q k^T * scale [+ causal mask]) v per (b, h); q, k, v, o (B, H, S, D) contiguous, one
 *       dtype (fp16 or bf16); causal (a boolean) lets query i attend keys j <= i.
 *   tb.dnn.sdpa{b=, h=, s=, d=, dtype=, scale=, causal=}  -> op, a probe (as for batchnorm).
 *   tb.dnn.conv{x=, w=, y=, n=, c=, k=, input = {sizes}, window = {sizes}, stride = 1, padding = 0,
 *               dilation = 1, groups = 1}  -> op: F.conv1d/2d/3d without bias (as many spatial
 *       dimensions as input lists, 1 to 3); x (n, c, input...), w (k, c / groups, window...), y (n, k,
 *       out...) contiguous in one dtype (any shape holding that many elements); stride, padding and
 *       dilation an integer for every dimension or a table of one each. fp32 compute (TF32 allowed).
 *   tb.dnn.conv{..., dtype=} without tensors  -> op, a probe.
 *   tb.dnn.maxpool{x=, y=, n=, c=, h=, w=, window=, stride=, padding=}  -> op: F.max_pool2d of x
 *       (n, c, h, w) NCHW into y, -inf padding, NaN propagating (cuDNN's legacy cudnnPoolingForward:
 *       engine() has legacy_api = "cudnnPoolingForward" and global_index -1).
 *   tb.dnn.maxpool{..., dtype=} without tensors  -> op, a probe.
 *   op:run()             enqueue once on tilebench's stream (tb.launch.plan{{call = op}} replays it)
 *   op:engine()          {global_index =, knobs = {{type =, value =}, ...}, knobs_text = "3=1 ...",
 *                         choice = 1-based rank in the heuristic's list, candidates =, workspace_bytes =}
 *   op:describe()        the problem as cuDNN gets it and the engine (also in every failure)
 *   op:close()           free descriptors and workspace (also __gc / __close); later use raises
 *   getmetatable(op).__tb_run: light userdata, the tb_native_run_fn that replays it from C */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/dnn.h"
#include "tb.h"

static gpu_status graph_run(void *g, gpu_stream s) { return dnn_graph_run(g, s); }
static void graph_destroy(void *g) { dnn_graph_destroy(g); }
static size_t graph_describe(const void *g, char *buf, size_t len) { return dnn_graph_describe(g, buf, len); }

static size_t graph_label(const void *g, char *buf, size_t len) {
  dnn_engine e;
  dnn_graph_engine(g, &e);
  int n = snprintf(buf, len, "tb.dnn.graph (engine %lld)", (long long)e.global_index);
  return n < 0 ? 0 : (size_t)n;
}

static const tb_libop_class graph_class; /* below, after the methods it lists */

static int m_engine(lua_State *L) {
  dnn_engine e;
  dnn_graph_engine(tb_libop_check(L, 1, &graph_class)->op, &e);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; i < e.n_knobs; i++) {
    char one[64];
    snprintf(one, sizeof one, "%s%lld=%lld", i ? " " : "", (long long)e.knob_type[i],
             (long long)e.knob_value[i]);
    luaL_addstring(&b, one);
  }
  luaL_pushresult(&b);
  lua_createtable(L, 0, 7);
  lua_insert(L, -2);
  lua_setfield(L, -2, "knobs_text");
  lua_pushinteger(L, (lua_Integer)e.global_index);
  lua_setfield(L, -2, "global_index");
  lua_createtable(L, e.n_knobs, 0);
  for (int i = 0; i < e.n_knobs; i++) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)e.knob_type[i]);
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)e.knob_value[i]);
    lua_setfield(L, -2, "value");
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "knobs");
  lua_pushinteger(L, e.rank + 1);
  lua_setfield(L, -2, "choice");
  lua_pushinteger(L, e.n_candidates);
  lua_setfield(L, -2, "candidates");
  lua_pushinteger(L, (lua_Integer)e.workspace_bytes);
  lua_setfield(L, -2, "workspace_bytes");
  if (e.legacy_api[0]) { /* no engine: what runs instead */
    lua_pushstring(L, e.legacy_api);
    lua_setfield(L, -2, "legacy_api");
  }
  return 1;
}

static const luaL_Reg methods[] = {
  {"engine", m_engine},
  {NULL, NULL}
};

/* run, describe, close, __gc, __close, __tostring and __tb_run come from tb_libop.c */
static const tb_libop_class graph_class = {
  .mt = "tb.dnn.graph",
  .closed_message = "dnn graph is closed",
  .run = graph_run,
  .describe = graph_describe,
  .label = graph_label,
  .destroy = graph_destroy,
  .methods = methods,
};

/* ---- argument table ------------------------------------------------------------------------ */

/* The function whose argument table is being read, for messages ("tb.dnn.batchnorm"). */
static const char *fn_name = "tb.dnn";
/* What it computes, for the dtype message ("batch norm takes fp32, fp16 or bf16"). */
static const char *op_noun = "batch norm";

static dnn_type to_dnn_type(lua_State *L, const char *key, tb_dtype d, int sixteen_only) {
  switch (d) {
    case TB_FP32: if (!sixteen_only) return DNN_F32; break;
    case TB_FP16: return DNN_F16;
    case TB_BF16: return DNN_BF16;
    default: break;
  }
  luaL_error(L, "%s: '%s' has dtype %s; %s", fn_name, key, tb_dtypes[d].name,
             sixteen_only ? "attention takes fp16 or bf16" : lua_pushfstring(L, "%s takes fp32, fp16 or bf16", op_noun));
  return DNN_F32;
}

static dnn_type named_type(lua_State *L, const char *key, int sixteen_only) {
  if (lua_getfield(L, 1, key) != LUA_TSTRING)
    luaL_error(L, "%s: field '%s' must be a dtype name (got %s)", fn_name, key, luaL_typename(L, -1));
  const char *name = lua_tostring(L, -1);
  int d = tb_dtype_from_name(name);
  if (d < 0) luaL_error(L, "%s: field '%s': unknown dtype '%s'", fn_name, key, name);
  lua_pop(L, 1);
  return to_dnn_type(L, key, (tb_dtype)d, sixteen_only);
}

static int64_t field_int(lua_State *L, const char *key) {
  lua_getfield(L, 1, key);
  int isint = 0;
  int64_t v = (int64_t)lua_tointegerx(L, -1, &isint);
  if (!isint) luaL_error(L, "%s: field '%s' must be an integer (got %s)", fn_name, key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* The tensor in field key, kept on the stack (the graph holds it as a user value). */
static tb_tensor *field_tensor(lua_State *L, const char *key) {
  lua_getfield(L, 1, key);
  tb_tensor *t = tb_test_tensor(L, -1);
  if (t == NULL) luaL_error(L, "%s: field '%s' must be a tensor (got %s)", fn_name, key, luaL_typename(L, -1));
  return t;
}

/* The graph's object, keeping the n values at stack 2 .. n + 1 (the tensors) alive while it lives:
 * created empty, then filled by create, so a failing create leaves a closed object (then raised). */
typedef gpu_status (*create_fn)(dnn_graph **out, const void *desc);
static gpu_status create_batchnorm(dnn_graph **out, const void *d) { return dnn_batchnorm_create(out, d); }
static gpu_status create_sdpa(dnn_graph **out, const void *d) { return dnn_sdpa_create(out, d); }
static gpu_status create_conv(dnn_graph **out, const void *d) { return dnn_conv_create(out, d); }
static gpu_status create_pool(dnn_graph **out, const void *d) { return dnn_pool_create(out, d); }

static int new_graph(lua_State *L, int n, create_fn create, const void *desc) {
  tb_libop *u = tb_libop_new(L, &graph_class, 2, n);
  dnn_graph *g = NULL;
  gpu_status st = create(&g, desc);
  u->op = g;
  tb_check_gpu(L, st);
  return 1;
}

static void check_numel(lua_State *L, const char *key, const tb_tensor *t, int64_t want) {
  if (t->numel != want)
    luaL_error(L, "tb.dnn.batchnorm: '%s' has %I elements, x (N, C) needs %I", key,
               (lua_Integer)t->numel, (lua_Integer)want);
}

static const char *const buffer_keys[] = {"x", "scale", "bias", "y", "mean", "inv_var"};
#define N_BUFFERS 6

static int l_batchnorm(lua_State *L) {
  fn_name = "tb.dnn.batchnorm";
  op_noun = "batch norm";
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  dnn_batchnorm_desc d;
  memset(&d, 0, sizeof d);
  lua_getfield(L, 1, "eps");
  int isnum = 0;
  d.eps = (float)lua_tonumberx(L, -1, &isnum);
  if (!isnum) return luaL_error(L, "tb.dnn.batchnorm: field 'eps' (a number) is required");
  lua_pop(L, 1);
  int probe = lua_getfield(L, 1, "x") == LUA_TNIL;
  lua_pop(L, 1);
  if (probe) {
    d.n = field_int(L, "n");
    d.c = field_int(L, "c");
    d.x_type = named_type(L, "dtype", 0);
    d.param_type = named_type(L, "param_dtype", 0);
    lua_pushnil(L); /* no buffers: keep the stack layout of the other branch */
    for (int i = 1; i < N_BUFFERS; i++) lua_pushnil(L);
  } else {
    tb_tensor *t[N_BUFFERS];
    for (int i = 0; i < N_BUFFERS; i++) t[i] = field_tensor(L, buffer_keys[i]); /* stack 2..7 */
    if (t[0]->ndim != 2)
      return luaL_error(L, "tb.dnn.batchnorm: x must be 2-d (N, C) (got %d dimensions)", t[0]->ndim);
    d.n = t[0]->shape[0];
    d.c = t[0]->shape[1];
    d.x_type = to_dnn_type(L, "x", t[0]->dtype, 0);
    d.param_type = to_dnn_type(L, "scale", t[1]->dtype, 0);
    if (t[3]->dtype != t[0]->dtype)
      return luaL_error(L, "tb.dnn.batchnorm: y (%s) must have x's dtype (%s)", tb_dtypes[t[3]->dtype].name,
                        tb_dtypes[t[0]->dtype].name);
    if (t[2]->dtype != t[1]->dtype)
      return luaL_error(L, "tb.dnn.batchnorm: bias (%s) must have scale's dtype (%s)",
                        tb_dtypes[t[2]->dtype].name, tb_dtypes[t[1]->dtype].name);
    for (int i = 4; i < N_BUFFERS; i++)
      if (t[i]->dtype != TB_FP32)
        return luaL_error(L, "tb.dnn.batchnorm: %s must be fp32 (got %s)", buffer_keys[i],
                          tb_dtypes[t[i]->dtype].name);
    check_numel(L, "y", t[3], d.n * d.c);
    for (int i = 1; i < N_BUFFERS; i++)
      if (i != 3) check_numel(L, buffer_keys[i], t[i], d.c);
    d.x = tb_tensor_ptr(t[0]);
    d.scale = tb_tensor_ptr(t[1]);
    d.bias = tb_tensor_ptr(t[2]);
    d.y = tb_tensor_ptr(t[3]);
    d.mean = tb_tensor_ptr(t[4]);
    d.inv_var = tb_tensor_ptr(t[5]);
  }
  tb_gpu(L);
  return new_graph(L, N_BUFFERS, create_batchnorm, &d);
}

static const char *const sdpa_keys[] = {"q", "k", "v", "o"};

/* tb.dnn.sdpa{q=, k=, v=, o=, scale=, causal=} or, a probe, {b=, h=, s=, d=, dtype=, scale=, causal=} */
static int l_sdpa(lua_State *L) {
  fn_name = "tb.dnn.sdpa";
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  dnn_sdpa_desc d;
  memset(&d, 0, sizeof d);
  lua_getfield(L, 1, "scale");
  int isnum = 0;
  d.scale = (float)lua_tonumberx(L, -1, &isnum);
  if (!isnum) return luaL_error(L, "tb.dnn.sdpa: field 'scale' (a number) is required");
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "causal") != LUA_TBOOLEAN)
    return luaL_error(L, "tb.dnn.sdpa: field 'causal' (a boolean) is required (got %s)", luaL_typename(L, -1));
  d.causal = lua_toboolean(L, -1);
  lua_pop(L, 1);
  int probe = lua_getfield(L, 1, "q") == LUA_TNIL;
  lua_pop(L, 1);
  if (probe) {
    d.b = field_int(L, "b");
    d.h = field_int(L, "h");
    d.s = field_int(L, "s");
    d.d = field_int(L, "d");
    d.type = named_type(L, "dtype", 1);
    for (int i = 0; i < 4; i++) lua_pushnil(L); /* no buffers: the other branch's stack layout */
  } else {
    tb_tensor *t[4];
    for (int i = 0; i < 4; i++) t[i] = field_tensor(L, sdpa_keys[i]); /* stack 2..5 */
    if (t[0]->ndim != 4)
      return luaL_error(L, "tb.dnn.sdpa: q must be 4-d (B, H, S, D) (got %d dimensions)", t[0]->ndim);
    for (int i = 1; i < 4; i++) {
      int same = t[i]->ndim == 4 && t[i]->dtype == t[0]->dtype;
      for (int k = 0; same && k < 4; k++) same = t[i]->shape[k] == t[0]->shape[k];
      if (!same)
        return luaL_error(L, "tb.dnn.sdpa: %s must have q's shape (%I, %I, %I, %I) and dtype %s", sdpa_keys[i],
                          (lua_Integer)t[0]->shape[0], (lua_Integer)t[0]->shape[1], (lua_Integer)t[0]->shape[2],
                          (lua_Integer)t[0]->shape[3], tb_dtypes[t[0]->dtype].name);
    }
    d.b = t[0]->shape[0];
    d.h = t[0]->shape[1];
    d.s = t[0]->shape[2];
    d.d = t[0]->shape[3];
    d.type = to_dnn_type(L, "q", t[0]->dtype, 1);
    d.q = tb_tensor_ptr(t[0]);
    d.k = tb_tensor_ptr(t[1]);
    d.v = tb_tensor_ptr(t[2]);
    d.o = tb_tensor_ptr(t[3]);
  }
  tb_gpu(L);
  return new_graph(L, 4, create_sdpa, &d);
}

/* An optional integer field (dflt when absent). */
static int64_t opt_field_int(lua_State *L, const char *key, int64_t dflt) {
  if (lua_getfield(L, 1, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return dflt;
  }
  lua_pop(L, 1);
  return field_int(L, key);
}

/* Field key: an integer for every spatial dimension, or a table of nd integers (dflt when absent
 * and dflt >= 0). */
static void spatial_field(lua_State *L, const char *key, int nd, int64_t dflt, int64_t out[DNN_MAX_SPATIAL]) {
  int t = lua_getfield(L, 1, key);
  if (t == LUA_TNIL && dflt >= 0) {
    for (int i = 0; i < nd; i++) out[i] = dflt;
  } else if (t == LUA_TTABLE) {
    if ((int)lua_rawlen(L, -1) != nd)
      luaL_error(L, "%s: field '%s' must list %d integers (got %d)", fn_name, key, nd, (int)lua_rawlen(L, -1));
    for (int i = 0; i < nd; i++) {
      lua_rawgeti(L, -1, i + 1);
      int isint = 0;
      out[i] = (int64_t)lua_tointegerx(L, -1, &isint);
      if (!isint) luaL_error(L, "%s: field '%s'[%d] must be an integer", fn_name, key, i + 1);
      lua_pop(L, 1);
    }
  } else {
    int isint = 0;
    int64_t v = (int64_t)lua_tointegerx(L, -1, &isint);
    if (!isint)
      luaL_error(L, "%s: field '%s' must be an integer or a table of %d (got %s)", fn_name, key, nd,
                 luaL_typename(L, -1));
    for (int i = 0; i < nd; i++) out[i] = v;
  }
  lua_pop(L, 1);
}

/* t holds want elements of type (the problem's) */
static void check_buffer(lua_State *L, const char *key, const tb_tensor *t, int64_t want, tb_dtype type) {
  if (t->numel != want || t->dtype != type)
    luaL_error(L, "%s: '%s' holds %I %s elements, the problem needs %I %s", fn_name, key, (lua_Integer)t->numel,
               tb_dtypes[t->dtype].name, (lua_Integer)want, tb_dtypes[type].name);
}

static const char *const conv_keys[] = {"x", "w", "y"};
static const char *const pool_keys[] = {"x", "y"};

/* Whether any of the n buffer fields is given: none is a probe; any, a bound op (each must be a tensor). */
static int has_buffers(lua_State *L, const char *const *keys, int n) {
  int any = 0;
  for (int i = 0; i < n; i++) {
    any |= lua_getfield(L, 1, keys[i]) != LUA_TNIL;
    lua_pop(L, 1);
  }
  return any;
}

/* tb.dnn.conv{x=, w=, y=, n=, c=, k=, input=, window=, stride=1, padding=0, dilation=1, groups=1}, or a
 * probe: dtype= instead of the tensors. input and window list the spatial sizes (1 to 3 of them). */
static int l_conv(lua_State *L) {
  fn_name = "tb.dnn.conv";
  op_noun = "convolution";
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  dnn_conv_desc d;
  memset(&d, 0, sizeof d);
  if (lua_getfield(L, 1, "input") != LUA_TTABLE)
    return luaL_error(L, "tb.dnn.conv: field 'input' (a table of 1 to 3 spatial sizes) is required (got %s)",
                      luaL_typename(L, -1));
  d.nd = (int)lua_rawlen(L, -1);
  lua_pop(L, 1);
  if (d.nd < 1 || d.nd > DNN_MAX_SPATIAL)
    return luaL_error(L, "tb.dnn.conv: field 'input' lists %d sizes (1, 2 or 3)", d.nd);
  d.n = field_int(L, "n");
  d.c = field_int(L, "c");
  d.k = field_int(L, "k");
  d.groups = opt_field_int(L, "groups", 1);
  spatial_field(L, "input", d.nd, -1, d.in);
  spatial_field(L, "window", d.nd, -1, d.window);
  spatial_field(L, "stride", d.nd, 1, d.stride);
  spatial_field(L, "padding", d.nd, 0, d.padding);
  spatial_field(L, "dilation", d.nd, 1, d.dilation);
  if (!has_buffers(L, conv_keys, 3)) {
    d.type = named_type(L, "dtype", 0);
    for (int i = 0; i < 3; i++) lua_pushnil(L); /* the other branch's stack layout */
  } else {
    tb_tensor *t[3];
    for (int i = 0; i < 3; i++) t[i] = field_tensor(L, conv_keys[i]); /* stack 2..4 */
    d.type = to_dnn_type(L, "x", t[0]->dtype, 0);
    int64_t nx = d.n * d.c, nw = d.k * (d.groups > 0 ? d.c / d.groups : 0), ny = d.n * d.k;
    for (int i = 0; i < d.nd; i++) {
      nx *= d.in[i];
      nw *= d.window[i];
      ny *= d.stride[i] > 0 ? (d.in[i] + 2 * d.padding[i] - d.dilation[i] * (d.window[i] - 1) - 1) / d.stride[i] + 1 : 0;
    }
    check_buffer(L, "x", t[0], nx, t[0]->dtype);
    check_buffer(L, "w", t[1], nw, t[0]->dtype);
    check_buffer(L, "y", t[2], ny, t[0]->dtype);
    d.x = tb_tensor_ptr(t[0]);
    d.w = tb_tensor_ptr(t[1]);
    d.y = tb_tensor_ptr(t[2]);
  }
  tb_gpu(L);
  return new_graph(L, 3, create_conv, &d);
}

/* tb.dnn.maxpool{x=, y=, n=, c=, h=, w=, window=, stride=, padding=}, or a probe: dtype= instead of
 * the tensors. */
static int l_maxpool(lua_State *L) {
  fn_name = "tb.dnn.maxpool";
  op_noun = "pooling";
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  dnn_pool_desc d;
  memset(&d, 0, sizeof d);
  d.n = field_int(L, "n");
  d.c = field_int(L, "c");
  d.h = field_int(L, "h");
  d.w = field_int(L, "w");
  int64_t window = field_int(L, "window"), stride = field_int(L, "stride"), padding = field_int(L, "padding");
  if (window < 1 || window > 1024 || stride < 1 || stride > 1024 || padding < 0 || padding > 1024)
    return luaL_error(L, "tb.dnn.maxpool: window %I, stride %I and padding %I out of range", (lua_Integer)window,
                      (lua_Integer)stride, (lua_Integer)padding);
  d.window = (int)window;
  d.stride = (int)stride;
  d.padding = (int)padding;
  if (!has_buffers(L, pool_keys, 2)) {
    d.type = named_type(L, "dtype", 0);
    lua_pushnil(L);
    lua_pushnil(L);
  } else {
    tb_tensor *x = field_tensor(L, "x"); /* 2 */
    tb_tensor *y = field_tensor(L, "y"); /* 3 */
    d.type = to_dnn_type(L, "x", x->dtype, 0);
    int64_t ho = (d.h + 2 * padding - window) / stride + 1, wo = (d.w + 2 * padding - window) / stride + 1;
    check_buffer(L, "x", x, d.n * d.c * d.h * d.w, x->dtype);
    check_buffer(L, "y", y, d.n * d.c * (ho > 0 ? ho : 0) * (wo > 0 ? wo : 0), x->dtype);
    d.x = tb_tensor_ptr(x);
    d.y = tb_tensor_ptr(y);
  }
  tb_gpu(L);
  return new_graph(L, 2, create_pool, &d);
}

static int l_available(lua_State *L) { return tb_lib_available(L, dnn_init); }

static int l_version(lua_State *L) { return tb_lib_version(L, dnn_version); }

static const luaL_Reg functions[] = {
  {"batchnorm", l_batchnorm},
  {"sdpa", l_sdpa},
  {"conv", l_conv},
  {"maxpool", l_maxpool},
  {"available", l_available},
  {"version", l_version},
  {NULL, NULL}
};

int luaopen_tb_dnn(lua_State *L);
int luaopen_tb_dnn(lua_State *L) { return tb_libop_open(L, &graph_class, functions); }
