/* tb_blas.c: luaopen_tb_blas, cuBLASLt matmuls as launch-plan steps (the `lib` baselines of the
 * matmul operators and the matrix rates of `tilebench peaks`). The library work is in gpu/blas.c.
 *
 * Lua API
 *   tb.blas.available()            -> true | false, message (libcublasLt absent: where searched)
 *   tb.blas.version()              -> {version = 130000, path = "/.../libcublasLt.so.13"}
 *   tb.blas.matmul{a=, b=, c=, m=, n=, k=, batch=1, stride_a=, stride_b=, stride_c=,
 *                  layout="row"|"col", b_transposed=false, compute="fp32"|"tf32"|"fp16"|"int32",
 *                  fp8={fast_accum=false, out_dtype="bf16"}, algo_index=1,
 *                  workspace_bytes=32 MiB}  -> op ("tb.blas.matmul")
 *       C = A @ B. layout "row": A (m, k), B (k, n), C (m, n) row-major as in PyTorch;
 *       b_transposed: b holds B^T, (n, k) row-major (PyTorch's "B column-major"), which fp8 and
 *       int8 require (cuBLASLt runs them only as TN). Strides are in elements (default: dense).
 *       compute defaults to int32 for int8 inputs, else fp32 (fp32 accumulation).
 *   op:run()           enqueue once on tilebench's stream (tb.launch.plan{{call = op}} replays it)
 *   op:algo_count()    how many algorithms the heuristic offered
 *   op:algo_index()    the one in use (1-based)
 *   op:workspace_bytes()
 *   op:describe()      what cuBLASLt is given: operands, ops, leading dimensions, types, scales,
 *                      how C is bound, alignments, the algorithm (also in every failure message)
 *   op:close()         free descriptors and workspace (also __gc / __close); later use raises
 *   getmetatable(op).__tb_run: light userdata, the tb_native_run_fn that replays it from C */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/blas.h"
#include "tb.h"

static gpu_status matmul_run(void *op, gpu_stream s) { return blas_matmul_run(op, s); }
static void matmul_destroy(void *op) { blas_matmul_destroy(op); }
static size_t matmul_describe(const void *op, char *buf, size_t len) { return blas_matmul_describe(op, buf, len); }

static size_t matmul_label(const void *op, char *buf, size_t len) {
  int n = snprintf(buf, len, "tb.blas.matmul (algorithm %d of %d)", blas_matmul_algo_index(op) + 1,
                   blas_matmul_algo_count(op));
  return n < 0 ? 0 : (size_t)n;
}

static const tb_libop_class matmul_class; /* below, after the methods it lists */

static blas_matmul *check_matmul(lua_State *L, int idx) { return tb_libop_check(L, idx, &matmul_class)->op; }

static int m_algo_count(lua_State *L) {
  lua_pushinteger(L, blas_matmul_algo_count(check_matmul(L, 1)));
  return 1;
}

static int m_algo_index(lua_State *L) {
  lua_pushinteger(L, blas_matmul_algo_index(check_matmul(L, 1)) + 1);
  return 1;
}

static int m_workspace(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)blas_matmul_workspace(check_matmul(L, 1)));
  return 1;
}

static const luaL_Reg methods[] = {
  {"algo_count", m_algo_count},
  {"algo_index", m_algo_index},
  {"workspace_bytes", m_workspace},
  {NULL, NULL}
};

/* run, describe, close, __gc, __close, __tostring and __tb_run come from tb_libop.c */
static const tb_libop_class matmul_class = {
  .mt = "tb.blas.matmul",
  .closed_message = "blas matmul is closed",
  .run = matmul_run,
  .describe = matmul_describe,
  .label = matmul_label,
  .destroy = matmul_destroy,
  .methods = methods,
};

/* ---- argument table ------------------------------------------------------------------------ */

static int64_t opt_int(lua_State *L, const char *key, int64_t dflt, int required) {
  int t = lua_getfield(L, 1, key);
  int64_t v = dflt;
  if (t == LUA_TNIL) {
    if (required) luaL_error(L, "tb.blas.matmul: field '%s' is required", key);
  } else {
    int isint = 0;
    v = (int64_t)lua_tointegerx(L, -1, &isint);
    if (!isint) luaL_error(L, "tb.blas.matmul: field '%s' must be an integer (got %s)", key,
                           luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return v;
}

static int opt_bool(lua_State *L, int tbl, const char *key, int dflt) {
  int t = lua_getfield(L, tbl, key);
  int v = dflt;
  if (t != LUA_TNIL) {
    if (t != LUA_TBOOLEAN) luaL_error(L, "tb.blas.matmul: field '%s' must be a boolean", key);
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* The tensor in field key, kept on the stack (the op holds it as a user value). */
static tb_tensor *field_tensor(lua_State *L, const char *key) {
  lua_getfield(L, 1, key);
  tb_tensor *t = tb_test_tensor(L, -1);
  if (t == NULL) luaL_error(L, "tb.blas.matmul: field '%s' must be a tensor (got %s)", key,
                            luaL_typename(L, -1));
  return t;
}

static blas_type to_blas_type(lua_State *L, const char *key, tb_dtype d) {
  switch (d) {
    case TB_FP32: return BLAS_F32;
    case TB_FP16: return BLAS_F16;
    case TB_BF16: return BLAS_BF16;
    case TB_FP8_E4M3: return BLAS_E4M3;
    case TB_INT8: return BLAS_I8;
    case TB_INT32: return BLAS_I32;
    default:
      luaL_error(L, "tb.blas.matmul: tensor '%s' has dtype %s, which %s matmuls do not take", key, tb_dtypes[d].name,
                 gpu_backend_get()->blas ? gpu_backend_get()->blas->lib.name : "BLAS");
  }
  return BLAS_F32;
}

static void check_extent(lua_State *L, const char *key, const tb_tensor *t, int64_t batch,
                         int64_t stride, int64_t per) {
  int64_t need = (batch - 1) * stride + per;
  if (stride < 0 || t->numel < need)
    luaL_error(L, "tb.blas.matmul: tensor '%s' has %I elements, the problem needs %I "
               "(batch %I, stride %I, %I per matrix)", key, (lua_Integer)t->numel,
               (lua_Integer)need, (lua_Integer)batch, (lua_Integer)stride, (lua_Integer)per);
}

static int l_matmul(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  blas_matmul_desc d;
  memset(&d, 0, sizeof d);
  tb_tensor *a = field_tensor(L, "a"); /* stack 2 */
  tb_tensor *b = field_tensor(L, "b"); /* 3 */
  tb_tensor *c = field_tensor(L, "c"); /* 4 */
  d.m = opt_int(L, "m", 0, 1);
  d.n = opt_int(L, "n", 0, 1);
  d.k = opt_int(L, "k", 0, 1);
  d.batch = opt_int(L, "batch", 1, 0);
  if (d.m <= 0 || d.n <= 0 || d.k <= 0 || d.batch <= 0)
    return luaL_error(L, "tb.blas.matmul: m, n, k and batch must be positive (m=%I n=%I k=%I "
                      "batch=%I)", (lua_Integer)d.m, (lua_Integer)d.n, (lua_Integer)d.k,
                      (lua_Integer)d.batch);
  d.stride_a = opt_int(L, "stride_a", d.m * d.k, 0);
  d.stride_b = opt_int(L, "stride_b", d.k * d.n, 0);
  d.stride_c = opt_int(L, "stride_c", d.m * d.n, 0);
  static const char *const layouts[] = {"row", "col", NULL};
  lua_getfield(L, 1, "layout");
  d.row_major = luaL_checkoption(L, -1, "row", layouts) == 0;
  lua_pop(L, 1);
  d.b_transposed = opt_bool(L, 1, "b_transposed", 0);
  if (a->dtype != b->dtype)
    return luaL_error(L, "tb.blas.matmul: a and b must have one dtype (a is %s, b is %s)",
                      tb_dtypes[a->dtype].name, tb_dtypes[b->dtype].name);
  d.ab_type = to_blas_type(L, "a", a->dtype);
  d.c_type = to_blas_type(L, "c", c->dtype);
  static const char *const computes[] = {"fp32", "tf32", "fp16", "int32", NULL};
  static const blas_compute compute_of[] = {BLAS_COMPUTE_F32, BLAS_COMPUTE_TF32, BLAS_COMPUTE_F16,
                                            BLAS_COMPUTE_I32};
  lua_getfield(L, 1, "compute");
  d.compute = compute_of[luaL_checkoption(L, -1, d.ab_type == BLAS_I8 ? "int32" : "fp32",
                                          computes)];
  lua_pop(L, 1);
  int t = lua_getfield(L, 1, "fp8");
  if (t != LUA_TNIL) {
    if (t != LUA_TTABLE) return luaL_error(L, "tb.blas.matmul: field 'fp8' must be a table");
    if (d.ab_type != BLAS_E4M3)
      return luaL_error(L, "tb.blas.matmul: fp8 options given for %s inputs",
                        tb_dtypes[a->dtype].name);
    d.fast_accum = opt_bool(L, lua_gettop(L), "fast_accum", 0);
    if (lua_getfield(L, -1, "out_dtype") != LUA_TNIL) {
      int want = tb_dtype_from_name(luaL_checkstring(L, -1));
      if (want < 0 || want != (int)c->dtype)
        return luaL_error(L, "tb.blas.matmul: fp8.out_dtype '%s' differs from c's dtype %s",
                          lua_tostring(L, -1), tb_dtypes[c->dtype].name);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  int64_t algo = opt_int(L, "algo_index", 1, 0);
  if (algo < 1) return luaL_error(L, "tb.blas.matmul: algo_index must be >= 1 (got %I)",
                                  (lua_Integer)algo);
  d.algo_index = (int)(algo - 1);
  int64_t ws = opt_int(L, "workspace_bytes", 32 << 20, 0);
  if (ws < 0) return luaL_error(L, "tb.blas.matmul: workspace_bytes must be >= 0");
  d.workspace_bytes = (size_t)ws;
  check_extent(L, "a", a, d.batch, d.stride_a, d.m * d.k);
  check_extent(L, "b", b, d.batch, d.stride_b, d.k * d.n);
  check_extent(L, "c", c, d.batch, d.stride_c, d.m * d.n);
  d.a = tb_tensor_ptr(a);
  d.b = tb_tensor_ptr(b);
  d.c = tb_tensor_ptr(c);

  tb_gpu(L);
  /* Created empty, then filled: an error below leaves a closed, collectable object. */
  tb_libop *u = tb_libop_new(L, &matmul_class, 2, 3); /* keeps a, b, c */
  blas_matmul *op = NULL;
  gpu_status st = blas_matmul_create(&op, &d);
  u->op = op;
  tb_check_gpu(L, st);
  return 1;
}

static int l_available(lua_State *L) { return tb_lib_available(L, blas_init); }

static int l_version(lua_State *L) { return tb_lib_version(L, blas_version); }

static const luaL_Reg functions[] = {
  {"matmul", l_matmul},
  {"available", l_available},
  {"version", l_version},
  {NULL, NULL}
};

int luaopen_tb_blas(lua_State *L);
int luaopen_tb_blas(lua_State *L) { return tb_libop_open(L, &matmul_class, functions); }
