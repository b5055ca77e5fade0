/* lua_host.c: sets up the embedded Lua 5.4 state: standard libraries, the tb.* C modules, lfs
 * and cjson (with cjson.safe) preloaded, and package.path rooted at tilebench's own Lua library. */
#include "lua_host.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lauxlib.h"
#include "lualib.h"

int luaopen_tb_dtype(lua_State *L);
int luaopen_tb_error(lua_State *L);
int luaopen_tb_device(lua_State *L);
int luaopen_tb_tensor(lua_State *L);
int luaopen_tb_kernel(lua_State *L);
int luaopen_tb_launch(lua_State *L);
int luaopen_tb_verify(lua_State *L);
int luaopen_tb_timer(lua_State *L);
int luaopen_tb_yaml(lua_State *L);
int luaopen_tb_sys(lua_State *L);
int luaopen_tb_blas(lua_State *L);
int luaopen_tb_dnn(lua_State *L);
int luaopen_tb_cub(lua_State *L);
int luaopen_tb_python(lua_State *L);
int luaopen_lfs(lua_State *L);
extern const char tb_git_sha[]; /* build/git_version.c, written at every build */
extern const int tb_git_dirty;
int luaopen_cjson(lua_State *L);
int luaopen_cjson_safe(lua_State *L);

static const luaL_Reg preloaded[] = {
  {"tb.dtype", luaopen_tb_dtype},
  {"tb.error", luaopen_tb_error},
  {"tb.device", luaopen_tb_device},
  {"tb.tensor", luaopen_tb_tensor},
  {"tb.kernel", luaopen_tb_kernel},
  {"tb.launch", luaopen_tb_launch},
  {"tb.verify", luaopen_tb_verify},
  {"tb.timer", luaopen_tb_timer},
  {"tb.yaml", luaopen_tb_yaml},
  {"tb.sys", luaopen_tb_sys},
  {"tb.blas", luaopen_tb_blas},
  {"tb.dnn", luaopen_tb_dnn},
  {"tb.cub", luaopen_tb_cub},
  {"tb.python", luaopen_tb_python},
  {"lfs", luaopen_lfs},
  {"cjson", luaopen_cjson},
  {"cjson.safe", luaopen_cjson_safe},
  {NULL, NULL}
};

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int has_lua_tree(const char *root) {
  char p[PATH_MAX + 32];
  if (snprintf(p, sizeof p, "%s/lua/tilebench", root) >= (int)sizeof p) return 0;
  return is_dir(p);
}

const char *tb_home(void) {
  static char home[PATH_MAX];
  if (home[0]) return home;
  const char *env = getenv("TILEBENCH_HOME");
  if (env && *env) {
    snprintf(home, sizeof home, "%s", env);
    return home;
  }
  if (has_lua_tree(TB_SOURCE_DIR)) {
    snprintf(home, sizeof home, "%s", TB_SOURCE_DIR);
    return home;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    for (int up = 0; up < 3; up++) {
      char *slash = strrchr(exe, '/');
      if (!slash) break;
      *slash = '\0';
      if (has_lua_tree(exe)) {
        snprintf(home, sizeof home, "%s", exe);
        return home;
      }
    }
  }
  snprintf(home, sizeof home, "%s", ".");
  return home;
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int tb_lua_docall(lua_State *L, int nargs, int nresults) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  return status;
}

lua_State *tb_lua_new(void) {
  lua_State *L = luaL_newstate();
  if (L == NULL) return NULL;
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  for (const luaL_Reg *m = preloaded; m->name; m++) {
    lua_pushcfunction(L, m->func);
    lua_setfield(L, -2, m->name);
  }
  lua_pop(L, 1);

  /* tilebench's library first, then the operators' shared modules (operators/_shared: oplib,
   * gemm, required by name from operator.lua files; tilebench.operator.SHARED names the folder),
   * then whatever the system has (busted, luassert). */
  const char *home = tb_home();
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua;%s/operators/_shared/?.lua;%s/?.lua;%s", home, home,
                  home, home, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 1);
  lua_pop(L, 1);

  lua_pushstring(L, home);
  lua_setglobal(L, "TILEBENCH_HOME");
  lua_pushstring(L, TB_VERSION);
  lua_setglobal(L, "TILEBENCH_VERSION");
  lua_pushstring(L, tb_git_sha);
  lua_setglobal(L, "TILEBENCH_GIT_SHA");
  lua_pushboolean(L, tb_git_dirty);
  lua_setglobal(L, "TILEBENCH_GIT_DIRTY");
  return L;
}
