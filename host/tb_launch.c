/* tb_launch.c: the tb.launch module: builds launch plans (the C unit launch_plan.c, replayed from C
 * by the timer and the verifier with no Lua in between) from Lua tables, checking each argument
 * against the kernel's signature; and scalars of explicit width for kernel arguments.
 *
 * Lua API (require "tb.launch"):
 *   tb.launch.i32(v) i64(v) u32(v) u64(v) f32(v) f64(v) -> scalar   range-checked
 *   tb.launch.value(scalar) -> kind, value
 *   tb.launch.plan(steps) -> plan, each step one of
 *     { fn = <tb.function>, grid = {gx [, gy, gz]}, block = {bx [, by, bz]}, smem = bytes,
 *       args = { tensor | scalar | number (where the function declares the width) } }
 *     { call = <userdata whose metatable has __tb_run = lightuserdata(tb_native_run_fn)> }
 *     { copy = {dst = tensor, src = tensor [, bytes = n]} }   the driver's device-to-device copy
 *       (cuMemcpyDtoDAsync) of bytes (default: the smaller tensor's size); `tilebench peaks`
 *       times it beside its own copy kernel. CUPTI's kernel records do not see it: time such a
 *       plan with the events clock.
 *   tb.launch.tensormap(tensor, {dims = {...}, strides = {...}, box = {...} [, swizzle = 128]})
 *     -> the 128 bytes of a TMA tensor map (a string) over the tensor's memory: dims and box in
 *     elements, innermost first; strides in bytes of dims 2..n; checked against the tensor's size
 *   plan:run([sync = true [, timeout_s]])   runs once on tb's stream; synchronizes and raises on
 *                             error, or "timeout: plan:run: ..." after timeout_s (default
 *                             $TILEBENCH_SYNC_TIMEOUT, else 300 s)
 *   plan:steps() -> count      plan:kernels() -> kernel launches per run
 *   plan:describe() -> { {kind = "kernel", name, grid, block, smem, nargs} | {kind = "call", name}
 *                          | {kind = "copy", name, bytes} }
 *   plan.note = "text" | nil   what the implementation wants its result row to say about the plan
 *                             (flash_attention's and batch_normalization's `lib`: the engine cuDNN
 *                             chose); runner.lua copies it into the row (raw results, CSV note_<impl>).
 *                             The one field a plan takes; it is kept in the plan's user value.
 *   tostring(plan) */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "launch_plan.h"
#include "tb.h"

#define TB_SCALAR_MT "tb.scalar"

typedef struct scalar {
  tb_arg_kind kind;
  union { int64_t i; uint64_t u; double f; } v;
} scalar;

typedef struct tensor_ref { int step, arg, uv_index; } tensor_ref;

struct tb_plan {
  launch_plan *core;        /* NULL once released */
  int ntensors;
  tensor_ref *tensors;      /* which user-value slots hold tensors, to refuse closed ones */
  int released;
};

static const int kind_size[TB_NARG_KINDS] = {8, 4, 8, 4, 8, 4, 8};

/* ---- scalars ----------------------------------------------------------------------------- */

static scalar *test_scalar(lua_State *L, int idx) { return luaL_testudata(L, idx, TB_SCALAR_MT); }

/* Converts the Lua number at idx to kind, range-checked; on failure pushes nothing and returns a
 * static reason. */
static const char *number_to_kind(lua_State *L, int idx, tb_arg_kind kind, scalar *out) {
  out->kind = kind;
  if (kind == TB_ARG_F32 || kind == TB_ARG_F64) {
    double d = lua_tonumber(L, idx);
    if (kind == TB_ARG_F32 && isfinite(d) && fabs(d) > FLT_MAX) return "out of range for f32";
    out->v.f = d;
    return NULL;
  }
  int isint = 0;
  lua_Integer v = lua_tointegerx(L, idx, &isint);
  if (!isint) return "not an integer";
  switch (kind) {
    case TB_ARG_I32:
      if (v < INT32_MIN || v > INT32_MAX) return "out of range for i32";
      break;
    case TB_ARG_U32:
      if (v < 0 || v > (lua_Integer)UINT32_MAX) return "out of range for u32";
      break;
    case TB_ARG_U64:
      if (v < 0) return "out of range for u64";
      break;
    default:
      break;
  }
  if (kind == TB_ARG_U32 || kind == TB_ARG_U64) out->v.u = (uint64_t)v;
  else out->v.i = v;
  return NULL;
}

static int new_scalar(lua_State *L, tb_arg_kind kind) {
  luaL_checknumber(L, 1);
  scalar s;
  const char *why = number_to_kind(L, 1, kind, &s);
  if (why) {
    lua_pushvalue(L, 1);
    return luaL_error(L, "bad argument #1 to '%s' (%s: %s)", tb_arg_kind_names[kind], why,
                      luaL_tolstring(L, -1, NULL));
  }
  scalar *u = lua_newuserdatauv(L, sizeof *u, 0);
  *u = s;
  luaL_setmetatable(L, TB_SCALAR_MT);
  return 1;
}

static int l_i32(lua_State *L) { return new_scalar(L, TB_ARG_I32); }
static int l_i64(lua_State *L) { return new_scalar(L, TB_ARG_I64); }
static int l_u32(lua_State *L) { return new_scalar(L, TB_ARG_U32); }
static int l_u64(lua_State *L) { return new_scalar(L, TB_ARG_U64); }
static int l_f32(lua_State *L) { return new_scalar(L, TB_ARG_F32); }
static int l_f64(lua_State *L) { return new_scalar(L, TB_ARG_F64); }

static void push_scalar_value(lua_State *L, const scalar *s) {
  switch (s->kind) {
    case TB_ARG_F32: case TB_ARG_F64: lua_pushnumber(L, s->v.f); break;
    case TB_ARG_U32: case TB_ARG_U64: lua_pushinteger(L, (lua_Integer)s->v.u); break;
    default: lua_pushinteger(L, (lua_Integer)s->v.i); break;
  }
}

static int l_value(lua_State *L) {
  scalar *s = luaL_checkudata(L, 1, TB_SCALAR_MT);
  lua_pushstring(L, tb_arg_kind_names[s->kind]);
  push_scalar_value(L, s);
  return 2;
}

static int scalar_tostring(lua_State *L) {
  scalar *s = luaL_checkudata(L, 1, TB_SCALAR_MT);
  push_scalar_value(L, s);
  lua_pushfstring(L, "%s(%s)", tb_arg_kind_names[s->kind], luaL_tolstring(L, -1, NULL));
  return 1;
}

static void pack(const scalar *s, unsigned char *slot) {
  int32_t i32; uint32_t u32; float f32;
  switch (s->kind) {
    case TB_ARG_I32: i32 = (int32_t)s->v.i; memcpy(slot, &i32, 4); break;
    case TB_ARG_U32: u32 = (uint32_t)s->v.u; memcpy(slot, &u32, 4); break;
    case TB_ARG_F32: f32 = (float)s->v.f; memcpy(slot, &f32, 4); break;
    case TB_ARG_F64: memcpy(slot, &s->v.f, 8); break;
    case TB_ARG_U64: memcpy(slot, &s->v.u, 8); break;
    default: memcpy(slot, &s->v.i, 8); break;
  }
}

/* ---- plans ------------------------------------------------------------------------------- */

static void plan_release(tb_plan *p) {
  if (p->released) return;
  p->released = 1;
  launch_plan_free(p->core);
  free(p->tensors);
  p->core = NULL;
  p->tensors = NULL;
  p->ntensors = 0;
}

static int plan_gc(lua_State *L) {
  plan_release(luaL_checkudata(L, 1, TB_PLAN_MT));
  return 0;
}

tb_plan *tb_check_plan(lua_State *L, int idx) {
  tb_plan *p = luaL_checkudata(L, idx, TB_PLAN_MT);
  if (p->released) luaL_error(L, "plan is closed");
  if (p->ntensors > 0) {
    lua_getiuservalue(L, idx, 1);
    for (int i = 0; i < p->ntensors; i++) {
      lua_rawgeti(L, -1, p->tensors[i].uv_index);
      tb_tensor *t = luaL_testudata(L, -1, TB_TENSOR_MT);
      if (t == NULL || t->storage == NULL)
        luaL_error(L, "plan step %d: argument %d: tensor is closed", p->tensors[i].step,
                   p->tensors[i].arg);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  return p;
}

int tb_plan_kernel_count(const tb_plan *p) { return launch_plan_kernels(p->core); }

gpu_status tb_plan_run(const tb_plan *p, gpu_stream s) { return launch_plan_run(p->core, gpu_backend_get(), s); }

/* Appends the value on the top of the stack to the plan's reference table (user value 1) and
 * pops it; returns its index there. */
static int keep_ref(lua_State *L, int plan_idx) {
  lua_getiuservalue(L, plan_idx, 1);
  int n = (int)lua_rawlen(L, -1) + 1;
  lua_rotate(L, -2, 1);
  lua_rawseti(L, -2, n);
  lua_pop(L, 1);
  return n;
}

/* Reads field name of the step table at idx as up to 3 positive integers into v (missing = 1). */
static void read_dims(lua_State *L, int step_idx, int stepno, const char *name, unsigned v[3],
                      const lua_Integer limit[3]) {
  v[0] = v[1] = v[2] = 1;
  int t = lua_getfield(L, step_idx, name);
  int n = 1;
  lua_Integer d[3] = {1, 1, 1};
  if (t == LUA_TNUMBER) {
    int isint;
    d[0] = lua_tointegerx(L, -1, &isint);
    if (!isint) luaL_error(L, "plan step %d: %s must be integers", stepno, name);
  } else if (t == LUA_TTABLE) {
    n = (int)luaL_len(L, -1);
    if (n < 1 || n > 3) luaL_error(L, "plan step %d: %s needs 1 to 3 dimensions, got %d", stepno, name, n);
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, -1, i + 1);
      int isint;
      d[i] = lua_tointegerx(L, -1, &isint);
      if (!isint) luaL_error(L, "plan step %d: %s[%d] is not an integer", stepno, name, i + 1);
      lua_pop(L, 1);
    }
  } else {
    luaL_error(L, "plan step %d: %s is missing (a table {x [, y, z]})", stepno, name);
  }
  for (int i = 0; i < 3; i++) {
    if (d[i] < 1 || d[i] > limit[i])
      luaL_error(L, "plan step %d: %s[%d] = %I is outside 1..%I", stepno, name, i + 1, d[i], limit[i]);
    v[i] = (unsigned)d[i];
  }
  lua_pop(L, 1);
}

static void build_call_step(lua_State *L, tb_plan *p, int plan_idx, int step_idx, int stepno) {
  lua_getfield(L, step_idx, "call");
  int ud = lua_gettop(L);
  if (lua_type(L, ud) != LUA_TUSERDATA || !lua_getmetatable(L, ud))
    luaL_error(L, "plan step %d: call is a %s, not a library call object", stepno, luaL_typename(L, ud));
  lua_getfield(L, -1, "__tb_run");
  if (!lua_islightuserdata(L, -1))
    luaL_error(L, "plan step %d: call has no __tb_run in its metatable (not a library call object)", stepno);
  launch_plan_call_fn run = (launch_plan_call_fn)(uintptr_t)lua_touserdata(L, -1);
  char name[128];
  if (lua_getfield(L, -2, "__name") == LUA_TSTRING) snprintf(name, sizeof name, "%s", lua_tostring(L, -1));
  else snprintf(name, sizeof name, "library call");
  lua_pop(L, 3);
  tb_check_gpu(L, launch_plan_add_call(p->core, run, lua_touserdata(L, ud), name));
  keep_ref(L, plan_idx); /* pops the object: the plan keeps it alive */
}

/* Reads copy.<field> as an open tensor, registers it (refused at run time once closed). */
static tb_tensor *copy_tensor(lua_State *L, tb_plan *p, int plan_idx, int copy_idx, int stepno, const char *field,
                              int argno) {
  lua_getfield(L, copy_idx, field);
  tb_tensor *t = luaL_testudata(L, -1, TB_TENSOR_MT);
  if (t == NULL) luaL_error(L, "plan step %d: copy.%s is a %s, not a tensor", stepno, field, luaL_typename(L, -1));
  if (t->storage == NULL) luaL_error(L, "plan step %d: copy.%s: tensor is closed", stepno, field);
  p->tensors[p->ntensors].step = stepno;
  p->tensors[p->ntensors].arg = argno;
  p->tensors[p->ntensors++].uv_index = keep_ref(L, plan_idx); /* pops the tensor */
  return t;
}

static void build_copy_step(lua_State *L, tb_plan *p, int plan_idx, int step_idx, int stepno) {
  if (lua_getfield(L, step_idx, "copy") != LUA_TTABLE)
    luaL_error(L, "plan step %d: copy must be a table {dst = tensor, src = tensor [, bytes = n]}", stepno);
  int copy_idx = lua_gettop(L);
  tb_tensor *dst = copy_tensor(L, p, plan_idx, copy_idx, stepno, "dst", 1);
  tb_tensor *src = copy_tensor(L, p, plan_idx, copy_idx, stepno, "src", 2);
  size_t room = tb_tensor_nbytes(dst) < tb_tensor_nbytes(src) ? tb_tensor_nbytes(dst) : tb_tensor_nbytes(src);
  lua_Integer bytes = (lua_Integer)room;
  if (lua_getfield(L, copy_idx, "bytes") != LUA_TNIL) {
    int isint;
    bytes = lua_tointegerx(L, -1, &isint);
    if (!isint || bytes < 1 || (size_t)bytes > room)
      luaL_error(L, "plan step %d: copy.bytes must be an integer in 1..%I (the smaller tensor)", stepno,
                 (lua_Integer)room);
  }
  lua_pop(L, 1);
  if (bytes < 1) luaL_error(L, "plan step %d: copy of an empty tensor", stepno);
  tb_check_gpu(L, launch_plan_add_copy(p->core, tb_tensor_ptr(dst), tb_tensor_ptr(src), (size_t)bytes, "memcpy dtod"));
}

static void build_kernel_step(lua_State *L, tb_plan *p, int plan_idx, int step_idx, int stepno) {
  struct { unsigned grid[3], block[3], smem; } geometry, *st = &geometry;
  lua_getfield(L, step_idx, "fn");
  int fidx = lua_gettop(L);
  if (luaL_testudata(L, fidx, TB_FUNCTION_MT) == NULL)
    luaL_error(L, "plan step %d: fn is a %s, not a tb.function", stepno, luaL_typename(L, fidx));
  tb_function *f = tb_check_function(L, fidx);
  const gpu_device_props *props = tb_current_props(L);

  static const lua_Integer grid_limit[3] = {2147483647, 65535, 65535};
  static const lua_Integer block_limit[3] = {1024, 1024, 64};
  read_dims(L, step_idx, stepno, "grid", st->grid, grid_limit);
  read_dims(L, step_idx, stepno, "block", st->block, block_limit);
  long long threads = (long long)st->block[0] * st->block[1] * st->block[2];
  int max_threads = f->attrs.max_threads_per_block > 0 ? f->attrs.max_threads_per_block
                                                         : props->max_threads_per_block;
  if (max_threads > 0 && threads > max_threads)
    luaL_error(L, "plan step %d: block of %d threads exceeds kernel '%s''s limit of %d", stepno,
               (int)threads, f->name, max_threads);

  lua_Integer smem = 0;
  if (lua_getfield(L, step_idx, "smem") != LUA_TNIL) {
    int isint;
    smem = lua_tointegerx(L, -1, &isint);
    if (!isint || smem < 0) luaL_error(L, "plan step %d: smem must be a byte count >= 0", stepno);
  }
  lua_pop(L, 1);
  size_t limit = props->smem_per_block_optin ? props->smem_per_block_optin : props->smem_per_block;
  if (limit > 0 && (size_t)smem + (size_t)f->attrs.static_smem_bytes > limit)
    luaL_error(L, "plan step %d: smem %I bytes (+ %d static) exceeds the device's limit of %d bytes per block",
               stepno, smem, f->attrs.static_smem_bytes, (int)limit);
  st->smem = (unsigned)smem;

  int targs = lua_getfield(L, step_idx, "args");
  if (targs != LUA_TTABLE && targs != LUA_TNIL)
    luaL_error(L, "plan step %d: args must be a table", stepno);
  int aidx = lua_gettop(L);
  int n = targs == LUA_TNIL ? 0 : (int)luaL_len(L, aidx);
  if (n > TB_MAX_PARAMS) luaL_error(L, "plan step %d: %d arguments (at most %d)", stepno, n, TB_MAX_PARAMS);
  if (f->nsig >= 0 && n != f->nsig)
    luaL_error(L, "plan step %d: kernel '%s' declares %d arguments, %d given", stepno, f->name, f->nsig, n);
  if (f->attrs.num_params >= 0 && n != f->attrs.num_params)
    luaL_error(L, "plan step %d: kernel '%s' takes %d parameters (driver), %d given", stepno, f->name,
               f->attrs.num_params, n);

  unsigned char slots[TB_MAX_PARAMS * LAUNCH_PLAN_SLOT];
  memset(slots, 0, sizeof slots);

  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, aidx, i);
    int v = lua_gettop(L);
    scalar s;
    const char *declared = f->nsig >= 0 ? tb_arg_kind_names[f->sig[i - 1]] : NULL;
    tb_tensor *t = luaL_testudata(L, v, TB_TENSOR_MT);
    scalar *tagged;
    if (t != NULL) {
      if (t->storage == NULL) luaL_error(L, "plan step %d: argument %d: tensor is closed", stepno, i);
      if (declared && f->sig[i - 1] != TB_ARG_PTR)
        luaL_error(L, "plan step %d: argument %d is a tensor but kernel '%s' declares %s", stepno, i,
                   f->name, declared);
      s.kind = TB_ARG_PTR;
      s.v.u = tb_tensor_ptr(t);
      p->tensors[p->ntensors].step = stepno;
      p->tensors[p->ntensors].arg = i;
      lua_pushvalue(L, v);
      p->tensors[p->ntensors++].uv_index = keep_ref(L, plan_idx);
    } else if ((tagged = test_scalar(L, v)) != NULL) {
      if (declared && f->sig[i - 1] != tagged->kind)
        luaL_error(L, "plan step %d: argument %d is %s but kernel '%s' declares %s", stepno, i,
                   tb_arg_kind_names[tagged->kind], f->name, declared);
      s = *tagged;
    } else if (lua_type(L, v) == LUA_TNUMBER) {
      if (!declared)
        luaL_error(L, "plan step %d: argument %d is a plain number but kernel '%s' declares no "
                   "signature; give its width (tb.launch.i32(...), i64, f32, ...)", stepno, i, f->name);
      if (f->sig[i - 1] == TB_ARG_PTR)
        luaL_error(L, "plan step %d: argument %d is a number but kernel '%s' declares ptr", stepno, i,
                   f->name);
      const char *why = number_to_kind(L, v, f->sig[i - 1], &s);
      if (why)
        luaL_error(L, "plan step %d: argument %d (%s) is %s", stepno, i, luaL_tolstring(L, v, NULL), why);
    } else {
      luaL_error(L, "plan step %d: argument %d is a %s (a tensor or a tb.launch scalar expected)",
                 stepno, i, luaL_typename(L, v));
    }
    if (f->attrs.num_params >= 0 && f->attrs.param_size[i - 1] != (size_t)kind_size[s.kind])
      luaL_error(L, "plan step %d: argument %d is %s (%d bytes) but parameter %d of kernel '%s' takes %d bytes",
                 stepno, i, tb_arg_kind_names[s.kind], kind_size[s.kind], i, f->name,
                 (int)f->attrs.param_size[i - 1]);
    pack(&s, slots + LAUNCH_PLAN_SLOT * (i - 1));
    lua_settop(L, aidx);
  }
  tb_check_gpu(L, launch_plan_add_kernel(p->core, f->fn, f->name, st->grid, st->block, st->smem, slots, n));
  lua_settop(L, fidx);
  keep_ref(L, plan_idx); /* pops fn: the plan keeps the function (and its module) alive */
}

static int l_plan(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)luaL_len(L, 1);
  if (n < 1) return luaL_error(L, "bad argument #1 to 'plan' (a plan needs at least one step)");
  /* Created empty, then filled: an error half-way leaves a plan the collector frees cleanly. */
  tb_plan *p = lua_newuserdatauv(L, sizeof *p, 1);
  memset(p, 0, sizeof *p);
  int plan_idx = lua_gettop(L);
  lua_newtable(L);
  lua_setiuservalue(L, plan_idx, 1);
  luaL_setmetatable(L, TB_PLAN_MT);
  p->core = launch_plan_new(n);
  p->tensors = calloc((size_t)n * TB_MAX_PARAMS, sizeof *p->tensors);
  if (p->core == NULL || p->tensors == NULL) return luaL_error(L, "tb.launch.plan: out of host memory");
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    int step_idx = lua_gettop(L);
    if (!lua_istable(L, step_idx))
      return luaL_error(L, "plan step %d is a %s, not a table", i, luaL_typename(L, step_idx));
    int has_fn = lua_getfield(L, step_idx, "fn") != LUA_TNIL;
    int has_call = lua_getfield(L, step_idx, "call") != LUA_TNIL;
    int has_copy = lua_getfield(L, step_idx, "copy") != LUA_TNIL;
    lua_pop(L, 3);
    if (has_fn + has_call + has_copy != 1)
      return luaL_error(L, "plan step %d needs exactly one of fn (a kernel), call (a library call) or copy", i);
    /* A step enters the plan whole or not at all, so a raise leaves a plan release frees. */
    if (has_call) build_call_step(L, p, plan_idx, step_idx, i);
    else if (has_copy) build_copy_step(L, p, plan_idx, step_idx, i);
    else build_kernel_step(L, p, plan_idx, step_idx, i);
    lua_settop(L, plan_idx);
  }
  return 1;
}

static int plan_run(lua_State *L) {
  tb_plan *p = tb_check_plan(L, 1);
  int sync = lua_isnoneornil(L, 2) ? 1 : lua_toboolean(L, 2);
  double timeout_s = luaL_optnumber(L, 3, 0);
  tb_gpu(L);
  tb_check_gpu(L, tb_plan_run(p, tb_stream()));
  if (sync) tb_stream_sync(L, timeout_s, "plan:run");
  return 0;
}

static int plan_steps(lua_State *L) {
  lua_pushinteger(L, launch_plan_steps(tb_check_plan(L, 1)->core));
  return 1;
}

static int plan_kernels(lua_State *L) {
  lua_pushinteger(L, launch_plan_kernels(tb_check_plan(L, 1)->core));
  return 1;
}

static void push_dims(lua_State *L, const unsigned v[3]) {
  lua_createtable(L, 3, 0);
  for (int i = 0; i < 3; i++) {
    lua_pushinteger(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

static int plan_describe(lua_State *L) {
  tb_plan *p = tb_check_plan(L, 1);
  int nsteps = launch_plan_steps(p->core);
  lua_createtable(L, nsteps, 0);
  for (int i = 0; i < nsteps; i++) {
    launch_plan_step_info info, *st = &info;
    launch_plan_step(p->core, i, st);
    lua_createtable(L, 0, 6);
    lua_pushstring(L, st->copy ? "copy" : st->native ? "call" : "kernel");
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, st->name);
    lua_setfield(L, -2, "name");
    if (st->copy) {
      lua_pushinteger(L, (lua_Integer)st->copy_bytes);
      lua_setfield(L, -2, "bytes");
    }
    if (!st->native) {
      push_dims(L, st->grid);
      lua_setfield(L, -2, "grid");
      push_dims(L, st->block);
      lua_setfield(L, -2, "block");
      lua_pushinteger(L, st->smem);
      lua_setfield(L, -2, "smem");
      lua_pushinteger(L, st->nargs);
      lua_setfield(L, -2, "nargs");
    }
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int plan_tostring(lua_State *L) {
  tb_plan *p = luaL_checkudata(L, 1, TB_PLAN_MT);
  if (p->released) {
    lua_pushliteral(L, "tb.plan (closed)");
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int nsteps = launch_plan_steps(p->core);
  lua_pushfstring(L, "tb.plan (%d step%s:", nsteps, nsteps == 1 ? "" : "s");
  luaL_addvalue(&b);
  for (int i = 0; i < nsteps; i++) {
    launch_plan_step_info info, *st = &info;
    launch_plan_step(p->core, i, st);
    if (st->native) lua_pushfstring(L, " %s%s", st->name, i + 1 < nsteps ? "," : "");
    else lua_pushfstring(L, " %s<<<(%d,%d,%d),(%d,%d,%d),%d>>>%s", st->name, (int)st->grid[0],
                         (int)st->grid[1], (int)st->grid[2], (int)st->block[0], (int)st->block[1],
                         (int)st->block[2], (int)st->smem, i + 1 < nsteps ? "," : "");
    luaL_addvalue(&b);
  }
  luaL_addchar(&b, ')');
  luaL_pushresult(&b);
  return 1;
}

/* ---- TMA tensor maps ---------------------------------------------------------------------- */

/* Reads the integer list t[field] (1..max entries, each in [lo, hi]) into out; returns its length. */
static int int_list(lua_State *L, int t, const char *field, int max, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (lua_getfield(L, t, field) != LUA_TTABLE) luaL_error(L, "tensormap: %s must be a list of integers", field);
  int n = (int)luaL_len(L, -1);
  if (n > max) luaL_error(L, "tensormap: %s has %d entries (at most %d)", field, n, max);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    int isint;
    lua_Integer v = lua_tointegerx(L, -1, &isint);
    if (!isint || v < 0 || (uint64_t)v < lo || (uint64_t)v > hi)
      luaL_error(L, "tensormap: %s[%d] must be an integer in [%I, %I]", field, i, (lua_Integer)lo, (lua_Integer)hi);
    out[i - 1] = (uint64_t)v;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return n;
}

static int l_tensormap(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  gpu_tensormap_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.elem_bytes = tb_dtypes[t->dtype].size;
  sp.address = tb_tensor_ptr(t);
  uint64_t box[5];
  sp.rank = int_list(L, 2, "dims", 5, 1, (uint64_t)1 << 32, sp.dims);
  if (sp.rank < 1) luaL_error(L, "tensormap: dims is empty");
  int nstr = int_list(L, 2, "strides", 4, 16, ((uint64_t)1 << 40) - 1, sp.strides);
  int nbox = int_list(L, 2, "box", 5, 1, 256, box);
  if (nstr != sp.rank - 1) luaL_error(L, "tensormap: %d dims need %d strides, %d given", sp.rank, sp.rank - 1, nstr);
  if (nbox != sp.rank) luaL_error(L, "tensormap: %d dims need %d box sizes, %d given", sp.rank, sp.rank, nbox);
  for (int i = 0; i < sp.rank; i++) sp.box[i] = (uint32_t)box[i];
  lua_getfield(L, 2, "swizzle");
  sp.swizzle = lua_isnil(L, -1) ? 0 : (int)luaL_checkinteger(L, -1);
  lua_pop(L, 1);
  if (sp.swizzle != 0 && sp.swizzle != 32 && sp.swizzle != 64 && sp.swizzle != 128)
    luaL_error(L, "tensormap: swizzle of %d bytes (0, 32, 64 or 128)", sp.swizzle);
  if (sp.address % 16 != 0) luaL_error(L, "tensormap: the tensor's address is not 16-byte aligned");
  for (int i = 0; i < sp.rank - 1; i++)
    if (sp.strides[i] % 16 != 0) luaL_error(L, "tensormap: strides[%d] = %I is not a multiple of 16 bytes", i + 1,
                                            (lua_Integer)sp.strides[i]);
  if (sp.swizzle > 0 && sp.box[0] * (uint64_t)sp.elem_bytes > (uint64_t)sp.swizzle)
    luaL_error(L, "tensormap: the inner box (%d x %d bytes) exceeds the %d-byte swizzle", (int)sp.box[0],
               sp.elem_bytes, sp.swizzle);
  /* the last element the map can address must lie inside the tensor */
  uint64_t last = sp.dims[0] * (uint64_t)sp.elem_bytes;
  for (int i = 1; i < sp.rank; i++) last += (sp.dims[i] - 1) * sp.strides[i - 1];
  if (last > tb_tensor_nbytes(t))
    luaL_error(L, "tensormap: dims and strides reach %I bytes but the tensor has %I", (lua_Integer)last,
               (lua_Integer)tb_tensor_nbytes(t));
  _Alignas(64) unsigned char map[GPU_TENSORMAP_BYTES];
  tb_check_gpu(L, tb_gpu(L)->tensormap_encode(map, &sp));
  lua_pushlstring(L, (const char *)map, sizeof map);
  return 1;
}

/* plan.note, else the methods (upvalue 1). */
static int plan_index(lua_State *L) {
  luaL_checkudata(L, 1, TB_PLAN_MT);
  const char *key = lua_tostring(L, 2);
  if (key && strcmp(key, "note") == 0) {
    lua_getiuservalue(L, 1, 1);
    lua_getfield(L, -1, "note");
    return 1;
  }
  lua_pushvalue(L, 2);
  lua_gettable(L, lua_upvalueindex(1));
  return 1;
}

static int plan_newindex(lua_State *L) {
  luaL_checkudata(L, 1, TB_PLAN_MT);
  const char *key = lua_tostring(L, 2);
  if (!key || strcmp(key, "note") != 0)
    return luaL_error(L, "tb.launch plan: only 'note' can be set (got %s)", key ? key : luaL_typename(L, 2));
  if (!lua_isnil(L, 3) && lua_type(L, 3) != LUA_TSTRING)
    return luaL_error(L, "tb.launch plan: note must be a string or nil (got %s)", luaL_typename(L, 3));
  lua_getiuservalue(L, 1, 1);
  lua_pushvalue(L, 3);
  lua_setfield(L, -2, "note");
  return 0;
}

static const luaL_Reg plan_methods[] = {
  {"run", plan_run}, {"steps", plan_steps}, {"kernels", plan_kernels}, {"describe", plan_describe},
  {"close", plan_gc}, {NULL, NULL}};

static const luaL_Reg plan_meta[] = {
  {"__gc", plan_gc}, {"__close", plan_gc}, {"__tostring", plan_tostring}, {NULL, NULL}};

static const luaL_Reg functions[] = {
  {"i32", l_i32}, {"i64", l_i64}, {"u32", l_u32}, {"u64", l_u64}, {"f32", l_f32}, {"f64", l_f64},
  {"value", l_value}, {"plan", l_plan}, {"tensormap", l_tensormap}, {NULL, NULL}};

int luaopen_tb_launch(lua_State *L);
int luaopen_tb_launch(lua_State *L) {
  if (luaL_newmetatable(L, TB_PLAN_MT)) {
    luaL_setfuncs(L, plan_meta, 0);
    luaL_newlib(L, plan_methods);
    lua_pushcclosure(L, plan_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, plan_newindex);
    lua_setfield(L, -2, "__newindex");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, TB_SCALAR_MT)) {
    lua_pushcfunction(L, scalar_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_pop(L, 1);
  luaL_newlib(L, functions);
  return 1;
}
