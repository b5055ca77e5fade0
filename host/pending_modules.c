/* pending_modules.c: TEMPORARY during bring-up; weak luaopen_* for modules still being written,
 * so the binary links while helpers work. Deleted before anything lands. */
#include "lauxlib.h"
#include "lua.h"
#define PENDING(n) \
  __attribute__((weak)) int luaopen_tb_##n(lua_State *L); \
  __attribute__((weak)) int luaopen_tb_##n(lua_State *L) { return luaL_error(L, "tb." #n " is not built yet"); }
PENDING(device) PENDING(tensor) PENDING(kernel) PENDING(launch) PENDING(verify) PENDING(timer)
PENDING(yaml) PENDING(sys) PENDING(blas)
__attribute__((weak)) const char *const tb_arg_kind_names[] = {"ptr", "i32", "i64", "u32", "u64", "f32", "f64"};
