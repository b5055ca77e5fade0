/* test_libop.c: the shared Lua object of tb.blas, tb.dnn and tb.cub (tb_libop.c), driven by a
 * made-up library class with counters: run, describe, __tostring, the class's own method, the
 * plan step (__tb_run), close twice, the closed message from every method and from the plan
 * step, the kept tensors dropped on close, and an inline op that needs no destroy. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "lualib.h"
#include "tb.h"

typedef struct toy_op {
  int runs, destroyed;
  gpu_stream last_stream;
} toy_op;

static toy_op heap_op; /* "allocated by the library": destroy must be called once */

static gpu_status toy_run(void *op, gpu_stream s) {
  toy_op *t = op;
  t->runs++;
  t->last_stream = s;
  return GPU_OK;
}

static void toy_destroy(void *op) { ((toy_op *)op)->destroyed++; }

static size_t toy_describe(const void *op, char *buf, size_t len) {
  int n = snprintf(buf, len, "toy op, %d runs", ((const toy_op *)op)->runs);
  return n < 0 ? 0 : (size_t)n;
}

static size_t toy_label(const void *op, char *buf, size_t len) {
  (void)op;
  int n = snprintf(buf, len, "toy (open)");
  return n < 0 ? 0 : (size_t)n;
}

static const tb_libop_class toy_class;

static int m_runs(lua_State *L) {
  toy_op *t = tb_libop_check(L, 1, &toy_class)->op;
  lua_pushinteger(L, t->runs);
  return 1;
}

static const luaL_Reg toy_methods[] = {{"runs", m_runs}, {NULL, NULL}};

static const tb_libop_class toy_class = {
  .mt = "test.toy",
  .closed_message = "toy op is closed",
  .run = toy_run,
  .describe = toy_describe,
  .label = toy_label,
  .destroy = toy_destroy,
  .methods = toy_methods,
};

static const tb_libop_class inline_class = {
  .mt = "test.inline",
  .closed_message = "inline op is closed",
  .run = toy_run,
  .describe = toy_describe,
  .label = toy_describe,
  .inline_bytes = sizeof(toy_op),
};

/* toy.new(kept): an object on heap_op keeping `kept`; toy.inline(): one whose op is inline. */
static int l_new(lua_State *L) {
  tb_libop *u = tb_libop_new(L, &toy_class, 1, 1);
  u->op = &heap_op;
  return 1;
}

static int l_inline(lua_State *L) {
  tb_libop *u = tb_libop_new(L, &inline_class, 1, 0);
  /* what an inline op holds (pointers, int64_t, double) must be aligned; Lua aligns a userdata's
   * block to 8 bytes, not 16 */
  CHECK(((uintptr_t)u->data % _Alignof(int64_t)) == 0 && ((uintptr_t)u->data % _Alignof(void *)) == 0,
        "inline data at %p is not aligned for its fields", (void *)u->data);
  u->op = u->data;
  return 1;
}

static const luaL_Reg toy_functions[] = {{"new", l_new}, {NULL, NULL}};
static const luaL_Reg inline_functions[] = {{"new", l_inline}, {NULL, NULL}};

static int open_toy(lua_State *L) { return tb_libop_open(L, &toy_class, toy_functions); }
static int open_inline(lua_State *L) { return tb_libop_open(L, &inline_class, inline_functions); }

/* Runs chunk; it returns a string: "" when all its expectations held, else what failed. */
static void expect_lua(lua_State *L, const char *chunk) {
  if (luaL_dostring(L, chunk) != LUA_OK) {
    CHECK(0, "chunk raised: %s\n%s", lua_tostring(L, -1), chunk);
  } else {
    const char *r = lua_tostring(L, -1);
    CHECK(r && *r == '\0', "%s", r ? r : "(no result)");
  }
  lua_settop(L, 0);
}

/* Calls the object's __tb_run (the plan step) on it, as tb_launch.c does. */
static gpu_status plan_step(lua_State *L, const char *global) {
  lua_getglobal(L, global);
  void *self = lua_touserdata(L, -1);
  lua_getmetatable(L, -1);
  lua_getfield(L, -1, "__tb_run");
  tb_native_run_fn fn = (tb_native_run_fn)(uintptr_t)lua_touserdata(L, -1);
  lua_settop(L, 0);
  CHECK(fn != NULL, "__tb_run missing");
  return fn ? fn(self, (gpu_stream)(uintptr_t)0x1234) : GPU_OK;
}

int main(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "toy", open_toy, 1);
  luaL_requiref(L, "inl", open_inline, 1);
  lua_settop(L, 0);

  expect_lua(L,
             "op = toy.new({})\n"
             "local mt = getmetatable(op)\n"
             "if mt.__name ~= 'test.toy' then return 'metatable name ' .. tostring(mt.__name) end\n"
             "if type(mt.__tb_run) ~= 'userdata' then return '__tb_run is ' .. type(mt.__tb_run) end\n"
             "op:run() op:run()\n"
             "if op:runs() ~= 2 then return 'runs ' .. op:runs() end\n"
             "if op:describe() ~= 'toy op, 2 runs' then return 'describe: ' .. op:describe() end\n"
             "if tostring(op) ~= 'toy (open)' then return 'tostring: ' .. tostring(op) end\n"
             "return ''");
  CHECK(heap_op.runs == 2, "runs %d", heap_op.runs);

  CHECK(plan_step(L, "op") == GPU_OK, "plan step failed");
  CHECK(heap_op.runs == 3 && heap_op.last_stream == (gpu_stream)(uintptr_t)0x1234, "plan step: runs %d",
        heap_op.runs);

  /* The kept value is the object's user value until close drops it. */
  expect_lua(L,
             "kept = setmetatable({}, {__mode = 'k'})\n"
             "local t = {} kept[t] = true\n"
             "op2 = toy.new(t) t = nil\n"
             "collectgarbage() collectgarbage()\n"
             "if next(kept) == nil then return 'kept value collected while the object is open' end\n"
             "op2:close()\n"
             "collectgarbage() collectgarbage()\n"
             "if next(kept) ~= nil then return 'kept value still held after close' end\n"
             "return ''");
  CHECK(heap_op.destroyed == 1, "destroyed %d after one close", heap_op.destroyed);

  expect_lua(L,
             "op:close() op:close()\n"
             "if tostring(op) ~= 'test.toy (closed)' then return 'closed tostring: ' .. tostring(op) end\n"
             "for _, m in ipairs({'run', 'describe', 'runs'}) do\n"
             "  local ok, err = pcall(op[m], op)\n"
             "  if ok or not tostring(err):find('toy op is closed', 1, true) then\n"
             "    return m .. ' on a closed op: ' .. tostring(err) end\n"
             "end\n"
             "local ok, err = pcall(op.run, 42)\n"
             "if ok or not tostring(err):find('test.toy expected', 1, true) then return 'wrong type: ' .. tostring(err) end\n"
             "return ''");
  CHECK(heap_op.destroyed == 2, "destroyed %d after closing two objects on it (twice)", heap_op.destroyed);
  CHECK(plan_step(L, "op") == GPU_ERR_INVALID, "plan step on a closed op did not fail");
  CHECK(strstr(gpu_last_error(), "toy op is closed") != NULL, "plan step message: %s", gpu_last_error());

  expect_lua(L,
             "do local x <close> = inl.new() x:run() if x:describe() ~= 'toy op, 1 runs' then\n"
             "  return 'inline describe: ' .. x:describe() end xi = x end\n"
             "if tostring(xi) ~= 'test.inline (closed)' then return '<close> did not close: ' .. tostring(xi) end\n"
             "local ok, err = pcall(xi.run, xi)\n"
             "if ok or not tostring(err):find('inline op is closed', 1, true) then return 'inline closed: ' .. tostring(err) end\n"
             "return ''");

  lua_close(L); /* __gc on the closed objects: no second destroy */
  CHECK(heap_op.destroyed == 2, "destroyed %d after lua_close", heap_op.destroyed);
  if (failures == 0) printf("test_libop: ok\n");
  return failures != 0;
}
