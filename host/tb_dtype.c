/* tb_dtype.c: the one dtype table (names, sizes, float or integer, aliases), used by every tb.*
 * module and exported to Lua as tb.dtype so that no Lua file keeps its own copy. A dtype's type
 * in the kernel language (c_type: "__half" in CUDA C) is the backend's to say
 * (gpu_backend.kernel_type), so a HIP backend gives its own.
 *
 * Lua API (require "tb.dtype"):
 *   tb.dtype.names             {"fp32", "fp16", ...}: every canonical name, in table order
 *   tb.dtype.info[name]        {name=, c_type=, size=, is_float=, tensor=, max_finite=} for a
 *                              canonical name (max_finite: floats only, the largest finite value)
 *                              (tensor: whether tb.tensor can hold it; c_type: the backend's
 *                              kernel-language type, nil where it has none)
 *   tb.dtype.aliases[alias]    the canonical name of an alias ("float16" -> "fp16")
 *   tb.dtype.normalize(name)   the canonical name of a name or alias (also in any letter case),
 *                              or nil for a name tilebench does not know */
#include <ctype.h>
#include <string.h>

#include "tb.h"

const tb_dtype_info tb_dtypes[TB_NDTYPES] = {
  [TB_FP32] = {"fp32", 4, 1, 3.4028234663852886e38},
  [TB_FP16] = {"fp16", 2, 1, 65504.0},
  [TB_BF16] = {"bf16", 2, 1, 3.3895313892515355e38},
  [TB_FP8_E4M3] = {"fp8_e4m3", 1, 1, 448.0},
  [TB_INT8] = {"int8", 1, 0},
  [TB_UINT8] = {"uint8", 1, 0},
  [TB_INT32] = {"int32", 4, 0},
  [TB_INT64] = {"int64", 8, 0},
  /* known names without tensor support */
  [TB_FP8_E5M2] = {"fp8_e5m2", 1, 1, 57344.0},
  [TB_INT16] = {"int16", 2, 0},
};

static const struct { const char *alias; tb_dtype dtype; } aliases[] = {
  {"float32", TB_FP32}, {"float", TB_FP32}, {"float16", TB_FP16}, {"half", TB_FP16},
  {"bfloat16", TB_BF16}, {"float8_e4m3fn", TB_FP8_E4M3}, {"fp8_e4m3fn", TB_FP8_E4M3},
  {"fp8", TB_FP8_E4M3}, {"float8_e5m2", TB_FP8_E5M2},
};
#define NALIASES (sizeof aliases / sizeof aliases[0])

int tb_dtype_from_name(const char *name) {
  if (name == NULL) return -1;
  for (int i = 0; i < TB_NDTYPES; i++)
    if (strcmp(tb_dtypes[i].name, name) == 0) return i;
  for (size_t i = 0; i < NALIASES; i++)
    if (strcmp(aliases[i].alias, name) == 0) return (int)aliases[i].dtype;
  return -1;
}

tb_dtype tb_check_dtype(lua_State *L, int arg) {
  const char *name = luaL_checkstring(L, arg);
  int d = tb_dtype_from_name(name);
  if (d < 0 || d >= TB_NDEVICE_DTYPES) luaL_argerror(L, arg, lua_pushfstring(L, "invalid dtype '%s'", name));
  return (tb_dtype)d;
}

/* Exact spelling first, then in lower case: TileBench's CSVs write "FP16" and "Float16". */
static int l_normalize(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING) { lua_pushnil(L); return 1; }
  size_t len;
  const char *name = lua_tolstring(L, 1, &len);
  int d = tb_dtype_from_name(name);
  if (d < 0 && len < 64) {
    char lower[64];
    for (size_t i = 0; i <= len; i++) lower[i] = (char)tolower((unsigned char)name[i]);
    d = tb_dtype_from_name(lower);
  }
  if (d < 0) lua_pushnil(L);
  else lua_pushstring(L, tb_dtypes[d].name);
  return 1;
}

int luaopen_tb_dtype(lua_State *L);
int luaopen_tb_dtype(lua_State *L) {
  lua_newtable(L);
  lua_createtable(L, TB_NDTYPES, 0); /* names */
  lua_createtable(L, 0, TB_NDTYPES); /* info */
  for (int i = 0; i < TB_NDTYPES; i++) {
    const tb_dtype_info *d = &tb_dtypes[i];
    lua_pushstring(L, d->name);
    lua_rawseti(L, -3, i + 1);
    lua_createtable(L, 0, 5);
    lua_pushstring(L, d->name); lua_setfield(L, -2, "name");
    const gpu_backend *b = gpu_backend_get();
    lua_pushstring(L, b->kernel_type ? b->kernel_type(d->name) : NULL); lua_setfield(L, -2, "c_type");
    lua_pushinteger(L, d->size); lua_setfield(L, -2, "size");
    lua_pushboolean(L, d->is_float); lua_setfield(L, -2, "is_float");
    if (d->is_float) { lua_pushnumber(L, d->max_finite); lua_setfield(L, -2, "max_finite"); }
    lua_pushboolean(L, i < TB_NDEVICE_DTYPES); lua_setfield(L, -2, "tensor");
    lua_setfield(L, -2, d->name);
  }
  lua_setfield(L, -3, "info");
  lua_setfield(L, -2, "names");
  lua_createtable(L, 0, (int)NALIASES);
  for (size_t i = 0; i < NALIASES; i++) {
    lua_pushstring(L, tb_dtypes[aliases[i].dtype].name);
    lua_setfield(L, -2, aliases[i].alias);
  }
  lua_setfield(L, -2, "aliases");
  lua_pushcfunction(L, l_normalize);
  lua_setfield(L, -2, "normalize");
  return 1;
}
