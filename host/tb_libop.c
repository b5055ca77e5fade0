/* tb_libop.c: what tb.blas, tb.dnn and tb.cub share: the Lua object around one prepared library
 * operation (a cuBLASLt matmul, a cuDNN graph, a CUB sort), described by a tb_libop_class (tb.h).
 *
 * Every such object has the same life: created empty with the tensors it reads and writes as user
 * values (so they outlive it), then filled; run() enqueues it on tilebench's stream and the launch
 * plan replays it from C through __tb_run; describe() says what the library was given; close(),
 * __gc and __close share one release that is safe twice; a closed object raises the class's
 * "... is closed" from every method. The class adds its own methods and its tostring label. */
#include <stdint.h>
#include <string.h>

#include "tb.h"

tb_libop *tb_libop_check(lua_State *L, int idx, const tb_libop_class *c) {
  tb_libop *u = luaL_checkudata(L, idx, c->mt);
  if (u->op == NULL) luaL_error(L, "%s", c->closed_message);
  return u;
}

/* The class rides as upvalue 1 of the shared methods: one C function serves every class. */
static const tb_libop_class *upclass(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

/* The plan step (tb_native_run_fn): self is the userdata, which knows its class. */
static gpu_status native_run(void *self, gpu_stream s) {
  tb_libop *u = self;
  if (u->op == NULL) return gpu_set_error(GPU_ERR_INVALID, "%s", u->cls->closed_message);
  return u->cls->run(u->op, s);
}

static int release(lua_State *L) {
  const tb_libop_class *c = upclass(L);
  tb_libop *u = luaL_checkudata(L, 1, c->mt);
  if (u->op) {
    if (c->destroy) c->destroy(u->op);
    u->op = NULL;
  }
  /* The tensors are no longer needed: let the collector have them. */
  for (int i = 1; i <= u->n_kept; i++) {
    lua_pushnil(L);
    lua_setiuservalue(L, 1, i);
  }
  return 0;
}

static int m_run(lua_State *L) {
  tb_libop *u = tb_libop_check(L, 1, upclass(L));
  tb_check_gpu(L, u->cls->run(u->op, tb_stream()));
  return 0;
}

static int m_describe(lua_State *L) {
  tb_libop *u = tb_libop_check(L, 1, upclass(L));
  char buf[1536];
  size_t n = u->cls->describe(u->op, buf, sizeof buf);
  lua_pushlstring(L, buf, n < sizeof buf ? n : sizeof buf - 1);
  return 1;
}

static int m_tostring(lua_State *L) {
  const tb_libop_class *c = upclass(L);
  tb_libop *u = luaL_checkudata(L, 1, c->mt);
  if (u->op == NULL) {
    lua_pushfstring(L, "%s (closed)", c->mt);
    return 1;
  }
  char buf[1536];
  size_t n = c->label(u->op, buf, sizeof buf);
  lua_pushlstring(L, buf, n < sizeof buf ? n : sizeof buf - 1);
  return 1;
}

tb_libop *tb_libop_new(lua_State *L, const tb_libop_class *c, int first, int n) {
  tb_libop *u = lua_newuserdatauv(L, sizeof *u + c->inline_bytes, n);
  int idx = lua_gettop(L);
  memset(u, 0, sizeof *u + c->inline_bytes);
  u->cls = c;
  u->n_kept = n;
  luaL_setmetatable(L, c->mt);
  for (int i = 0; i < n; i++) {
    lua_pushvalue(L, first + i);
    lua_setiuservalue(L, idx, i + 1);
  }
  return u;
}

int tb_libop_open(lua_State *L, const tb_libop_class *c, const luaL_Reg *functions) {
  static const luaL_Reg shared_methods[] = {
    {"run", m_run}, {"describe", m_describe}, {"close", release}, {NULL, NULL}};
  static const luaL_Reg metamethods[] = {
    {"__gc", release}, {"__close", release}, {"__tostring", m_tostring}, {NULL, NULL}};
  luaL_newmetatable(L, c->mt);
  lua_pushlightuserdata(L, (void *)(uintptr_t)c);
  luaL_setfuncs(L, metamethods, 1);
  lua_newtable(L);
  lua_pushlightuserdata(L, (void *)(uintptr_t)c);
  luaL_setfuncs(L, shared_methods, 1);
  if (c->methods) luaL_setfuncs(L, c->methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushlightuserdata(L, (void *)(uintptr_t)native_run);
  lua_setfield(L, -2, "__tb_run");
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_setfuncs(L, functions, 0);
  return 1;
}
