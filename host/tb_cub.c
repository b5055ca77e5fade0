/* tb_cub.c: luaopen_tb_cub, CUB's device-wide sorts as launch-plan steps (radix_sort's and
 * top_k_selection's `lib`). The library work is in gpu/cub.c (libtb_cub.so, opened by dlopen).
 *
 * Lua API
 *   tb.cub.available()        -> true | false, message (the library absent: every place searched)
 *   tb.cub.version()          -> {version = 300001, path = "/.../libtb_cub.so"}: CUB_VERSION of the
 *                                headers it was built with
 *   tb.cub.temp_bytes(op, n)  -> CUB's temporary storage in bytes (asks the device: needs a context)
 *   tb.cub.sort{op = "sort_i32" | "topk_f32", input =, out =, temp =, n = [, scratch =, k =]}
 *                             -> op ("tb.cub.op"). sort_i32: n int32 from input sorted ascending
 *                                into out. topk_f32: n fp32 from input sorted descending into
 *                                scratch (n fp32), the first k copied to out. temp: a tensor of at
 *                                least temp_bytes(op, n) bytes.
 *   op:run()        enqueue once on tilebench's stream (tb.launch.plan{{call = op}} replays it)
 *   op:describe()   what CUB is asked to do
 *   op:close()      drop the tensors (also __gc / __close); later use raises
 *   getmetatable(op).__tb_run: light userdata, the tb_native_run_fn that replays it from C */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cub.h"
#include "tb.h"

#define N_TENSORS 4 /* input, out, temp, scratch */

/* What one sort is given; it lives inline in the object (CUB keeps no state between calls). */
typedef struct cub_call {
  cub_op op;
  gpu_ptr in, out, temp, scratch;
  size_t temp_bytes;
  int64_t n, k;
} cub_call;

static gpu_status call_run(void *self, gpu_stream s) {
  const cub_call *c = self;
  return cub_run(c->op, c->temp, c->temp_bytes, c->in, c->scratch, c->out, c->n, c->k, s);
}

static size_t call_describe(const void *self, char *buf, size_t len) {
  const cub_call *c = self;
  int n;
  if (c->op == CUB_TOPK_F32)
    n = snprintf(buf, len, "CUB %s: n = %lld, k = %lld, temporary storage %lld bytes", cub_op_name(c->op),
                 (long long)c->n, (long long)c->k, (long long)c->temp_bytes);
  else
    n = snprintf(buf, len, "CUB %s: n = %lld, temporary storage %lld bytes", cub_op_name(c->op), (long long)c->n,
                 (long long)c->temp_bytes);
  return n < 0 ? 0 : (size_t)n;
}

/* run, describe, close, __gc, __close, __tostring and __tb_run come from tb_libop.c; closing
 * drops the tensors (there is nothing else to free). */
static const tb_libop_class call_class = {
  .mt = "tb.cub.op",
  .closed_message = "tb.cub op is closed",
  .run = call_run,
  .describe = call_describe,
  .label = call_describe,
  .inline_bytes = sizeof(cub_call),
};

static cub_op check_op_name(lua_State *L, const char *name) {
  if (strcmp(name, "sort_i32") == 0) return CUB_SORT_I32;
  if (strcmp(name, "topk_f32") == 0) return CUB_TOPK_F32;
  luaL_error(L, "tb.cub: unknown op '%s' (sort_i32 or topk_f32)", name);
  return CUB_SORT_I32;
}

static int64_t field_int(lua_State *L, const char *key, int required, int64_t dflt) {
  int t = lua_getfield(L, 1, key);
  if (t == LUA_TNIL && !required) {
    lua_pop(L, 1);
    return dflt;
  }
  int isint = 0;
  int64_t v = (int64_t)lua_tointegerx(L, -1, &isint);
  if (!isint) luaL_error(L, "tb.cub.sort: field '%s' must be an integer (got %s)", key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* The tensor in field key (left on the stack: the op keeps it), of dtype want (or any when
 * want < 0) and at least min_bytes bytes. */
static tb_tensor *field_tensor(lua_State *L, const char *key, int want, size_t min_bytes) {
  lua_getfield(L, 1, key);
  tb_tensor *t = tb_test_tensor(L, -1);
  if (t == NULL) luaL_error(L, "tb.cub.sort: field '%s' must be a tensor (got %s)", key, luaL_typename(L, -1));
  if (want >= 0 && t->dtype != (tb_dtype)want)
    luaL_error(L, "tb.cub.sort: '%s' has dtype %s, needs %s", key, tb_dtypes[t->dtype].name, tb_dtypes[want].name);
  if (tb_tensor_nbytes(t) < min_bytes)
    luaL_error(L, "tb.cub.sort: '%s' holds %I bytes, needs %I", key, (lua_Integer)tb_tensor_nbytes(t),
               (lua_Integer)min_bytes);
  return t;
}

static int l_sort(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_getfield(L, 1, "op");
  const char *name = lua_tostring(L, -1);
  if (name == NULL) return luaL_error(L, "tb.cub.sort: field 'op' (sort_i32 or topk_f32) is required");
  cub_op op = check_op_name(L, name);
  lua_pop(L, 1);
  int64_t n = field_int(L, "n", 1, 0);
  int64_t k = field_int(L, "k", op == CUB_TOPK_F32, n);
  if (n < 1 || n > INT32_MAX) return luaL_error(L, "tb.cub.sort: n = %I must be in [1, 2^31)", (lua_Integer)n);
  if (op == CUB_TOPK_F32 && (k < 1 || k > n))
    return luaL_error(L, "tb.cub.sort: k = %I must be in [1, n = %I]", (lua_Integer)k, (lua_Integer)n);
  int dt = op == CUB_SORT_I32 ? TB_INT32 : TB_FP32;
  size_t key_bytes = (size_t)n * 4;
  tb_tensor *t_in = field_tensor(L, "input", dt, key_bytes);                                 /* 2 */
  tb_tensor *t_out = field_tensor(L, "out", dt, op == CUB_TOPK_F32 ? (size_t)k * 4 : key_bytes); /* 3 */
  tb_tensor *t_temp = field_tensor(L, "temp", -1, 1);                                        /* 4 */
  tb_tensor *t_scratch = NULL;
  if (op == CUB_TOPK_F32) t_scratch = field_tensor(L, "scratch", TB_FP32, key_bytes);        /* 5 */
  else lua_pushnil(L);
  const gpu_backend *b = tb_gpu(L);
  if (strcmp(b->name, "cuda") != 0)
    return luaL_error(L, "tb.cub.sort: CUB runs on the CUDA runtime; the %s backend is in use", b->name);
  size_t need = 0;
  tb_check_gpu(L, cub_temp_bytes(op, n, &need));
  if (tb_tensor_nbytes(t_temp) < need)
    return luaL_error(L, "tb.cub.sort: 'temp' holds %I bytes, CUB needs %I", (lua_Integer)tb_tensor_nbytes(t_temp),
                      (lua_Integer)need);
  tb_libop *u = tb_libop_new(L, &call_class, 2, N_TENSORS); /* 6 */
  cub_call *c = (cub_call *)u->data;
  c->op = op;
  c->n = n;
  c->k = k;
  c->in = tb_tensor_ptr(t_in);
  c->out = tb_tensor_ptr(t_out);
  c->temp = tb_tensor_ptr(t_temp);
  c->temp_bytes = tb_tensor_nbytes(t_temp);
  c->scratch = t_scratch ? tb_tensor_ptr(t_scratch) : 0;
  u->op = c;
  return 1;
}

static int l_temp_bytes(lua_State *L) {
  cub_op op = check_op_name(L, luaL_checkstring(L, 1));
  lua_Integer n = luaL_checkinteger(L, 2);
  tb_gpu(L);
  size_t bytes = 0;
  tb_check_gpu(L, cub_temp_bytes(op, (int64_t)n, &bytes));
  lua_pushinteger(L, (lua_Integer)bytes);
  return 1;
}

static int l_available(lua_State *L) { return tb_lib_available(L, cub_init); }

static int l_version(lua_State *L) { return tb_lib_version(L, cub_version); }

static const luaL_Reg functions[] = {
  {"sort", l_sort},
  {"temp_bytes", l_temp_bytes},
  {"available", l_available},
  {"version", l_version},
  {NULL, NULL}
};

int luaopen_tb_cub(lua_State *L);
int luaopen_tb_cub(lua_State *L) { return tb_libop_open(L, &call_class, functions); }
