/* lua_host.h: the embedded interpreter: a lua_State with the standard libraries, lfs, cjson and
 * the tb.* modules preloaded, package.path pointing at tilebench's Lua library. */
#ifndef TB_LUA_HOST_H
#define TB_LUA_HOST_H

#include "lua.h"

/* The source tree holding lua/, operators/, campaigns/: $TILEBENCH_HOME, else the tree this
 * binary was built from, else the folder above the executable's. */
const char *tb_home(void);
lua_State *tb_lua_new(void);
/* Calls the function below nargs arguments with a traceback handler (lua.c's docall). */
int tb_lua_docall(lua_State *L, int nargs, int nresults);
#endif
