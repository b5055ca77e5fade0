/* tb_python.c: luaopen_tb_python, the binding of the embedded CPython (python.c) and the torch
 * implementation's launch-plan step: a call into the bridge that enqueues the operator's torch
 * function on tilebench's stream, replayed from C by the timer and the verifier like a cuBLASLt
 * call (tb.launch.plan{{call = step}}).
 *
 * Lua API (require "tb.python")
 *   tb.python.available()     -> true | false, reason   starts the interpreter once
 *   tb.python.info()          -> {library =, version =} what was opened ("" before start)
 *   tb.python.call(fn, arg [, n]) -> string     the bridge's fn(arg, n) (host/python/tb_bridge.py);
 *                                               raises when the interpreter is missing
 *   tb.python.describe(tensor) -> {ptr =, shape = {...}, strides = {...}, dtype =}  what the bridge
 *                                               builds a zero-copy view from (strides in elements)
 *   tb.python.stream()        -> integer        the native handle of tilebench's stream
 *   tb.python.step(id, name)  -> step ("tb.python.step") over the bridge's step id
 *   step:run()                enqueue once on tilebench's stream
 *   step:finish()             -> string (JSON) the bridge's finish: outputs checked and copied
 *   step:close()              drop the bridge's step (also __gc / __close)   step:is_closed()
 *   getmetatable(step).__tb_run: light userdata, the launch_plan_call_fn that replays it */
#include <stdlib.h>
#include <string.h>

#include "launch_plan.h"
#include "python.h"
#include "tb.h"

#define STEP_MT "tb.python.step"

static int l_available(lua_State *L) {
  const char *why;
  if (python_start(&why) == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_pushstring(L, why);
  return 2;
}

static int l_info(lua_State *L) {
  lua_createtable(L, 0, 2);
  lua_pushstring(L, python_library());
  lua_setfield(L, -2, "library");
  lua_pushstring(L, python_version());
  lua_setfield(L, -2, "version");
  return 1;
}

static int l_call(lua_State *L) {
  const char *fn = luaL_checkstring(L, 1);
  const char *arg = luaL_checkstring(L, 2);
  lua_Integer n = luaL_optinteger(L, 3, 0);
  char *out = NULL;
  int rc = python_call(fn, arg, (int64_t)n, &out);
  if (!out) return luaL_error(L, "python: out of host memory");
  lua_pushstring(L, out);
  free(out);
  if (rc != 0) return lua_error(L);
  return 1;
}

static void push_int_array(lua_State *L, const int64_t *v, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)v[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

static int l_describe(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)tb_tensor_ptr(t));
  lua_setfield(L, -2, "ptr");
  push_int_array(L, t->shape, t->ndim);
  lua_setfield(L, -2, "shape");
  push_int_array(L, t->strides, t->ndim);
  lua_setfield(L, -2, "strides");
  lua_pushstring(L, tb_dtypes[t->dtype].name);
  lua_setfield(L, -2, "dtype");
  return 1;
}

static lua_Integer stream_handle(gpu_stream s) {
  const gpu_backend *b = gpu_backend_get();
  return (lua_Integer)(uintptr_t)(b && b->native_stream ? b->native_stream(s) : (void *)s);
}

static int l_stream(lua_State *L) {
  tb_gpu(L);
  lua_pushinteger(L, stream_handle(tb_stream()));
  return 1;
}

/* ---- the step -------------------------------------------------------------------------------- */

static python_step *check_step(lua_State *L) {
  python_step *p = luaL_checkudata(L, 1, STEP_MT);
  if (p->id == 0) luaL_error(L, "torch step is closed");
  return p;
}

static int l_step(lua_State *L) {
  lua_Integer id = luaL_checkinteger(L, 1);
  const char *name = luaL_optstring(L, 2, "torch");
  luaL_argcheck(L, id > 0, 1, "step id must be positive");
  python_step *p = lua_newuserdatauv(L, sizeof *p, 0);
  p->id = 0;
  luaL_setmetatable(L, STEP_MT);
  snprintf(p->name, sizeof p->name, "%s", name);
  p->id = id;
  return 1;
}

static int s_run(lua_State *L) {
  python_step *p = check_step(L);
  tb_gpu(L);
  tb_check_gpu(L, python_step_run(p, tb_stream()));
  return 0;
}

static int s_finish(lua_State *L) {
  python_step *p = check_step(L);
  tb_gpu(L);
  char id[32];
  snprintf(id, sizeof id, "%lld", p->id);
  char *out = NULL;
  int rc = python_call("finish", id, (int64_t)stream_handle(tb_stream()), &out);
  if (!out) return luaL_error(L, "python: out of host memory");
  lua_pushstring(L, out);
  free(out);
  if (rc != 0) return lua_error(L);
  return 1;
}

static int s_release(lua_State *L) {
  python_step *p = luaL_checkudata(L, 1, STEP_MT);
  if (p->id != 0) {
    char id[32], *out = NULL;
    snprintf(id, sizeof id, "%lld", p->id);
    p->id = 0;
    python_call("close", id, 0, &out); /* the interpreter runs: the step was made by it */
    free(out);
  }
  return 0;
}

static int s_is_closed(lua_State *L) {
  lua_pushboolean(L, ((python_step *)luaL_checkudata(L, 1, STEP_MT))->id == 0);
  return 1;
}

static int s_tostring(lua_State *L) {
  python_step *p = luaL_checkudata(L, 1, STEP_MT);
  lua_pushfstring(L, "tb.python.step(%s%s)", p->name, p->id ? "" : ", closed");
  return 1;
}

static const luaL_Reg step_methods[] = {
  {"run", s_run}, {"finish", s_finish}, {"close", s_release}, {"is_closed", s_is_closed}, {NULL, NULL}};

static const luaL_Reg funcs[] = {
  {"available", l_available}, {"info", l_info}, {"call", l_call}, {"describe", l_describe},
  {"stream", l_stream}, {"step", l_step}, {NULL, NULL}};

int luaopen_tb_python(lua_State *L);
int luaopen_tb_python(lua_State *L) {
  luaL_newmetatable(L, STEP_MT);
  luaL_newlib(L, step_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, s_release);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, s_release);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, s_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushlightuserdata(L, (void *)(uintptr_t)python_step_run);
  lua_setfield(L, -2, "__tb_run");
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
