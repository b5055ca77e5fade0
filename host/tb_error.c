/* tb_error.c: GPU failures as structured Lua errors. The backend classifies each failure
 * (host/gpu/error.c: gpu_error_classes); this module carries that class to Lua so the campaign
 * reads a field instead of matching message text.
 *
 * Lua API (require "tb.error"):
 *   tb.error.new(class, message [, api]) -> error object (class: a name of tb.error.classes)
 *   tb.error.class(e)     the class of a structured error, nil for anything else (a string)
 *   tb.error.classes      {name = {context_lost = bool}, ...}: context_lost means the process's
 *                         GPU context cannot be used again (the worker must be replaced)
 * An error object is a table {class=, message=, api=} whose __tostring and __concat give the
 * message and whose string methods (e:find, e:match, ...) read it, so code written for string
 * errors reads it unchanged; it survives JSON as those three fields (tb.error.new rebuilds it). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lualib.h"
#include "tb.h"

#define TB_ERROR_MT "tb.error"

static int error_tostring(lua_State *L) {
  lua_getfield(L, 1, "message");
  if (!lua_isstring(L, -1)) lua_pushliteral(L, "(GPU error without a message)");
  return 1;
}

/* "prefix: " .. e and e .. "suffix" read as the plain message did. */
static int error_concat(lua_State *L) {
  for (int i = 1; i <= 2; i++) luaL_tolstring(L, i, NULL);
  lua_concat(L, 2);
  return 1;
}

/* e:find(...), e:match(...) ... work on the message, as they did when errors were strings. */
static int string_method(lua_State *L) {
  luaL_tolstring(L, 1, NULL);
  lua_replace(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

static void push_metatable(lua_State *L) {
  if (luaL_newmetatable(L, TB_ERROR_MT)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, error_concat);
    lua_setfield(L, -2, "__concat");
    lua_newtable(L); /* __index: the string library's functions, applied to the message */
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, LUA_STRLIBNAME) == LUA_TTABLE) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TFUNCTION) {
          lua_pushcclosure(L, string_method, 1);
          lua_pushvalue(L, -2);
          lua_insert(L, -2);
          lua_rawset(L, -6);
        } else {
          lua_pop(L, 1);
        }
      }
    }
    lua_pop(L, 2);
    lua_setfield(L, -2, "__index");
  }
}

static void push_object(lua_State *L, const char *class, const char *api, const char *message) {
  lua_createtable(L, 0, 3);
  lua_pushstring(L, class);
  lua_setfield(L, -2, "class");
  lua_pushstring(L, message);
  lua_setfield(L, -2, "message");
  if (api && *api) {
    lua_pushstring(L, api);
    lua_setfield(L, -2, "api");
  }
  push_metatable(L);
  lua_setmetatable(L, -2);
}

void tb_push_error(lua_State *L, gpu_status st, const char *api, const char *message) {
  const gpu_error_class *c = gpu_status_class(st == GPU_OK ? GPU_ERR_OTHER : st);
  push_object(L, c->name, api, message);
}

int tb_raise(lua_State *L, gpu_status st, const char *api, const char *fmt, ...) {
  char small[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  char keep_api[64];
  snprintf(keep_api, sizeof keep_api, "%s", api ? api : ""); /* api may be gpu_last_error_api() */
  if (n < 0) n = 0;
  if ((size_t)n < sizeof small) {
    tb_push_error(L, st, keep_api, small);
  } else {
    luaL_Buffer b;
    char *big = luaL_buffinitsize(L, &b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    luaL_pushresultsize(&b, (size_t)n);
    tb_push_error(L, st, keep_api, lua_tostring(L, -1));
    lua_remove(L, -2);
  }
  return lua_error(L);
}

void tb_check_gpu(lua_State *L, gpu_status st) {
  if (st != GPU_OK) tb_raise(L, st, gpu_last_error_api(), "%s", gpu_last_error());
}

static int class_index(const char *name) {
  for (int i = 0; gpu_error_classes[i].name; i++)
    if (strcmp(gpu_error_classes[i].name, name) == 0) return i;
  return -1;
}

static int l_new(lua_State *L) {
  const char *class = luaL_checkstring(L, 1);
  const char *message = luaL_checkstring(L, 2);
  const char *api = luaL_optstring(L, 3, NULL);
  if (class_index(class) < 0) luaL_argerror(L, 1, lua_pushfstring(L, "unknown error class '%s'", class));
  push_object(L, class, api, message);
  return 1;
}

static int l_class(lua_State *L) {
  if (!lua_getmetatable(L, 1)) return 0;
  luaL_getmetatable(L, TB_ERROR_MT);
  int is = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  if (!is) return 0;
  lua_getfield(L, 1, "class");
  return 1;
}

int luaopen_tb_error(lua_State *L);
int luaopen_tb_error(lua_State *L) {
  static const luaL_Reg funcs[] = {{"new", l_new}, {"class", l_class}, {NULL, NULL}};
  push_metatable(L);
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  lua_newtable(L);
  for (int i = 0; gpu_error_classes[i].name; i++) {
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, gpu_error_classes[i].context_lost);
    lua_setfield(L, -2, "context_lost");
    lua_setfield(L, -2, gpu_error_classes[i].name);
  }
  lua_setfield(L, -2, "classes");
  return 1;
}

int tb_lib_available(lua_State *L, gpu_status (*init)(void)) {
  gpu_status st = init();
  lua_pushboolean(L, st == GPU_OK);
  if (st == GPU_OK) return 1;
  lua_pushstring(L, gpu_last_error());
  return 2;
}

int tb_lib_version(lua_State *L, gpu_status (*version)(size_t *version, char *path, size_t path_len)) {
  size_t v = 0;
  char path[1024];
  tb_check_gpu(L, version(&v, path, sizeof path));
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, path);
  lua_setfield(L, -2, "path");
  return 1;
}
