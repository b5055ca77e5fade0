/* tb.h: what the tb_*.c Lua modules share: dtypes, the tensor userdata, the GPU-status-to-Lua
 * error bridge and the host's own kernels. Only these modules include it; host/gpu/ never does. */
#ifndef TB_H
#define TB_H

#include <stddef.h>
#include <stdint.h>

#include "lauxlib.h"
#include "lua.h"
#include "gpu/gpu.h"

/* ---- dtypes (tb_dtype.c) -------------------------------------------------------------------
 * The one table of dtypes: every other layer (tb.tensor, tb.blas, and in Lua tb.dtype, read by
 * util.lua, context.lua, config.lua and the operators) takes names, C types and sizes from it.
 * The dtypes after TB_NDEVICE_DTYPES are names tilebench knows (config.yaml, TileBench's CSVs)
 * but cannot hold in a tensor: tb_check_dtype refuses them. */
typedef enum tb_dtype {
  TB_FP32 = 0, TB_FP16, TB_BF16, TB_FP8_E4M3, TB_INT8, TB_UINT8, TB_INT32, TB_INT64,
  TB_NDEVICE_DTYPES,
  TB_FP8_E5M2 = TB_NDEVICE_DTYPES, TB_INT16,
  TB_NDTYPES
} tb_dtype;

typedef struct tb_dtype_info {
  const char *name;      /* "fp32" ... the name Lua and config.yaml use */
  int size;              /* bytes */
  int is_float;
  double max_finite;     /* floats: the largest finite value (the lowest is its negation) */
} tb_dtype_info;

extern const tb_dtype_info tb_dtypes[TB_NDTYPES];
/* Accepts the names above and the aliases float32, float, float16, half, bfloat16,
 * float8_e4m3fn, fp8_e4m3fn, fp8, float8_e5m2 (TileBench's and PyTorch's). Exact spelling;
 * returns -1 for an unknown name. */
int tb_dtype_from_name(const char *name);
/* luaL_checkoption-style: raises "bad argument #i to 'f' (invalid dtype 'x')" for an unknown
 * name and for one a tensor cannot hold. */
tb_dtype tb_check_dtype(lua_State *L, int arg);

/* ---- GPU errors (tb_error.c) ------------------------------------------------------------------
 * A GPU failure reaches Lua as a structured error: a table {class=, message=, api=} with the
 * "tb.error" metatable, whose __tostring (and __concat) give the message, so it reads as the plain
 * text did. class is the status's gpu_error_class name ("oom", "fault", "timeout", ...): what
 * failed is decided once, in the backend, and Lua never matches the message text. */
/* Pushes the error object for a failure of class st (api may be NULL or ""). */
void tb_push_error(lua_State *L, gpu_status st, const char *api, const char *message);
/* Raises it with a printf-style message (%g works, unlike luaL_error). */
int tb_raise(lua_State *L, gpu_status st, const char *api, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Raises gpu_last_error() (with gpu_last_error_api()) as a structured error when st != GPU_OK. */
void tb_check_gpu(lua_State *L, gpu_status st);
/* A library opened at run time (cuBLASLt, cuDNN) for Lua: available() -> true | false, why (from
 * its init), and version() -> {version =, path =} (raises as tb_check_gpu). */
int tb_lib_available(lua_State *L, gpu_status (*init)(void));
int tb_lib_version(lua_State *L, gpu_status (*version)(size_t *version, char *path, size_t path_len));
/* Initialises the backend and makes the selected device current (device 0 unless tb.device
 * selected another). Raises "no CUDA driver found (libcuda.so.1: ...)" without a driver. */
const gpu_backend *tb_gpu(lua_State *L);
/* The properties of the current device (cached). */
const gpu_device_props *tb_current_props(lua_State *L);

/* ---- tensors (tb_tensor.c) -----------------------------------------------------------------
 * Device memory is held by a reference-counted storage so that views (reshape) share it. A
 * tensor userdata keeps its storage; closing a tensor drops its reference; memory is freed
 * when the last reference goes. */
#define TB_MAX_DIMS 8
#define TB_TENSOR_MT "tb.tensor"

typedef struct tb_storage {
  gpu_ptr ptr;
  size_t nbytes;
  int refs;
} tb_storage;

typedef struct tb_tensor {
  tb_storage *storage;   /* NULL once closed */
  size_t offset;         /* bytes from storage->ptr */
  tb_dtype dtype;
  int ndim;
  int64_t shape[TB_MAX_DIMS];
  int64_t strides[TB_MAX_DIMS]; /* in elements; contiguous today */
  int64_t numel;
} tb_tensor;

/* luaL_checkudata on "tb.tensor"; raises "tensor is closed" for a released one. */
tb_tensor *tb_check_tensor(lua_State *L, int idx);
tb_tensor *tb_test_tensor(lua_State *L, int idx); /* NULL if not a tensor (closed ones raise) */
static inline gpu_ptr tb_tensor_ptr(const tb_tensor *t) { return t->storage->ptr + t->offset; }
static inline size_t tb_tensor_nbytes(const tb_tensor *t) {
  return (size_t)t->numel * (size_t)tb_dtypes[t->dtype].size;
}
/* Sets every element of t to the bit pattern `bits` of its dtype on tb_stream(); raises. */
void tb_tensor_fill_bits(lua_State *L, tb_tensor *t, uint64_t bits);

/* ---- the host's own kernels (tb_hostk.c) ----------------------------------------------------
 * host/kernels/NAME.cu are embedded at build time and compiled by NVRTC for the current device on
 * first use (cached on disk). Returns the function or raises. */
gpu_function *tb_host_kernel(lua_State *L, const char *file, const char *kernel);
/* The embedded text of host/kernels/<name> (NULL if absent): the one copy the host's kernels
 * compile from (tb_host_kernel, and tb.kernel.host_source for `tilebench peaks`). */
const char *tb_embedded_source(const char *name, size_t *size);

/* The stream every module launches on: one non-blocking stream per process, created by
 * tb_gpu() with the context (never the legacy stream: graphs cannot capture that). */
gpu_stream tb_stream(void);

/* Waits for the work queued on tb_stream(), at most timeout_s seconds (<= 0: tb_sync_timeout_s()).
 * A hung kernel raises "timeout: <what>: ..." (the prefix a campaign reads as a timeout) instead
 * of waiting forever; other failures raise "<what>: <error>". */
void tb_stream_sync(lua_State *L, double timeout_s, const char *what);
/* $TILEBENCH_SYNC_TIMEOUT (seconds) if set and positive, else 300. tb_sync_timeout_env also says
 * whether the variable is set to something else than a positive number (-1; *seconds = 300). */
double tb_sync_timeout_s(void);
int tb_sync_timeout_env(double *seconds);

/* ---- kernels (tb_kernel.c) -----------------------------------------------------------------
 * A kernel function userdata ("tb.function"). Its signature, when declared from Lua
 * (module:get("name", {"ptr", "ptr", "i64"})), is what tb.launch checks arguments against;
 * attrs.num_params (from the driver, when it can tell) is checked too. It keeps its module
 * alive through its user value. */
#define TB_FUNCTION_MT "tb.function"
#define TB_MAX_PARAMS 64
typedef enum tb_arg_kind { TB_ARG_PTR = 0, TB_ARG_I32, TB_ARG_I64, TB_ARG_U32, TB_ARG_U64,
                           TB_ARG_F32, TB_ARG_F64, TB_NARG_KINDS } tb_arg_kind;
extern const char *const tb_arg_kind_names[TB_NARG_KINDS]; /* "ptr", "i32", ... */
typedef struct tb_function {
  gpu_function *fn;
  char name[128];
  int nsig;                      /* -1 when no signature was declared */
  tb_arg_kind sig[TB_MAX_PARAMS];
  gpu_function_attrs attrs;
} tb_function;
tb_function *tb_check_function(lua_State *L, int idx);

/* ---- library operations (tb_libop.c) -------------------------------------------------------
 * The Lua object of tb.blas, tb.dnn and tb.cub: one prepared library operation (op) that a
 * launch plan replays from C. A module describes its kind once, in a tb_libop_class, and gets
 * run(), describe(), close() (also __gc / __close, safe twice), __tostring and __tb_run from
 * tb_libop_open; its own methods get the op from tb_libop_check, which raises closed_message
 * on a closed object. */
typedef struct tb_libop_class {
  const char *mt;             /* metatable name, "tb.blas.matmul": also the plan step's name */
  const char *closed_message; /* "blas matmul is closed": raised (and returned by a plan) once closed */
  gpu_status (*run)(void *op, gpu_stream s);                 /* enqueue once on s */
  size_t (*describe)(const void *op, char *buf, size_t len); /* what the library is given */
  size_t (*label)(const void *op, char *buf, size_t len);    /* __tostring of an open object */
  void (*destroy)(void *op);  /* frees op; NULL: nothing to free (the op lives inline) */
  size_t inline_bytes;        /* > 0: the op lives in the userdata (tb_libop.data), not in the library */
  const luaL_Reg *methods;    /* the kind's own methods beside run, describe and close */
} tb_libop_class;

typedef struct tb_libop {
  void *op; /* NULL while empty and once closed */
  const tb_libop_class *cls;
  int n_kept; /* user values (tensors) it keeps alive; dropped on close */
  /* inline_bytes of room for an inline op, aligned as Lua aligns a userdata's block (8 bytes on
   * x86-64: a larger _Alignas made every tb_libop misaligned, which UBSan reports) */
  _Alignas(void *) _Alignas(int64_t) _Alignas(double) unsigned char data[];
} tb_libop;

/* Pushes a new, empty (closed) object of class c that keeps the n values at stack first ..
 * first + n - 1 alive as its user values. Fill u->op (or u->data, then u->op = u->data) after. */
tb_libop *tb_libop_new(lua_State *L, const tb_libop_class *c, int first, int n);
tb_libop *tb_libop_check(lua_State *L, int idx, const tb_libop_class *c);
/* Registers c's metatable and pushes the module table made of functions (luaopen's result). */
int tb_libop_open(lua_State *L, const tb_libop_class *c, const luaL_Reg *functions);

/* ---- launch plans (tb_launch.c) ------------------------------------------------------------
 * A plan is an immutable list of steps built once per case and implementation; the timer and
 * the verifier replay it from C, with no Lua in between. A step is a kernel launch with packed
 * arguments, or a call into a library (cuBLASLt): any userdata whose metatable has the field
 * __tb_run holding a light userdata that points at a tb_native_run_fn. */
#define TB_PLAN_MT "tb.plan"
typedef gpu_status (*tb_native_run_fn)(void *self, gpu_stream s);

typedef struct tb_plan tb_plan; /* opaque; defined in tb_launch.c */
tb_plan *tb_check_plan(lua_State *L, int idx);
/* Runs every step of the plan on stream s (asynchronously). */
gpu_status tb_plan_run(const tb_plan *p, gpu_stream s);
int tb_plan_kernel_count(const tb_plan *p); /* kernel launches (native steps count as 1) */

#endif
