/* tb_dtype.c: the dtype table shared by every tb.* module, and TileBench's aliases for it. */
#include <string.h>

#include "tb.h"

const tb_dtype_info tb_dtypes[TB_NDTYPES] = {
  [TB_FP32] = {"fp32", "float", 4, 1},
  [TB_FP16] = {"fp16", "__half", 2, 1},
  [TB_BF16] = {"bf16", "__nv_bfloat16", 2, 1},
  [TB_FP8_E4M3] = {"fp8_e4m3", "__nv_fp8_e4m3", 1, 1},
  [TB_INT8] = {"int8", "int8_t", 1, 0},
  [TB_UINT8] = {"uint8", "uint8_t", 1, 0},
  [TB_INT32] = {"int32", "int32_t", 4, 0},
  [TB_INT64] = {"int64", "int64_t", 8, 0},
};

static const struct { const char *alias; tb_dtype dtype; } aliases[] = {
  {"float32", TB_FP32}, {"float", TB_FP32}, {"float16", TB_FP16}, {"half", TB_FP16},
  {"bfloat16", TB_BF16}, {"float8_e4m3fn", TB_FP8_E4M3}, {"fp8_e4m3fn", TB_FP8_E4M3},
  {"fp8", TB_FP8_E4M3},
};

int tb_dtype_from_name(const char *name) {
  if (name == NULL) return -1;
  for (int i = 0; i < TB_NDTYPES; i++)
    if (strcmp(tb_dtypes[i].name, name) == 0) return i;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(aliases[i].alias, name) == 0) return (int)aliases[i].dtype;
  return -1;
}

tb_dtype tb_check_dtype(lua_State *L, int arg) {
  const char *name = luaL_checkstring(L, arg);
  int d = tb_dtype_from_name(name);
  if (d < 0) luaL_argerror(L, arg, lua_pushfstring(L, "invalid dtype '%s'", name));
  return (tb_dtype)d;
}
