/* main.c: the tilebench command. Starts Lua and hands argv to lua/tilebench/cli.lua, whose
 * main() returns the exit status. All policy lives in Lua; this file only boots it. */
#include <stdio.h>
#include <stdlib.h>

#include "lauxlib.h"
#include "lua.h"
#include "lua_host.h"
#include "tb.h"

int main(int argc, char **argv) {
  double sync_s;
  if (tb_sync_timeout_env(&sync_s) != 0) {
    fprintf(stderr, "tilebench: TILEBENCH_SYNC_TIMEOUT='%s': expected seconds > 0\n", getenv("TILEBENCH_SYNC_TIMEOUT"));
    return 2;
  }
  /* The backend is chosen once, before anything touches a GPU: an unknown name stops here. */
  const char *backend = getenv("TILEBENCH_BACKEND");
  if (backend && *backend && gpu_backend_select(backend) != GPU_OK) {
    fprintf(stderr, "tilebench: TILEBENCH_BACKEND='%s': %s\n", backend, gpu_last_error());
    return 2;
  }
  lua_State *L = tb_lua_new();
  if (L == NULL) {
    fprintf(stderr, "tilebench: cannot create the Lua state (out of memory)\n");
    return 1;
  }
  /* arg: as lua.c sets it, arg[0] the program, arg[1..] the words after it. */
  lua_createtable(L, argc, 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i);
  }
  lua_setglobal(L, "arg");

  int status = 1;
  lua_getglobal(L, "require");
  lua_pushstring(L, "tilebench.cli");
  if (tb_lua_docall(L, 1, 1) == LUA_OK) {
    lua_getfield(L, -1, "main");
    lua_getglobal(L, "arg");
    if (tb_lua_docall(L, 1, 1) == LUA_OK) {
      status = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
    } else {
      fprintf(stderr, "tilebench: %s\n", lua_tostring(L, -1));
    }
  } else {
    fprintf(stderr, "tilebench: cannot load the Lua library from %s/lua: %s\n", tb_home(),
            lua_tostring(L, -1));
  }
  fflush(stdout);
  lua_close(L);
  return status;
}
