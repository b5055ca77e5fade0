/* tb_common.c: what the tb.* modules share and no single module owns: the process's device,
 * context and stream, and the Lua face of the host's own kernels (host_kernels.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_kernels.h"
#include "tb.h"

const char *const tb_arg_kind_names[TB_NARG_KINDS] = {
  [TB_ARG_PTR] = "ptr", [TB_ARG_I32] = "i32", [TB_ARG_I64] = "i64", [TB_ARG_U32] = "u32",
  [TB_ARG_U64] = "u64", [TB_ARG_F32] = "f32", [TB_ARG_F64] = "f64",
};

/* Registry field where tb.device.select() leaves the ordinal tb_gpu() will use (tb_device.c). */
#define SELECTED_DEVICE_KEY "tb.device.selected"

/* ---- the process's device and stream ------------------------------------------------------- */

static int gpu_ready;
static gpu_device_props current_props;
static gpu_stream process_stream;

const gpu_backend *tb_gpu(lua_State *L) {
  const gpu_backend *b = gpu_backend_get();
  if (gpu_ready) return b;
  tb_check_gpu(L, b->init());
  int dev = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, SELECTED_DEVICE_KEY) == LUA_TNUMBER) dev = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  tb_check_gpu(L, b->set_device(dev));
  tb_check_gpu(L, b->device_props(dev, &current_props));
  if (process_stream == NULL) tb_check_gpu(L, b->stream_create(&process_stream));
  gpu_ready = 1;
  return b;
}

const gpu_device_props *tb_current_props(lua_State *L) {
  tb_gpu(L);
  return &current_props;
}

gpu_stream tb_stream(void) { return process_stream; }

int tb_sync_timeout_env(double *seconds) {
  const char *env = getenv("TILEBENCH_SYNC_TIMEOUT");
  *seconds = 300;
  if (env == NULL || *env == '\0') return 0;
  char *end = NULL;
  double v = strtod(env, &end);
  if (!(v > 0) || end == env || *end != '\0') return -1;
  *seconds = v;
  return 0;
}

double tb_sync_timeout_s(void) {
  double v;
  tb_sync_timeout_env(&v); /* a bad value was refused at start-up (main.c) */
  return v;
}

void tb_stream_sync(lua_State *L, double timeout_s, const char *what) {
  const gpu_backend *b = tb_gpu(L);
  if (timeout_s <= 0) timeout_s = tb_sync_timeout_s();
  gpu_status st = b->stream_wait_timeout(tb_stream(), timeout_s * 1e3);
  if (st == GPU_ERR_TIMEOUT)
    tb_raise(L, st, gpu_last_error_api(), "timeout: %s: %s (a hung kernel? the limit is %g s: TILEBENCH_SYNC_TIMEOUT)",
             what, gpu_last_error(), timeout_s);
  if (st != GPU_OK) tb_raise(L, st, gpu_last_error_api(), "%s: %s", what, gpu_last_error());
}

/* ---- the host's own kernels (host_kernels.c) --------------------------------------------- */

const char *tb_embedded_source(const char *name, size_t *size) { return host_kernel_source(name, size); }

gpu_function *tb_host_kernel(lua_State *L, const char *file, const char *kernel) {
  const gpu_backend *b = tb_gpu(L);
  gpu_function *f = NULL;
  tb_check_gpu(L, host_kernel(b, current_props.arch, file, kernel, &f));
  return f;
}
