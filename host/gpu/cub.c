/* cub.c: opens libtb_cub.so (cub.h says where it looks) and forwards to its C ABI
 * (host/cub/tb_cub.cu). The library runs on the CUDA runtime, which uses the context current on
 * the thread (tilebench's) and the stream it is handed. */
#include "cub.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB_CUB_ABI 1
#ifndef TB_CUB_LIB_PATH
#define TB_CUB_LIB_PATH ""
#endif

static struct {
  int (*abi)(void);
  int (*version)(void);
  const char *(*error_string)(int);
  int (*temp_bytes)(int, long long, size_t *);
  int (*run)(int, void *, size_t, const void *, void *, void *, long long, long long, void *);
  char path[1024];
} lib;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int opened; /* 0: not tried, 1: ok, -1: failed (message kept) */
static char open_message[4096];

static void *try_open(const char *path, char *report, size_t cap) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) {
    snprintf(lib.path, sizeof lib.path, "%s", path);
    return h;
  }
  const char *why = dlerror();
  size_t used = strlen(report);
  snprintf(report + used, cap - used, "\n  %s: %s", path, why ? why : "cannot be opened");
  return NULL;
}

static int open_lib(void) {
  char report[3072] = "";
  void *h = NULL;
  const char *env = getenv("TILEBENCH_CUB_LIB");
  if (env && *env) { /* named: that file or nothing, so a user's choice never falls back silently */
    h = try_open(env, report, sizeof report);
  } else {
    if (TB_CUB_LIB_PATH[0]) h = try_open(TB_CUB_LIB_PATH, report, sizeof report);
    if (!h) h = try_open("libtb_cub.so", report, sizeof report);
  }
  if (!h) {
    snprintf(open_message, sizeof open_message,
             "libtb_cub.so (CUB's sorts, built with nvcc from host/cub/tb_cub.cu where the build found nvcc%s) "
             "not found%s; searched:%s",
             TB_CUB_LIB_PATH[0] ? "" : "; this build found none", env && *env ? " (TILEBENCH_CUB_LIB)" : "", report);
    return -1;
  }
  static const char *const names[] = {"tb_cub_abi", "tb_cub_version", "tb_cub_error_string", "tb_cub_temp_bytes",
                                      "tb_cub_run"};
  void **slots[] = {(void **)&lib.abi, (void **)&lib.version, (void **)&lib.error_string,
                    (void **)&lib.temp_bytes, (void **)&lib.run};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    *slots[i] = dlsym(h, names[i]);
    if (*slots[i] == NULL) {
      snprintf(open_message, sizeof open_message, "%s: symbol %s missing (not a tilebench CUB library?)", lib.path,
               names[i]);
      dlclose(h);
      return -1;
    }
  }
  if (lib.abi() != TB_CUB_ABI) {
    snprintf(open_message, sizeof open_message, "%s: ABI %d, this tilebench needs %d (rebuild it)", lib.path,
             lib.abi(), TB_CUB_ABI);
    dlclose(h);
    return -1;
  }
  return 1;
}

gpu_status cub_init(void) {
  pthread_mutex_lock(&lock);
  if (opened == 0) opened = open_lib();
  int ok = opened == 1;
  pthread_mutex_unlock(&lock);
  if (!ok) return gpu_set_error(GPU_ERR_NO_LIBRARY, "%s", open_message);
  return GPU_OK;
}

gpu_status cub_version(size_t *version, char *path, size_t path_len) {
  gpu_status st = cub_init();
  if (st != GPU_OK) return st;
  *version = (size_t)lib.version();
  if (path && path_len) snprintf(path, path_len, "%s", lib.path);
  return GPU_OK;
}

const char *cub_op_name(cub_op op) {
  switch (op) {
    case CUB_SORT_I32: return "DeviceRadixSort::SortKeys<int32>";
    case CUB_TOPK_F32: return "DeviceRadixSort::SortKeysDescending<fp32> + first k";
  }
  return "?";
}

static gpu_status cuda_error(int code, const char *what, cub_op op, int64_t n) {
  return gpu_set_error(GPU_ERR_OTHER, "CUB %s (%s, n = %lld): CUDA error %d: %s", what, cub_op_name(op),
                       (long long)n, code, lib.error_string(code));
}

gpu_status cub_temp_bytes(cub_op op, int64_t n, size_t *bytes) {
  gpu_status st = cub_init();
  if (st != GPU_OK) return st;
  int e = lib.temp_bytes((int)op, (long long)n, bytes);
  return e ? cuda_error(e, "temporary storage query", op, n) : GPU_OK;
}

gpu_status cub_run(cub_op op, gpu_ptr temp, size_t temp_bytes, gpu_ptr in, gpu_ptr scratch, gpu_ptr out,
                   int64_t n, int64_t k, gpu_stream s) {
  gpu_status st = cub_init();
  if (st != GPU_OK) return st;
  int e = lib.run((int)op, (void *)(uintptr_t)temp, temp_bytes, (const void *)(uintptr_t)in,
                  (void *)(uintptr_t)scratch, (void *)(uintptr_t)out, (long long)n, (long long)k, (void *)s);
  return e ? cuda_error(e, "run", op, n) : GPU_OK;
}
