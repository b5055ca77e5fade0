/* tb_verify.c: the tb.verify module: poison outputs before a run, and compare an output with its
 * reference on the device in one pass (the C unit verify.c, host/kernels/verify.cu), copying back
 * a few KB.
 *
 *   tb.verify.poison(t) -> t      float dtypes: NaN everywhere (0xFF bytes); integer dtypes: the
 *                                 type's minimum (INT8_MIN, INT32_MIN, INT64_MIN; uint8: 0xFF)
 *   tb.verify.compare(out, ref, {atol =, rtol = [, max_report = 8]}) -> {
 *       ok = bool, mismatches = count, numel = n, max_abs = x, max_rel = x, atol = a, rtol = r,
 *       first = { {index = 0-based flat index, got = v, expected = v}, ... } }
 *     atol and rtol (finite, >= 0) are required: the tolerances live in Lua (config.tolerance:
 *     defaults by dtype, config.yaml's verify, arch_overrides); max_report is 0 .. 1024.
 *     Rule: |out - ref| <= atol + rtol*|ref| (in double); NaN matches only NaN; +Inf only +Inf,
 *     -Inf only -Inf; two integer tensors with atol = rtol = 0 compare exactly as int64.
 *     out and ref need the same number of elements; dtypes may differ only when both are float.
 *     first holds the lowest-index mismatches, at most max_report of them. max_abs and max_rel
 *     are over pairs of finite values (max_rel leaves out ref == 0). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tb.h"
#include "verify.h"

static int l_poison(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1);
  const gpu_backend *b = tb_gpu(L);
  size_t nbytes = tb_tensor_nbytes(t);
  gpu_ptr p = tb_tensor_ptr(t);
  lua_settop(L, 1);
  if (nbytes == 0) return 1;
  switch (t->dtype) {
    case TB_INT8: tb_check_gpu(L, b->memset8_async(p, 0x80, nbytes, tb_stream())); break;
    case TB_INT32: tb_check_gpu(L, b->memset32_async(p, 0x80000000u, (size_t)t->numel, tb_stream())); break;
    case TB_INT64: tb_tensor_fill_bits(L, t, 0x8000000000000000ULL); break; /* no 64-bit memset */
    default: /* every float dtype, and uint8's maximum */
      tb_check_gpu(L, b->memset8_async(p, 0xFF, nbytes, tb_stream()));
  }
  return 1;
}

/* opts[name]: required, a finite number >= 0. */
static double tolerance(lua_State *L, int opts, const char *name) {
  if (lua_getfield(L, opts, name) == LUA_TNIL)
    luaL_argerror(L, opts, lua_pushfstring(L, "%s is required (tolerances come from config.tolerance)", name));
  int ok = 0;
  double v = lua_tonumberx(L, -1, &ok);
  if (!ok || !(v >= 0) || isinf(v)) luaL_argerror(L, opts, lua_pushfstring(L, "%s must be a finite number >= 0", name));
  lua_pop(L, 1);
  return v;
}

static void push_value(lua_State *L, tb_dtype d, uint64_t bits) {
  if (tb_dtypes[d].is_float) {
    double v;
    memcpy(&v, &bits, sizeof v);
    lua_pushnumber(L, v);
  } else {
    lua_pushinteger(L, (lua_Integer)bits);
  }
}

static int l_compare(lua_State *L) {
  tb_tensor *out = tb_check_tensor(L, 1), *ref = tb_check_tensor(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  if (out->numel != ref->numel)
    luaL_error(L, "compare: out has %I elements, ref has %I", (lua_Integer)out->numel, (lua_Integer)ref->numel);
  const tb_dtype_info *od = &tb_dtypes[out->dtype], *rd = &tb_dtypes[ref->dtype];
  if (out->dtype != ref->dtype && !(od->is_float && rd->is_float))
    luaL_error(L, "compare: out is %s and ref is %s (dtypes may differ only when both are float)", od->name, rd->name);
  double atol = tolerance(L, 3, "atol");
  double rtol = tolerance(L, 3, "rtol");
  lua_Integer max_report = 8;
  lua_getfield(L, 3, "max_report");
  if (!lua_isnil(L, -1)) {
    int ok = 0;
    max_report = lua_tointegerx(L, -1, &ok);
    if (!ok || max_report < 0 || max_report > VERIFY_MAX_REPORT)
      luaL_argerror(L, 3, lua_pushfstring(L, "max_report must be an integer in [0, %d]", VERIFY_MAX_REPORT));
  }
  lua_pop(L, 1);

  verify_result *r = lua_newuserdatauv(L, sizeof *r, 0); /* 24 KB: collected, never leaked by a raise */
  verify_operand o = {tb_tensor_ptr(out), (uint64_t)out->numel, od->name, od->size, od->is_float};
  verify_operand e = {tb_tensor_ptr(ref), (uint64_t)ref->numel, rd->name, rd->size, rd->is_float};
  if (o.numel > 0) {
    const gpu_device_props *props = tb_current_props(L);
    verify_device dev = {tb_gpu(L), props->arch, props->sm_count, tb_stream(), tb_sync_timeout_s() * 1e3};
    tb_check_gpu(L, verify_compare(&dev, &o, &e, atol, rtol, (unsigned)max_report, r));
  } else {
    memset(r, 0, sizeof *r);
  }

  lua_createtable(L, 0, 8);
  lua_pushboolean(L, r->mismatches == 0);
  lua_setfield(L, -2, "ok");
  lua_pushinteger(L, (lua_Integer)r->mismatches);
  lua_setfield(L, -2, "mismatches");
  lua_pushinteger(L, (lua_Integer)o.numel);
  lua_setfield(L, -2, "numel");
  lua_pushnumber(L, r->max_abs);
  lua_setfield(L, -2, "max_abs");
  lua_pushnumber(L, r->max_rel);
  lua_setfield(L, -2, "max_rel");
  lua_pushnumber(L, atol);
  lua_setfield(L, -2, "atol");
  lua_pushnumber(L, rtol);
  lua_setfield(L, -2, "rtol");
  lua_createtable(L, (int)r->nfirst, 0);
  for (unsigned i = 0; i < r->nfirst; i++) {
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)r->first[i].index);
    lua_setfield(L, -2, "index");
    push_value(L, out->dtype, r->first[i].got);
    lua_setfield(L, -2, "got");
    push_value(L, ref->dtype, r->first[i].expected);
    lua_setfield(L, -2, "expected");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "first");
  return 1;
}

static const luaL_Reg verify_functions[] = {
  {"poison", l_poison}, {"compare", l_compare}, {NULL, NULL}};

int luaopen_tb_verify(lua_State *L);
int luaopen_tb_verify(lua_State *L) {
  luaL_newlib(L, verify_functions);
  return 1;
}
