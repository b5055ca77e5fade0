/* tb_verify.c: the tb.verify module: poison outputs before a run, and compare an output with its
 * reference on the device in one pass (host/kernels/verify.cu), copying back a few KB.
 *
 *   tb.verify.poison(t) -> t      float dtypes: NaN everywhere (0xFF bytes); integer dtypes: the
 *                                 type's minimum (INT8_MIN, INT32_MIN, INT64_MIN; uint8: 0xFF)
 *   tb.verify.compare(out, ref [, opts]) -> {
 *       ok = bool, mismatches = count, numel = n, max_abs = x, max_rel = x, atol = a, rtol = r,
 *       first = { {index = 0-based flat index, got = v, expected = v}, ... } }
 *     opts = { atol =, rtol =, max_report = 8 (0 .. 1024) }; atol/rtol default by out's dtype.
 *     Rule: |out - ref| <= atol + rtol*|ref| (in double); NaN matches only NaN; +Inf only +Inf,
 *     -Inf only -Inf; two integer tensors with atol = rtol = 0 compare exactly as int64.
 *     out and ref need the same number of elements; dtypes may differ only when both are float.
 *     first holds the lowest-index mismatches, at most max_report of them. max_abs and max_rel
 *     are over pairs of finite values (max_rel leaves out ref == 0).
 *   tb.verify.defaults(dtype) -> atol, rtol   (fp32 1e-5/1.3e-6, fp16 1e-3/1e-3, bf16 1e-2/1.6e-2,
 *                                              fp8 1.0/0.1, integers 0/0: exact) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tb.h"

#define COMPARE_THREADS 256  /* TB_COMPARE_THREADS in verify.cu */
#define COMPARE_ROUNDS 2     /* TB_COMPARE_ROUNDS in verify.cu */
#define FINISH_THREADS 1024
#define MAX_REPORT 1024

/* The layout verify.cu writes: header | first[K] | block counts (u32, padded) | block lists. */
typedef struct compare_header { uint64_t mismatches, max_abs, max_rel, nfirst; } compare_header;
typedef struct mismatch_entry { uint64_t index, got, expected; } mismatch_entry;

static const struct { double atol, rtol; } default_tolerance[TB_NDTYPES] = {
  [TB_FP32] = {1e-5, 1.3e-6}, [TB_FP16] = {1e-3, 1e-3}, [TB_BF16] = {1e-2, 1.6e-2},
  [TB_FP8_E4M3] = {1.0, 0.1}, [TB_INT8] = {0, 0}, [TB_UINT8] = {0, 0}, [TB_INT32] = {0, 0},
  [TB_INT64] = {0, 0},
};

static void launch(lua_State *L, const char *kernel, unsigned blocks, unsigned threads, void **args) {
  gpu_function *fn = tb_host_kernel(L, "verify.cu", kernel);
  unsigned grid[3] = {blocks, 1, 1}, block[3] = {threads, 1, 1};
  tb_check_gpu(L, tb_gpu(L)->launch(fn, grid, block, 0, tb_stream(), args));
}

static int l_poison(lua_State *L) {
  tb_tensor *t = tb_check_tensor(L, 1);
  const gpu_backend *b = tb_gpu(L);
  size_t nbytes = tb_tensor_nbytes(t);
  gpu_ptr p = tb_tensor_ptr(t);
  lua_settop(L, 1);
  if (nbytes == 0) return 1;
  switch (t->dtype) {
    case TB_INT8: tb_check_gpu(L, b->memset8_async(p, 0x80, nbytes, tb_stream())); break;
    case TB_INT32: tb_check_gpu(L, b->memset32_async(p, 0x80000000u, (size_t)t->numel, tb_stream())); break;
    case TB_INT64: {
      unsigned long long n = nbytes, pattern = 0x8000000000000000ULL;
      uint64_t blocks = (nbytes / 16 + COMPARE_THREADS - 1) / COMPARE_THREADS;
      uint64_t cap = (uint64_t)tb_current_props(L)->sm_count * 8;
      if (blocks > cap && cap > 0) blocks = cap;
      void *args[] = {&p, &n, &pattern};
      launch(L, "tb_poison_pattern", blocks ? (unsigned)blocks : 1u, COMPARE_THREADS, args);
      break;
    }
    default: /* every float dtype, and uint8's maximum */
      tb_check_gpu(L, b->memset8_async(p, 0xFF, nbytes, tb_stream()));
  }
  return 1;
}

static double opt_tolerance(lua_State *L, int opts, const char *name, double dflt) {
  if (lua_isnoneornil(L, opts)) return dflt;
  lua_getfield(L, opts, name);
  double v = dflt;
  if (!lua_isnil(L, -1)) {
    int ok = 0;
    v = lua_tonumberx(L, -1, &ok);
    if (!ok || !(v >= 0) || isinf(v))
      luaL_argerror(L, opts, lua_pushfstring(L, "%s must be a finite number >= 0", name));
  }
  lua_pop(L, 1);
  return v;
}

static void push_value(lua_State *L, tb_dtype d, uint64_t bits) {
  if (tb_dtypes[d].is_float) {
    double v;
    memcpy(&v, &bits, sizeof v);
    lua_pushnumber(L, v);
  } else {
    lua_pushinteger(L, (lua_Integer)bits);
  }
}

static double bits_double(uint64_t bits) {
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

static int l_compare(lua_State *L) {
  tb_tensor *out = tb_check_tensor(L, 1), *ref = tb_check_tensor(L, 2);
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  if (out->numel != ref->numel)
    luaL_error(L, "compare: out has %I elements, ref has %I", (lua_Integer)out->numel, (lua_Integer)ref->numel);
  const tb_dtype_info *od = &tb_dtypes[out->dtype], *rd = &tb_dtypes[ref->dtype];
  if (out->dtype != ref->dtype && !(od->is_float && rd->is_float))
    luaL_error(L, "compare: out is %s and ref is %s (dtypes may differ only when both are float)", od->name, rd->name);
  double atol = opt_tolerance(L, 3, "atol", default_tolerance[out->dtype].atol);
  double rtol = opt_tolerance(L, 3, "rtol", default_tolerance[out->dtype].rtol);
  lua_Integer max_report = 8;
  if (!lua_isnoneornil(L, 3)) {
    lua_getfield(L, 3, "max_report");
    if (!lua_isnil(L, -1)) {
      int ok = 0;
      max_report = lua_tointegerx(L, -1, &ok);
      if (!ok || max_report < 0 || max_report > MAX_REPORT)
        luaL_argerror(L, 3, lua_pushfstring(L, "max_report must be an integer in [0, %d]", MAX_REPORT));
    }
    lua_pop(L, 1);
  }
  const unsigned K = (unsigned)max_report;
  int exact = !od->is_float && !rd->is_float && atol == 0 && rtol == 0;

  compare_header h = {0, 0, 0, 0};
  mismatch_entry first[MAX_REPORT];
  const uint64_t n = (uint64_t)out->numel;
  if (n > 0) {
    const gpu_backend *b = tb_gpu(L);
    char kernel[64];
    snprintf(kernel, sizeof kernel, "tb_compare_%s_%s", od->name, rd->name);
    gpu_function *fn = tb_host_kernel(L, "verify.cu", kernel);
    gpu_function *finish = tb_host_kernel(L, "verify.cu", "tb_compare_finish");

    /* Tiles of 256 threads x 2 slots x E elements; blocks own contiguous runs of tiles. */
    int wider = od->size > rd->size ? od->size : rd->size;
    uint64_t tile = (uint64_t)COMPARE_THREADS * COMPARE_ROUNDS * (uint64_t)(16 / wider);
    uint64_t ntiles = (n + tile - 1) / tile;
    uint64_t max_blocks = (uint64_t)tb_current_props(L)->sm_count * 8;
    if (max_blocks == 0) max_blocks = 1024;
    uint64_t blocks = ntiles < max_blocks ? ntiles : max_blocks;
    unsigned long long tiles_per_block = (ntiles + blocks - 1) / blocks;
    blocks = (ntiles + tiles_per_block - 1) / tiles_per_block;

    size_t bytes = sizeof h + (size_t)K * sizeof(mismatch_entry) + (((size_t)blocks * 4 + 7) & ~(size_t)7) +
                   (size_t)blocks * K * sizeof(mismatch_entry);
    gpu_ptr res = 0;
    tb_check_gpu(L, b->mem_alloc(&res, bytes)); /* a few hundred KB: an OOM here is a real error */

    gpu_ptr po = tb_tensor_ptr(out), pr = tb_tensor_ptr(ref);
    unsigned long long count = n;
    int vectors = (po % 16 == 0) && (pr % 16 == 0);
    unsigned nblocks = (unsigned)blocks, k = K;
    void *args[] = {&po, &pr, &count, &atol, &rtol, &exact, &vectors, &tiles_per_block, &res, &k};
    void *finish_args[] = {&res, &nblocks, &k};
    unsigned grid[3] = {nblocks, 1, 1}, block[3] = {COMPARE_THREADS, 1, 1};
    unsigned grid1[3] = {1, 1, 1}, block1[3] = {FINISH_THREADS, 1, 1};

    /* Run everything, then free the scratch whatever happened, then raise the first failure. */
    gpu_status st = b->memset8_async(res, 0, sizeof h, tb_stream());
    if (st == GPU_OK) st = b->launch(fn, grid, block, 0, tb_stream(), args);
    if (st == GPU_OK) st = b->launch(finish, grid1, block1, 0, tb_stream(), finish_args);
    if (st == GPU_OK) st = b->stream_wait_timeout(tb_stream(), tb_sync_timeout_s() * 1e3);
    if (st == GPU_OK) st = b->copy_dtoh(&h, res, sizeof h);
    if (st == GPU_OK && h.nfirst > 0) st = b->copy_dtoh(first, res + sizeof h, (size_t)h.nfirst * sizeof first[0]);
    if (st != GPU_OK) {
      char message[1024], api[64];
      snprintf(message, sizeof message, "%s", gpu_last_error());
      snprintf(api, sizeof api, "%s", gpu_last_error_api());
      (void)b->mem_free(res);
      tb_raise(L, st, api, "%scompare %s: %s", st == GPU_ERR_TIMEOUT ? "timeout: " : "", kernel, message);
    }
    tb_check_gpu(L, b->mem_free(res));
  }

  lua_createtable(L, 0, 8);
  lua_pushboolean(L, h.mismatches == 0);
  lua_setfield(L, -2, "ok");
  lua_pushinteger(L, (lua_Integer)h.mismatches);
  lua_setfield(L, -2, "mismatches");
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "numel");
  lua_pushnumber(L, bits_double(h.max_abs));
  lua_setfield(L, -2, "max_abs");
  lua_pushnumber(L, bits_double(h.max_rel));
  lua_setfield(L, -2, "max_rel");
  lua_pushnumber(L, atol);
  lua_setfield(L, -2, "atol");
  lua_pushnumber(L, rtol);
  lua_setfield(L, -2, "rtol");
  lua_createtable(L, (int)h.nfirst, 0);
  for (uint64_t i = 0; i < h.nfirst && i < K; i++) {
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, (lua_Integer)first[i].index);
    lua_setfield(L, -2, "index");
    push_value(L, out->dtype, first[i].got);
    lua_setfield(L, -2, "got");
    push_value(L, ref->dtype, first[i].expected);
    lua_setfield(L, -2, "expected");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "first");
  return 1;
}

static int l_defaults(lua_State *L) {
  tb_dtype d = tb_check_dtype(L, 1);
  lua_pushnumber(L, default_tolerance[d].atol);
  lua_pushnumber(L, default_tolerance[d].rtol);
  return 2;
}

static const luaL_Reg verify_functions[] = {
  {"poison", l_poison}, {"compare", l_compare}, {"defaults", l_defaults}, {NULL, NULL}};

int luaopen_tb_verify(lua_State *L);
int luaopen_tb_verify(lua_State *L) {
  luaL_newlib(L, verify_functions);
  return 1;
}
