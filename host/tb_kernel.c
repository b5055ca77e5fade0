/* tb_kernel.c: the tb.kernel module: load compiled kernels (cubin, fatbin, PTX), compile CUDA C with
 * NVRTC (cached on disk), and look up kernel functions with an optional argument signature.
 *
 *   tb.kernel.load(path)              -> module      a .cubin/.fatbin/.ptx file
 *   tb.kernel.load_image(string)      -> module      the same, from memory
 *   tb.kernel.compile(source [, opts]) -> module | nil, message, "compile"
 *       opts = { name = "kernel.cu", defines = {K = V, FLAG = true}, options = {"-O3", ...},
 *                headers = {["x.cuh"] = text}, arch = "sm_90a", load = true }
 *       defines become -DK=V (true: -DK; false: left out), sorted so the cache key is stable.
 *       load = false only compiles (no GPU needed) and returns
 *       { size =, from_cache =, key =, log =, arch = }.
 *   tb.kernel.cache_read(name)        -> string | nil   an entry "<sha256 hex>.<ext>" of the compile
 *                                                    cache another compiler fills (Triton), checked
 *                                                    against its .sum like NVRTC's; nil: a miss
 *   tb.kernel.cache_write(name, data) writes it atomically with its .sum (raises on failure)
 *   tb.kernel.cache_dir()             -> the cache directory (rtc_cache_dir)
 *   tb.kernel.sha256(data)            -> 64 lowercase hex digits
 *   tb.kernel.host_source(file)       -> text | nil   host/kernels/<file> as embedded in this binary
 *                                                    (the one copy the host's kernels compile from)
 *   tb.kernel.compile_host(arch)      -> compiled, cached   compiles (no GPU, not loaded) every
 *                                                    host kernel source for arch into the cache
 *   module:get(name [, signature])    -> function    signature: {"ptr", "i64", ...} (kinds:
 *                                                    ptr i32 i64 u32 u64 f32 f64), checked against
 *                                                    the driver's parameter sizes when it can tell
 *   module:close()                    unloads (also __gc, __close); functions then raise
 *   fn:name()                         -> the kernel's name
 *   fn:attributes()                   -> { num_regs, static_smem_bytes, local_bytes, const_bytes,
 *                                          max_threads_per_block, max_dynamic_smem_bytes,
 *                                          ptx_version, binary_version, num_params,
 *                                          param_sizes = {...} } (num_params: nil if unknown)
 *   fn:signature()                    -> { kind, ... } or nil when none was declared
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/sha256.h"
#include "host_kernels.h"
#include "tb.h"

#define MODULE_MT "tb.module"

typedef struct tb_module {
  gpu_module *module; /* NULL once closed */
  char origin[256];   /* path, program name or "<image>", for messages */
} tb_module;

static tb_module *check_module(lua_State *L, int idx) {
  tb_module *m = luaL_checkudata(L, idx, MODULE_MT);
  if (m->module == NULL) luaL_error(L, "module %s is closed", m->origin);
  return m;
}

/* Shared by close(), __gc and __close: safe to run twice. */
static gpu_status release_module(tb_module *m) {
  if (m->module == NULL) return GPU_OK;
  gpu_module *mod = m->module;
  m->module = NULL;
  return gpu_backend_get()->module_unload(mod);
}

/* An empty, closed module userdata on the stack; filled once the load succeeds. */
static tb_module *new_module(lua_State *L, const char *origin) {
  tb_module *m = lua_newuserdatauv(L, sizeof *m, 0);
  m->module = NULL;
  snprintf(m->origin, sizeof m->origin, "%s", origin);
  luaL_setmetatable(L, MODULE_MT);
  return m;
}

static int l_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  const gpu_backend *b = tb_gpu(L);
  tb_module *m = new_module(L, path);
  tb_check_gpu(L, b->module_load_file(&m->module, path));
  return 1;
}

static int l_load_image(lua_State *L) {
  size_t size = 0;
  const char *image = luaL_checklstring(L, 1, &size);
  luaL_argcheck(L, size > 0, 1, "empty image");
  const gpu_backend *b = tb_gpu(L);
  tb_module *m = new_module(L, "<image>");
  tb_check_gpu(L, b->module_load_image(&m->module, image, size));
  return 1;
}

/* ---- compile ------------------------------------------------------------------------------- */

/* Pushes the keys of table idx (all strings) as a sorted array: Lua's table order varies from run
 * to run, and the options' order is part of the cache key. */
static void push_sorted_keys(lua_State *L, int idx, const char *what) {
  idx = lua_absindex(L, idx);
  lua_newtable(L);
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "bad argument #2 to 'compile' (opts.%s keys must be strings, not %s)", what,
                 luaL_typename(L, -1));
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, ++n);
  }
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_pushvalue(L, -3);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
}

/* What rtc_compile gets. Every string it points to is anchored in a Lua table on the stack. */
typedef struct compile_request {
  const char *name, *arch;
  int load;
  const char *options[512];
  int n_options;
  rtc_header headers[128];
  int n_headers;
} compile_request;

/* Anchors the string on top of the stack in table `anchor`, pops it, and returns it. */
static const char *anchored(lua_State *L, int anchor) {
  const char *s = lua_tostring(L, -1);
  lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
  return s;
}

static void add_option(lua_State *L, int anchor, compile_request *req) {
  if (req->n_options == (int)(sizeof req->options / sizeof req->options[0]))
    luaL_error(L, "bad argument #2 to 'compile' (too many options)");
  req->options[req->n_options++] = anchored(L, anchor);
}

/* opts.defines {K = V} -> -DK=V in key order; true -> -DK; false -> nothing. */
static void read_defines(lua_State *L, int opts, int anchor, compile_request *req) {
  int top = lua_gettop(L);
  if (lua_getfield(L, opts, "defines") != LUA_TNIL) {
    luaL_argexpected(L, lua_istable(L, -1), 2, "table for opts.defines");
    int defines = lua_gettop(L);
    push_sorted_keys(L, defines, "defines");
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, defines + 1, i);
      const char *key = lua_tostring(L, -1);
      lua_pushvalue(L, -1);
      int t = lua_gettable(L, defines); /* key, value */
      if (t == LUA_TBOOLEAN) {
        if (lua_toboolean(L, -1)) {
          lua_pushfstring(L, "-D%s", key);
          add_option(L, anchor, req);
        }
      } else if (t == LUA_TNUMBER && lua_isinteger(L, -1)) {
        lua_pushfstring(L, "-D%s=%I", key, (LUAI_UACINT)lua_tointeger(L, -1));
        add_option(L, anchor, req);
      } else if (t == LUA_TNUMBER) {
        char text[64];
        snprintf(text, sizeof text, "%.17g", lua_tonumber(L, -1)); /* every bit of the double */
        lua_pushfstring(L, "-D%s=%s", key, text);
        add_option(L, anchor, req);
      } else if (t == LUA_TSTRING) {
        lua_pushfstring(L, "-D%s=%s", key, lua_tostring(L, -1));
        add_option(L, anchor, req);
      } else {
        luaL_error(L, "bad argument #2 to 'compile' (define '%s' is a %s; use a number, string or boolean)",
                   key, lua_typename(L, t));
      }
      lua_pop(L, 2);
    }
  }
  lua_settop(L, top);
}

static void read_options(lua_State *L, int opts, int anchor, compile_request *req) {
  int top = lua_gettop(L);
  if (lua_getfield(L, opts, "options") != LUA_TNIL) {
    luaL_argexpected(L, lua_istable(L, -1), 2, "table for opts.options");
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_rawgeti(L, top + 1, i) != LUA_TSTRING)
        luaL_error(L, "bad argument #2 to 'compile' (opts.options[%d] is a %s, not a string)", (int)i,
                   luaL_typename(L, -1));
      add_option(L, anchor, req);
    }
  }
  lua_settop(L, top);
}

static void read_headers(lua_State *L, int opts, int anchor, compile_request *req) {
  int top = lua_gettop(L);
  if (lua_getfield(L, opts, "headers") != LUA_TNIL) {
    luaL_argexpected(L, lua_istable(L, -1), 2, "table for opts.headers");
    int headers = lua_gettop(L);
    push_sorted_keys(L, headers, "headers");
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if (n > (lua_Integer)(sizeof req->headers / sizeof req->headers[0]))
      luaL_error(L, "bad argument #2 to 'compile' (more than %d headers)", (int)(sizeof req->headers /
                                                                                 sizeof req->headers[0]));
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, headers + 1, i);
      lua_pushvalue(L, -1);
      if (lua_gettable(L, headers) != LUA_TSTRING)
        luaL_error(L, "bad argument #2 to 'compile' (header '%s' must be a string of source text)",
                   lua_tostring(L, -2));
      const char *text = anchored(L, anchor);
      const char *name = anchored(L, anchor);
      req->headers[req->n_headers++] = (rtc_header){name, text};
    }
  }
  lua_settop(L, top);
}

static const char *const compile_opts[] = {"name", "defines", "options", "headers", "arch", "load", NULL};

static void check_opts_keys(lua_State *L, int opts) {
  lua_pushnil(L);
  while (lua_next(L, opts)) {
    lua_pop(L, 1);
    const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int known = 0;
    for (int i = 0; key && compile_opts[i]; i++) known |= strcmp(key, compile_opts[i]) == 0;
    if (!known)
      luaL_argerror(L, 2, lua_pushfstring(L, "unknown option '%s' (expected name, defines, options, headers, "
                                          "arch or load)", key ? key : luaL_typename(L, -1)));
  }
}

static int l_compile(lua_State *L) {
  const char *source = luaL_checkstring(L, 1);
  lua_settop(L, 2);
  lua_newtable(L); /* 3: anchors every string the request points to */
  compile_request *req = lua_newuserdatauv(L, sizeof *req, 0); /* 4 */
  memset(req, 0, sizeof *req);
  req->name = "kernel.cu";
  req->load = 1;
  if (!lua_isnil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    check_opts_keys(L, 2);
    if (lua_getfield(L, 2, "name") != LUA_TNIL) {
      luaL_argexpected(L, lua_type(L, -1) == LUA_TSTRING, 2, "string for opts.name");
      req->name = anchored(L, 3);
    } else lua_pop(L, 1);
    if (lua_getfield(L, 2, "arch") != LUA_TNIL) {
      luaL_argexpected(L, lua_type(L, -1) == LUA_TSTRING, 2, "string for opts.arch");
      req->arch = anchored(L, 3);
    } else lua_pop(L, 1);
    if (lua_getfield(L, 2, "load") != LUA_TNIL) req->load = lua_toboolean(L, -1);
    lua_pop(L, 1);
    read_defines(L, 2, 3, req);
    read_options(L, 2, 3, req);
    read_headers(L, 2, 3, req);
  }
  const gpu_backend *b = NULL;
  tb_module *m = NULL;
  if (req->load) {
    b = tb_gpu(L);
    if (req->arch == NULL) req->arch = tb_current_props(L)->arch;
    m = new_module(L, req->name); /* 5: created before compiling, so no raise can leak the image */
  }

  rtc_result r;
  gpu_status st = rtc_compile(source, req->name, req->headers, req->n_headers, req->options, req->n_options,
                              req->arch, &r);
  if (st == GPU_ERR_COMPILE) {
    /* A kernel that does not compile is data for the campaign: its status gets the whole log. */
    const char *message = gpu_last_error();
    const char *nl = strchr(message, '\n');
    lua_pushnil(L);
    if (r.log && nl) {
      lua_pushlstring(L, message, (size_t)(nl - message));
      lua_pushfstring(L, "%s\n%s", lua_tostring(L, -1), r.log);
      lua_remove(L, -2);
    } else {
      lua_pushstring(L, message);
    }
    rtc_result_free(&r);
    lua_pushliteral(L, "compile");
    return 3;
  }
  if (st != GPU_OK) {
    rtc_result_free(&r);
    tb_check_gpu(L, st);
  }
  if (!req->load) {
    lua_createtable(L, 0, 5);
    lua_pushinteger(L, (lua_Integer)r.size);
    lua_setfield(L, -2, "size");
    lua_pushboolean(L, r.from_cache);
    lua_setfield(L, -2, "from_cache");
    lua_pushstring(L, r.key);
    lua_setfield(L, -2, "key");
    lua_pushstring(L, r.log ? r.log : "");
    lua_setfield(L, -2, "log");
    rtc_result_free(&r);
    if (req->arch) lua_pushstring(L, req->arch);
    else lua_pushnil(L);
    lua_setfield(L, -2, "arch");
    return 1;
  }
  st = b->module_load_image(&m->module, r.image, r.size);
  rtc_result_free(&r);
  tb_check_gpu(L, st);
  return 1;
}

/* ---- functions ----------------------------------------------------------------------------- */

static const int kind_bytes[TB_NARG_KINDS] = {
  [TB_ARG_PTR] = 8, [TB_ARG_I32] = 4, [TB_ARG_I64] = 8, [TB_ARG_U32] = 4,
  [TB_ARG_U64] = 8, [TB_ARG_F32] = 4, [TB_ARG_F64] = 8,
};

tb_function *tb_check_function(lua_State *L, int idx) {
  tb_function *f = luaL_checkudata(L, idx, TB_FUNCTION_MT);
  lua_getiuservalue(L, idx, 1);
  tb_module *m = lua_touserdata(L, -1);
  lua_pop(L, 1); /* the function's user value keeps the module alive */
  if (m == NULL || m->module == NULL) luaL_error(L, "function '%s': its module is closed", f->name);
  return f;
}

/* Reads a signature array at idx into f; raises on an unknown kind. */
static void read_signature(lua_State *L, int idx, tb_function *f) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  luaL_argcheck(L, n <= TB_MAX_PARAMS, idx, "more than 64 parameters");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    const char *kind = lua_tostring(L, -1);
    int k = -1;
    for (int j = 0; kind && j < TB_NARG_KINDS; j++)
      if (strcmp(kind, tb_arg_kind_names[j]) == 0) k = j;
    if (k < 0)
      luaL_argerror(L, idx, lua_pushfstring(L, "invalid argument kind '%s' at position %d (expected ptr, i32, "
                                            "i64, u32, u64, f32 or f64)", kind ? kind : luaL_typename(L, -1),
                                            (int)i));
    f->sig[i - 1] = (tb_arg_kind)k;
    lua_pop(L, 1);
  }
  f->nsig = (int)n;
}

/* The driver knows each parameter's size (CUDA 12.4+): a signature that disagrees would launch
 * with misplaced arguments, so it is refused here rather than discovered as garbage later. */
static void check_signature(lua_State *L, const tb_function *f, const char *origin) {
  if (f->nsig < 0 || f->attrs.num_params < 0) return;
  if (f->attrs.num_params != f->nsig)
    luaL_error(L, "kernel '%s' in module %s takes %d parameter%s; the signature declares %d", f->name, origin,
               f->attrs.num_params, f->attrs.num_params == 1 ? "" : "s", f->nsig);
  for (int i = 0; i < f->nsig && i < TB_MAX_PARAMS; i++)
    if (f->attrs.param_size[i] != (size_t)kind_bytes[f->sig[i]])
      luaL_error(L, "kernel '%s' in module %s: parameter %d is %d bytes, the signature says '%s' (%d bytes)",
                 f->name, origin, i + 1, (int)f->attrs.param_size[i], tb_arg_kind_names[f->sig[i]],
                 kind_bytes[f->sig[i]]);
}

static int l_module_get(lua_State *L) {
  tb_module *m = check_module(L, 1);
  const char *name = luaL_checkstring(L, 2);
  lua_settop(L, 3); /* the signature (or nil) at 3, the new function at 4 */
  luaL_argcheck(L, strlen(name) < sizeof ((tb_function *)0)->name, 2, "kernel name too long");
  tb_function *f = lua_newuserdatauv(L, sizeof *f, 1);
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->nsig = -1;
  luaL_setmetatable(L, TB_FUNCTION_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  if (!lua_isnoneornil(L, 3)) read_signature(L, 3, f);

  const gpu_backend *b = gpu_backend_get();
  gpu_status st = b->function_get(&f->fn, m->module, name);
  if (st == GPU_ERR_INVALID)
    return tb_raise(L, st, gpu_last_error_api(), "kernel '%s' not found in module %s: %s", name, m->origin,
                    gpu_last_error());
  tb_check_gpu(L, st);
  tb_check_gpu(L, b->function_attrs(f->fn, &f->attrs));
  check_signature(L, f, m->origin);
  return 1;
}

static int l_module_close(lua_State *L) {
  tb_module *m = luaL_checkudata(L, 1, MODULE_MT);
  tb_check_gpu(L, release_module(m));
  return 0;
}

static int l_module_gc(lua_State *L) {
  release_module(luaL_checkudata(L, 1, MODULE_MT)); /* nobody to tell at collection time */
  return 0;
}

static int l_module_tostring(lua_State *L) {
  tb_module *m = luaL_checkudata(L, 1, MODULE_MT);
  lua_pushfstring(L, "tb.module (%s%s)", m->origin, m->module ? "" : ", closed");
  return 1;
}

static int l_function_name(lua_State *L) {
  lua_pushstring(L, tb_check_function(L, 1)->name);
  return 1;
}

static const struct attr_field {
  const char *name;
  size_t offset;
} attr_fields[] = {
  {"num_regs", offsetof(gpu_function_attrs, num_regs)},
  {"static_smem_bytes", offsetof(gpu_function_attrs, static_smem_bytes)},
  {"local_bytes", offsetof(gpu_function_attrs, local_bytes)},
  {"const_bytes", offsetof(gpu_function_attrs, const_bytes)},
  {"max_threads_per_block", offsetof(gpu_function_attrs, max_threads_per_block)},
  {"max_dynamic_smem_bytes", offsetof(gpu_function_attrs, max_dynamic_smem_bytes)},
  {"ptx_version", offsetof(gpu_function_attrs, ptx_version)},
  {"binary_version", offsetof(gpu_function_attrs, binary_version)},
};

static int l_function_attributes(lua_State *L) {
  tb_function *f = tb_check_function(L, 1);
  /* Asked again: the dynamic shared-memory limit changes when a launch raises it. */
  tb_check_gpu(L, gpu_backend_get()->function_attrs(f->fn, &f->attrs));
  lua_createtable(L, 0, 10);
  for (size_t i = 0; i < sizeof attr_fields / sizeof attr_fields[0]; i++) {
    lua_pushinteger(L, *(const int *)((const char *)&f->attrs + attr_fields[i].offset));
    lua_setfield(L, -2, attr_fields[i].name);
  }
  if (f->attrs.num_params >= 0) {
    lua_pushinteger(L, f->attrs.num_params);
    lua_setfield(L, -2, "num_params");
    int n = f->attrs.num_params < TB_MAX_PARAMS ? f->attrs.num_params : TB_MAX_PARAMS;
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
      lua_pushinteger(L, (lua_Integer)f->attrs.param_size[i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "param_sizes");
  }
  return 1;
}

static int l_function_signature(lua_State *L) {
  tb_function *f = luaL_checkudata(L, 1, TB_FUNCTION_MT);
  if (f->nsig < 0) return 0;
  lua_createtable(L, f->nsig, 0);
  for (int i = 0; i < f->nsig; i++) {
    lua_pushstring(L, tb_arg_kind_names[f->sig[i]]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int l_function_tostring(lua_State *L) {
  tb_function *f = luaL_checkudata(L, 1, TB_FUNCTION_MT);
  lua_pushfstring(L, "tb.function '%s'", f->name);
  return 1;
}

static int l_host_source(lua_State *L) {
  size_t size = 0;
  const char *text = tb_embedded_source(luaL_checkstring(L, 1), &size);
  if (text == NULL) return 0;
  lua_pushlstring(L, text, size);
  return 1;
}

static int l_compile_host(lua_State *L) {
  int compiled = 0, cached = 0;
  tb_check_gpu(L, host_kernels_compile(luaL_checkstring(L, 1), &compiled, &cached));
  lua_pushinteger(L, compiled);
  lua_pushinteger(L, cached);
  return 2;
}

static int l_cache_read(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  char *data = NULL;
  size_t size = 0;
  tb_check_gpu(L, rtc_cache_read(name, &data, &size));
  if (data == NULL) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushlstring(L, data, size);
  free(data);
  return 1;
}

static int l_cache_write(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  size_t size;
  const char *data = luaL_checklstring(L, 2, &size);
  tb_check_gpu(L, rtc_cache_write(name, data, size));
  return 0;
}

static int l_cache_dir(lua_State *L) {
  lua_pushstring(L, rtc_cache_dir());
  return 1;
}

static int l_sha256(lua_State *L) {
  size_t len;
  const char *data = luaL_checklstring(L, 1, &len);
  sha256 h;
  char hex[65];
  sha256_init(&h);
  sha256_update(&h, data, len);
  sha256_hex(&h, hex);
  lua_pushstring(L, hex);
  return 1;
}

static const luaL_Reg kernel_functions[] = {
  {"cache_read", l_cache_read},
  {"cache_write", l_cache_write},
  {"cache_dir", l_cache_dir},
  {"sha256", l_sha256},
  {"host_source", l_host_source},
  {"compile_host", l_compile_host},
  {"load", l_load},
  {"load_image", l_load_image},
  {"compile", l_compile},
  {NULL, NULL},
};

static const luaL_Reg module_methods[] = {
  {"get", l_module_get},
  {"close", l_module_close},
  {NULL, NULL},
};

static const luaL_Reg module_meta[] = {
  {"__gc", l_module_gc},
  {"__close", l_module_gc},
  {"__tostring", l_module_tostring},
  {NULL, NULL},
};

static const luaL_Reg function_methods[] = {
  {"name", l_function_name},
  {"attributes", l_function_attributes},
  {"signature", l_function_signature},
  {NULL, NULL},
};

static const luaL_Reg function_meta[] = {
  {"__tostring", l_function_tostring},
  {NULL, NULL},
};

static void new_class(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods) {
  luaL_newmetatable(L, name);
  luaL_setfuncs(L, meta, 0);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

int luaopen_tb_kernel(lua_State *L);
int luaopen_tb_kernel(lua_State *L) {
  new_class(L, MODULE_MT, module_meta, module_methods);
  new_class(L, TB_FUNCTION_MT, function_meta, function_methods);
  luaL_newlib(L, kernel_functions);
  return 1;
}
