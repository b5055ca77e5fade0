/* tb_tensor.c: the tb.tensor module: device tensors (reference-counted storage, so views share
 * memory) filled on the device by tilebench's seeded generator (host/kernels/tensor.cu).
 *
 *   tb.tensor.empty(shape, dtype)                        -> t | nil, message, "oom"
 *   tb.tensor.full(shape, dtype, value)                  -> t | nil, message, "oom"
 *   tb.tensor.rand(shape, dtype, seed [, lo=0, hi=1])    uniform in [lo, hi) (float dtypes)
 *   tb.tensor.randn(shape, dtype, seed [, mean=0, std=1]) normal (float dtypes)
 *   tb.tensor.randint(shape, dtype, seed, lo, hi)        integers in [lo, hi) (torch's convention)
 *   tb.tensor.from_table(values, dtype [, shape])        values: a flat sequence of numbers
 *   tb.tensor.is_tensor(x)                               -> boolean
 *       shape: an integer or a table {d0, d1, ...} ({} is a 0-d tensor of one element);
 *       seed: any integer; element i depends only on (seed, i), so a prefix of a larger tensor
 *       equals the smaller tensor of the same seed. Every float dtype is the fp32 value rounded
 *       to it (RNE; fp8 e4m3 saturates to +-448 like __nv_fp8_e4m3).
 *   t.dtype ("fp16"), t.shape (a fresh table), #t == t:numel()
 *   t:numel() t:nbytes() t:ndim() t:strides() (elements, contiguous)
 *   t:copy() -> new tensor (device to device) | nil, message, "oom"
 *   t:copy_from(src)                     same dtype and element count
 *   t:reshape(shape) -> view sharing memory; one dimension may be -1
 *   t:to_host([limit = 1 << 20]) -> flat table (integers for integer dtypes, NaN/Inf kept)
 *   t:fill(value)    t:close()    t:is_closed()    tostring(t) == "tb.tensor(fp16, {4, 8})"
 * Memory goes when the last tensor sharing it is closed or collected (__gc, __close).
 * Work is queued on tb's stream; to_host waits for it. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f16.h"
#include "tb.h"

#define TO_HOST_DEFAULT_LIMIT (1 << 20)
#define MAX_TENSOR_BYTES ((uint64_t)1 << 62) /* past this a shape is a mistake, not a case */
#define THREADS 256

/* ---- the userdata ----------------------------------------------------------------------------- */

tb_tensor *tb_test_tensor(lua_State *L, int idx) {
  tb_tensor *t = luaL_testudata(L, idx, TB_TENSOR_MT);
  if (t != NULL && t->storage == NULL) luaL_error(L, "tensor is closed");
  return t;
}

tb_tensor *tb_check_tensor(lua_State *L, int idx) {
  tb_tensor *t = luaL_checkudata(L, idx, TB_TENSOR_MT);
  if (t->storage == NULL) luaL_error(L, "tensor is closed");
  return t;
}

/* Shared by close(), __gc and __close; never raises. A free that fails (a context in a sticky
 * error state) is ignored: the memory goes with the context. */
static void release_tensor(tb_tensor *t) {
  tb_storage *s = t->storage;
  if (s == NULL) return;
  t->storage = NULL;
  if (--s->refs > 0) return;
  if (s->ptr) (void)gpu_backend_get()->mem_free(s->ptr);
  free(s);
}

/* An empty, closed tensor on the stack, filled in by the caller. */
static tb_tensor *new_tensor(lua_State *L) {
  tb_tensor *t = lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  luaL_setmetatable(L, TB_TENSOR_MT);
  return t;
}

static void format_shape(const tb_tensor *t, char *buf, size_t len) {
  size_t at = (size_t)snprintf(buf, len, "{");
  for (int i = 0; i < t->ndim && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (at < len) snprintf(buf + at, len - at, "}");
}

static void set_contiguous(tb_tensor *t) {
  int64_t stride = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    t->strides[i] = stride;
    stride *= t->shape[i] > 0 ? t->shape[i] : 1;
  }
}

/* Reads a shape (integer or table) at arg into t. With allow_infer, one -1 may stand for
 * whatever makes numel equal to *infer_numel. Raises on a negative or absurd shape. */
static void check_shape(lua_State *L, int arg, tb_tensor *t, int allow_infer, int64_t infer_numel) {
  int64_t dims[TB_MAX_DIMS];
  int ndim = 0;
  if (lua_type(L, arg) == LUA_TNUMBER) {
    dims[0] = luaL_checkinteger(L, arg);
    ndim = 1;
  } else if (lua_type(L, arg) == LUA_TTABLE) {
    lua_Integer n = luaL_len(L, arg);
    if (n > TB_MAX_DIMS)
      luaL_argerror(L, arg, lua_pushfstring(L, "shape has %d dimensions (at most %d)", (int)n, TB_MAX_DIMS));
    for (int i = 0; i < (int)n; i++) {
      lua_rawgeti(L, arg, i + 1);
      int ok = 0;
      lua_Integer d = lua_tointegerx(L, -1, &ok);
      if (!ok)
        luaL_argerror(L, arg, lua_pushfstring(L, "shape dimension %d is not an integer (%s)", i + 1,
                                              luaL_typename(L, -1)));
      lua_pop(L, 1);
      dims[i] = d;
    }
    ndim = (int)n;
  } else {
    luaL_typeerror(L, arg, "shape (integer or table of integers)");
  }
  int infer_at = -1;
  int64_t known = 1;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] == -1 && allow_infer && infer_at < 0) {
      infer_at = i;
      continue;
    }
    if (dims[i] < 0)
      luaL_argerror(L, arg, lua_pushfstring(L, "shape dimension %d is negative (%I)", i + 1, (lua_Integer)dims[i]));
    if (dims[i] > 0 && known > INT64_MAX / dims[i])
      luaL_argerror(L, arg, "shape has more than 2^63 elements");
    known *= dims[i];
  }
  if (infer_at >= 0) {
    if (known == 0 || infer_numel % known != 0)
      luaL_argerror(L, arg, lua_pushfstring(L, "cannot infer dimension %d: %I elements do not divide into %I",
                                            infer_at + 1, (lua_Integer)infer_numel, (lua_Integer)known));
    dims[infer_at] = infer_numel / known;
    known = infer_numel;
  }
  t->ndim = ndim;
  memcpy(t->shape, dims, sizeof(int64_t) * (size_t)ndim);
  t->numel = known;
  set_contiguous(t);
  if ((uint64_t)known > MAX_TENSOR_BYTES / (uint64_t)tb_dtypes[t->dtype].size) {
    char s[256];
    format_shape(t, s, sizeof s);
    luaL_argerror(L, arg, lua_pushfstring(L, "shape %s of %s needs more than 2^62 bytes", s,
                                          tb_dtypes[t->dtype].name));
  }
}

/* Allocates t's storage. Returns 1, or pushes nil, message, "oom" and returns 0 (the caller
 * returns 3). Any other failure raises. */
static int allocate(lua_State *L, tb_tensor *t) {
  const gpu_backend *b = tb_gpu(L);
  tb_storage *s = malloc(sizeof *s);
  if (s == NULL) luaL_error(L, "out of host memory for a tensor");
  s->ptr = 0;
  s->nbytes = tb_tensor_nbytes(t);
  s->refs = 1;
  /* More than the device holds is out of memory without asking the driver (whose answer to an
   * absurd size need not be CUDA_ERROR_OUT_OF_MEMORY). */
  gpu_status st = GPU_OK;
  if (s->nbytes > tb_current_props(L)->total_mem && tb_current_props(L)->total_mem > 0) st = GPU_ERR_OOM;
  else if (s->nbytes) st = b->mem_alloc(&s->ptr, s->nbytes);
  if (st == GPU_OK) {
    t->storage = s;
    t->offset = 0;
    return 1;
  }
  free(s);
  if (st != GPU_ERR_OOM) tb_check_gpu(L, st);
  char shape[256], mem[96] = "";
  format_shape(t, shape, sizeof shape);
  size_t free_bytes = 0, total_bytes = 0;
  if (b->mem_info(&free_bytes, &total_bytes) == GPU_OK)
    snprintf(mem, sizeof mem, " (free %zu of %zu bytes)", free_bytes, total_bytes);
  lua_pushnil(L);
  lua_pushfstring(L, "out of memory: %I bytes requested for a tensor of shape %s %s%s",
                  (lua_Integer)tb_tensor_nbytes(t), shape, tb_dtypes[t->dtype].name, mem);
  lua_pushliteral(L, "oom");
  return 0;
}

/* ---- device work ---------------------------------------------------------------------------- */

/* A grid-stride launch over `items` work items, enough blocks to fill the device. */
static void launch(lua_State *L, const char *kernel, uint64_t items, void **args) {
  const gpu_backend *b = tb_gpu(L);
  gpu_function *fn = tb_host_kernel(L, "tensor.cu", kernel);
  uint64_t blocks = (items + THREADS - 1) / THREADS;
  uint64_t cap = (uint64_t)tb_current_props(L)->sm_count * 8;
  if (cap == 0) cap = 1024;
  if (blocks > cap) blocks = cap;
  if (blocks == 0) blocks = 1;
  unsigned grid[3] = {(unsigned)blocks, 1, 1}, block[3] = {THREADS, 1, 1};
  tb_check_gpu(L, b->launch(fn, grid, block, 0, tb_stream(), args));
}

/* Every element of t set to the dtype's bit pattern `bits` (its size divides 8), by tensor.cu's
 * tb_fill_pattern: full / fill here, and tb.verify's int64 poison (the one fill kernel). */
void tb_tensor_fill_bits(lua_State *L, tb_tensor *t, uint64_t bits) {
  int size = tb_dtypes[t->dtype].size;
  uint64_t pattern = bits & (size == 8 ? ~0ULL : ((1ULL << (8 * size)) - 1));
  for (int w = size; w < 8; w *= 2) pattern |= pattern << (8 * w);
  unsigned long long nbytes = tb_tensor_nbytes(t);
  if (nbytes == 0) return;
  gpu_ptr p = tb_tensor_ptr(t);
  void *args[] = {&p, &nbytes, &pattern};
  launch(L, "tb_fill_pattern", (nbytes + 15) / 16, args);
}

/* The bits of the value at idx in dtype d, for full/fill/from_table. Integers must fit exactly.
 * Errors name `what` and, when item > 0, the item ("from_table: value 3: ..."). */
static uint64_t value_bits(lua_State *L, int idx, tb_dtype d, const char *what, lua_Integer item) {
  if (tb_dtypes[d].is_float) {
    int is_number = 0;
    double v = lua_tonumberx(L, idx, &is_number);
    if (!is_number) {
      if (item > 0) luaL_error(L, "%s: value %I: expected a number, got %s", what, item, luaL_typename(L, idx));
      luaL_error(L, "%s: expected a number, got %s", what, luaL_typename(L, idx));
    }
    switch (d) {
      case TB_FP32: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return u;
      }
      case TB_FP16: return tb_f16_from_double(v);
      case TB_BF16: return tb_bf16_from_double(v);
      default: return tb_fp8e4m3_from_double(v);
    }
  }
  static const lua_Integer lo[TB_NDTYPES] = {[TB_INT8] = INT8_MIN, [TB_UINT8] = 0, [TB_INT32] = INT32_MIN,
                                             [TB_INT64] = INT64_MIN};
  static const lua_Integer hi[TB_NDTYPES] = {[TB_INT8] = INT8_MAX, [TB_UINT8] = UINT8_MAX,
                                             [TB_INT32] = INT32_MAX, [TB_INT64] = INT64_MAX};
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, idx, &ok);
  if (ok && v >= lo[d] && v <= hi[d]) return (uint64_t)v;
  char where[96];
  if (item > 0) snprintf(where, sizeof where, "%s: value %lld", what, (long long)item);
  else snprintf(where, sizeof where, "%s", what);
  if (ok) luaL_error(L, "%s: %I is out of range for %s", where, v, tb_dtypes[d].name);
  if (lua_type(L, idx) == LUA_TNUMBER)
    luaL_error(L, "%s: %s has no %s representation", where, lua_tostring(L, idx), tb_dtypes[d].name);
  return (uint64_t)luaL_error(L, "%s: expected an integer, got %s", where, luaL_typename(L, idx));
}

static double bits_value(tb_dtype d, const unsigned char *p) {
  switch (d) {
    case TB_FP32: {
      float f;
      memcpy(&f, p, sizeof f);
      return f;
    }
    case TB_FP16: {
      uint16_t u;
      memcpy(&u, p, sizeof u);
      return tb_f16_to_double(u);
    }
    case TB_BF16: {
      uint16_t u;
      memcpy(&u, p, sizeof u);
      return tb_bf16_to_double(u);
    }
    default: return tb_fp8e4m3_to_double(*p);
  }
}

static lua_Integer bits_integer(tb_dtype d, const unsigned char *p) {
  switch (d) {
    case TB_INT8: return (int8_t)*p;
    case TB_UINT8: return *p;
    case TB_INT32: {
      int32_t v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    default: {
      int64_t v;
      memcpy(&v, p, sizeof v);
      return v;
    }
  }
}

/* ---- constructors ---------------------------------------------------------------------------- */

/* Common start of every constructor: shape at 1, dtype at 2; a new empty tensor on the stack.
 * Returns NULL (nil, message, "oom" pushed) when memory is short. */
static tb_tensor *construct(lua_State *L) {
  tb_dtype d = tb_check_dtype(L, 2);
  tb_tensor *t = new_tensor(L);
  t->dtype = d;
  check_shape(L, 1, t, 0, 0);
  return allocate(L, t) ? t : NULL;
}

static int l_empty(lua_State *L) {
  lua_settop(L, 2);
  return construct(L) ? 1 : 3;
}

static int l_full(lua_State *L) {
  lua_settop(L, 3);
  tb_dtype d = tb_check_dtype(L, 2);
  uint64_t bits = value_bits(L, 3, d, "full", 0);
  tb_tensor *t = construct(L);
  if (t == NULL) return 3;
  tb_tensor_fill_bits(L, t, bits);
  return 1;
}

static void require_float(lua_State *L, const char *fname, tb_dtype d) {
  if (!tb_dtypes[d].is_float)
    luaL_argerror(L, 2, lua_pushfstring(L, "%s needs a float dtype, got %s (use randint)", fname, tb_dtypes[d].name));
}

/* Launches tb_<gen>_<dtype> over t: each work item is one 16-byte chunk of at least 4 elements. */
static void generate(lua_State *L, const char *gen, tb_tensor *t, void **args) {
  if (t->numel == 0) return;
  char kernel[64];
  snprintf(kernel, sizeof kernel, "tb_%s_%s", gen, tb_dtypes[t->dtype].name);
  int per16 = 16 / tb_dtypes[t->dtype].size;
  uint64_t chunk = per16 > 4 ? (uint64_t)per16 : 4;
  launch(L, kernel, ((uint64_t)t->numel + chunk - 1) / chunk, args);
}

static int l_rand(lua_State *L) {
  tb_dtype d = tb_check_dtype(L, 2);
  require_float(L, "rand", d);
  unsigned long long seed = (unsigned long long)luaL_checkinteger(L, 3);
  double lo = luaL_optnumber(L, 4, 0.0), hi = luaL_optnumber(L, 5, 1.0);
  luaL_argcheck(L, isfinite(lo) && isfinite(hi) && lo < hi, 5, "need finite lo < hi");
  double scale = hi - lo;
  luaL_argcheck(L, isfinite(scale), 5, "hi - lo overflows");
  lua_settop(L, 2);
  tb_tensor *t = construct(L);
  if (t == NULL) return 3;
  gpu_ptr p = tb_tensor_ptr(t);
  unsigned long long n = (unsigned long long)t->numel;
  void *args[] = {&p, &n, &seed, &lo, &scale, &hi};
  generate(L, "rand", t, args);
  return 1;
}

static int l_randn(lua_State *L) {
  tb_dtype d = tb_check_dtype(L, 2);
  require_float(L, "randn", d);
  unsigned long long seed = (unsigned long long)luaL_checkinteger(L, 3);
  double mean = luaL_optnumber(L, 4, 0.0), stdev = luaL_optnumber(L, 5, 1.0);
  luaL_argcheck(L, isfinite(mean) && fabs(mean) <= FLT_MAX, 4, "mean must be a finite fp32 value");
  luaL_argcheck(L, isfinite(stdev) && stdev >= 0 && stdev <= FLT_MAX, 5, "std must be finite and >= 0");
  float mean32 = (float)mean, std32 = (float)stdev;
  lua_settop(L, 2);
  tb_tensor *t = construct(L);
  if (t == NULL) return 3;
  gpu_ptr p = tb_tensor_ptr(t);
  unsigned long long n = (unsigned long long)t->numel;
  void *args[] = {&p, &n, &seed, &mean32, &std32};
  generate(L, "randn", t, args);
  return 1;
}

static int l_randint(lua_State *L) {
  tb_dtype d = tb_check_dtype(L, 2);
  unsigned long long seed = (unsigned long long)luaL_checkinteger(L, 3);
  long long lo = luaL_checkinteger(L, 4), hi = luaL_checkinteger(L, 5);
  luaL_argcheck(L, lo < hi, 5, lua_pushfstring(L, "empty range [%I, %I)", (lua_Integer)lo, (lua_Integer)hi));
  if (!tb_dtypes[d].is_float) {
    static const long long min[TB_NDTYPES] = {[TB_INT8] = INT8_MIN, [TB_UINT8] = 0,
                                              [TB_INT32] = INT32_MIN, [TB_INT64] = INT64_MIN};
    static const long long max[TB_NDTYPES] = {[TB_INT8] = INT8_MAX, [TB_UINT8] = UINT8_MAX,
                                              [TB_INT32] = INT32_MAX, [TB_INT64] = INT64_MAX};
    if (lo < min[d] || hi - 1 > max[d])
      luaL_argerror(L, 5, lua_pushfstring(L, "[%I, %I) does not fit %s", (lua_Integer)lo, (lua_Integer)hi,
                                          tb_dtypes[d].name));
  }
  unsigned long long range = (unsigned long long)hi - (unsigned long long)lo;
  lua_settop(L, 2);
  tb_tensor *t = construct(L);
  if (t == NULL) return 3;
  gpu_ptr p = tb_tensor_ptr(t);
  unsigned long long n = (unsigned long long)t->numel;
  void *args[] = {&p, &n, &seed, &lo, &range};
  generate(L, "randint", t, args);
  return 1;
}

/* Copies host bytes into t. cuMemcpyHtoD runs on the legacy stream and, from pageable memory,
 * may return before the data lands; tb's stream does not wait for the legacy stream, so the
 * context is synchronised before anything else may read t. */
static void upload(lua_State *L, tb_tensor *t, const void *bytes) {
  const gpu_backend *b = tb_gpu(L);
  size_t n = tb_tensor_nbytes(t);
  if (n == 0) return;
  tb_check_gpu(L, b->copy_htod(tb_tensor_ptr(t), bytes, n));
  tb_check_gpu(L, b->synchronize());
}

static int l_from_table(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  tb_dtype d = tb_check_dtype(L, 2);
  lua_settop(L, 3);
  lua_Integer count = luaL_len(L, 1);
  tb_tensor *t = new_tensor(L); /* 4 */
  t->dtype = d;
  if (lua_isnil(L, 3)) {
    t->ndim = 1;
    t->shape[0] = count;
    t->numel = count;
    set_contiguous(t);
  } else {
    check_shape(L, 3, t, 1, count);
    if (t->numel != count)
      luaL_argerror(L, 3, lua_pushfstring(L, "shape has %I elements but values has %I", (lua_Integer)t->numel, count));
  }
  int size = tb_dtypes[d].size;
  unsigned char *host = lua_newuserdatauv(L, (size_t)count * (size_t)size + 1, 0); /* 5: staging */
  for (lua_Integer i = 0; i < count; i++) {
    lua_rawgeti(L, 1, i + 1);
    uint64_t bits = value_bits(L, -1, d, "from_table", i + 1);
    memcpy(host + i * size, &bits, (size_t)size); /* little-endian: the low bytes */
    lua_pop(L, 1);
  }
  if (!allocate(L, t)) return 3;
  upload(L, t, host);
  lua_pushvalue(L, 4);
  return 1;
}

static int l_is_tensor(lua_State *L) {
  lua_pushboolean(L, luaL_testudata(L, 1, TB_TENSOR_MT) != NULL);
  return 1;
}

/* ---- methods --------------------------------------------------------------------------------- */

static int m_numel(lua_State *L) {
  lua_pushinteger(L, tb_check_tensor(L, 1)->numel);
  return 1;
}

static int m_nbytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)tb_tensor_nbytes(tb_check_tensor(L, 1)));
  return 1;
}

static int m_ndim(lua_State *L) {
  lua_pushinteger(L, tb_check_tensor(L, 1)->ndim);
  return 1;
}

static void push_dims(lua_State *L, const int64_t *dims, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, dims[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

static int m_strides(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1);
  push_dims(L, t->strides, t->ndim);
  return 1;
}

static int m_copy(lua_State *L) {
  tb_tensor *src = tb_check_tensor(L, 1);
  tb_tensor *t = new_tensor(L);
  t->dtype = src->dtype;
  t->ndim = src->ndim;
  t->numel = src->numel;
  memcpy(t->shape, src->shape, sizeof t->shape);
  memcpy(t->strides, src->strides, sizeof t->strides);
  if (!allocate(L, t)) return 3;
  size_t n = tb_tensor_nbytes(t);
  if (n) tb_check_gpu(L, tb_gpu(L)->copy_dtod_async(tb_tensor_ptr(t), tb_tensor_ptr(src), n, tb_stream()));
  return 1;
}

static int m_copy_from(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1), *src = tb_check_tensor(L, 2);
  if (src->dtype != t->dtype)
    luaL_argerror(L, 2, lua_pushfstring(L, "dtype %s, expected %s", tb_dtypes[src->dtype].name, tb_dtypes[t->dtype].name));
  if (src->numel != t->numel)
    luaL_argerror(L, 2, lua_pushfstring(L, "%I elements, expected %I", (lua_Integer)src->numel, (lua_Integer)t->numel));
  size_t n = tb_tensor_nbytes(t);
  if (n && tb_tensor_ptr(t) != tb_tensor_ptr(src))
    tb_check_gpu(L, tb_gpu(L)->copy_dtod_async(tb_tensor_ptr(t), tb_tensor_ptr(src), n, tb_stream()));
  lua_settop(L, 1);
  return 1;
}

static int m_reshape(lua_State *L) {
  tb_tensor *src = tb_check_tensor(L, 1);
  tb_tensor view = *src;
  check_shape(L, 2, &view, 1, src->numel);
  if (view.numel != src->numel) {
    char from[256], to[256];
    format_shape(src, from, sizeof from);
    format_shape(&view, to, sizeof to);
    luaL_argerror(L, 2, lua_pushfstring(L, "cannot reshape %s (%I elements) to %s (%I elements)", from,
                                        (lua_Integer)src->numel, to, (lua_Integer)view.numel));
  }
  tb_tensor *t = new_tensor(L);
  *t = view;
  t->storage->refs++;
  return 1;
}

static int m_to_host(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1);
  lua_Integer limit = luaL_optinteger(L, 2, TO_HOST_DEFAULT_LIMIT);
  if (t->numel > limit)
    luaL_error(L, "to_host: tensor has %I elements, over the limit of %I (pass a larger limit)",
               (lua_Integer)t->numel, limit);
  size_t n = tb_tensor_nbytes(t);
  lua_createtable(L, t->numel <= INT32_MAX ? (int)t->numel : 0, 0);
  if (n == 0) return 1;
  const gpu_backend *b = tb_gpu(L);
  unsigned char *host = lua_newuserdatauv(L, n, 0);
  tb_stream_sync(L, 0, "to_host"); /* work queued on tb's stream */
  tb_check_gpu(L, b->copy_dtoh(host, tb_tensor_ptr(t), n));
  int size = tb_dtypes[t->dtype].size, is_float = tb_dtypes[t->dtype].is_float;
  for (int64_t i = 0; i < t->numel; i++) {
    if (is_float) lua_pushnumber(L, bits_value(t->dtype, host + i * size));
    else lua_pushinteger(L, bits_integer(t->dtype, host + i * size));
    lua_rawseti(L, -3, i + 1);
  }
  lua_pop(L, 1);
  return 1;
}

static int m_fill(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1);
  tb_tensor_fill_bits(L, t, value_bits(L, 2, t->dtype, "fill", 0));
  lua_settop(L, 1);
  return 1;
}

static int m_close(lua_State *L) {
  release_tensor(luaL_checkudata(L, 1, TB_TENSOR_MT));
  return 0;
}

static int m_is_closed(lua_State *L) {
  lua_pushboolean(L, ((tb_tensor *)luaL_checkudata(L, 1, TB_TENSOR_MT))->storage == NULL);
  return 1;
}

static int mm_gc(lua_State *L) {
  release_tensor(luaL_checkudata(L, 1, TB_TENSOR_MT));
  return 0;
}

static int mm_tostring(lua_State *L) {
  tb_tensor *t = luaL_checkudata(L, 1, TB_TENSOR_MT);
  if (t->storage == NULL) {
    lua_pushliteral(L, "tb.tensor(closed)");
    return 1;
  }
  char shape[256];
  format_shape(t, shape, sizeof shape);
  lua_pushfstring(L, "tb.tensor(%s, %s)", tb_dtypes[t->dtype].name, shape);
  return 1;
}

/* Fields first (dtype, shape), then methods. */
static int mm_index(lua_State *L) {
  const char *key = lua_tostring(L, 2);
  if (key && (strcmp(key, "dtype") == 0 || strcmp(key, "shape") == 0)) {
    tb_tensor *t = tb_check_tensor(L, 1);
    if (key[0] == 'd') lua_pushstring(L, tb_dtypes[t->dtype].name);
    else push_dims(L, t->shape, t->ndim);
    return 1;
  }
  lua_pushvalue(L, 2);
  lua_rawget(L, lua_upvalueindex(1));
  return 1;
}

static const luaL_Reg tensor_methods[] = {
  {"numel", m_numel}, {"nbytes", m_nbytes}, {"ndim", m_ndim}, {"strides", m_strides},
  {"copy", m_copy}, {"copy_from", m_copy_from}, {"reshape", m_reshape}, {"to_host", m_to_host},
  {"fill", m_fill}, {"close", m_close}, {"is_closed", m_is_closed}, {NULL, NULL}};

static const luaL_Reg tensor_functions[] = {
  {"empty", l_empty}, {"full", l_full}, {"rand", l_rand}, {"randn", l_randn}, {"randint", l_randint},
  {"from_table", l_from_table}, {"is_tensor", l_is_tensor}, {NULL, NULL}};

int luaopen_tb_tensor(lua_State *L);
int luaopen_tb_tensor(lua_State *L) {
  if (luaL_newmetatable(L, TB_TENSOR_MT)) {
    luaL_newlib(L, tensor_methods);
    lua_pushcclosure(L, mm_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, mm_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, mm_gc);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, mm_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, m_numel);
    lua_setfield(L, -2, "__len");
  }
  lua_pop(L, 1);
  luaL_newlib(L, tensor_functions);
  return 1;
}
