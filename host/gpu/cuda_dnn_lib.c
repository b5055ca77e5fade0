/* cuda_dnn_lib.c: finds and opens cuDNN 9 (libcudnn.so.9) with dlopen, resolves the backend
 * API's entry points and creates the one handle (cuda_dnn_lib.h says where it looks). cuDNN is
 * not part of the CUDA toolkit: on most machines it comes with PyTorch's wheel (nvidia-cudnn-cu*)
 * inside site-packages, which the system loader does not search, hence the Python step. */
#include "cuda_dnn_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

cudnn_lib cudnn;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int opened;             /* 0: not tried, 1: ok, -1: failed (status and message kept) */
static gpu_status open_status;
static char open_message[4096];

#define LIBNAME "libcudnn.so.9"

/* cuDNN 9's libcudnn.so.9 is a shim that dlopens its sub-libraries by name on first use; opened
 * from a directory the loader does not search (a wheel's), they would not be found. Loading them
 * from the shim's directory first makes the shim's dlopen find them by soname. Best effort: an
 * absent one is the shim's to report (CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED) if it needs it. */
static void preload_sublibraries(const char *dir) {
  static const char *const subs[] = {"libcudnn_graph.so.9", "libcudnn_ops.so.9",
                                     "libcudnn_heuristic.so.9", "libcudnn_engines_precompiled.so.9",
                                     "libcudnn_engines_runtime_compiled.so.9", "libcudnn_cnn.so.9",
                                     "libcudnn_adv.so.9"};
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    char p[1400];
    if (snprintf(p, sizeof p, "%s/%s", dir, subs[i]) >= (int)sizeof p) continue;
    if (access(p, F_OK) == 0) (void)dlopen(p, RTLD_NOW | RTLD_LOCAL);
  }
}

static void dir_of(const char *path, char *dir, size_t len) {
  snprintf(dir, len, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else snprintf(dir, len, ".");
}

/* Opens path (a file, or a directory holding LIBNAME); on failure appends "\n  path: why". */
static void *open_path(const char *path, char *report, size_t cap) {
  char file[1200];
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) snprintf(file, sizeof file, "%s/%s", path, LIBNAME);
  else snprintf(file, sizeof file, "%s", path);
  char dir[1200];
  dir_of(file, dir, sizeof dir);
  if (strchr(file, '/')) preload_sublibraries(dir);
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    size_t used = strlen(report);
    snprintf(report + used, cap - used, "\n  %s: %s", file, why ? why : "cannot be opened");
    return NULL;
  }
  if (snprintf(cudnn.path, sizeof cudnn.path, "%s", file) >= (int)sizeof cudnn.path)
    cudnn.path[sizeof cudnn.path - 2] = '~'; /* cut: marked, still names the place */
  return h;
}

/* TILEBENCH_PYTHON names the interpreter tilebench's torch and Triton steps use; when it names a
 * libpython instead, python3 is asked. */
void cudnn_python_lib_dir(char *out, size_t len, char *report, size_t cap) {
  out[0] = '\0';
  const char *env = getenv("TILEBENCH_PYTHON");
  const char *interp = env && *env && !strstr(env, "libpython") ? env : "python3";
  size_t used = strlen(report);
  if (strchr(interp, '\'')) {
    snprintf(report + used, cap - used, "\n  python (%s): a quote in the interpreter's name", interp);
    return;
  }
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null",
           interp);
  FILE *f = popen(cmd, "r");
  char line[1024] = "";
  int ok = f && fgets(line, sizeof line, f) != NULL;
  int rc = f ? pclose(f) : -1;
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
  if (!ok || rc != 0 || n == 0) {
    snprintf(report + used, cap - used, "\n  %s: no nvidia.cudnn package (import failed)", interp);
    return;
  }
  snprintf(out, len, "%s/lib", line);
}

static gpu_status find_library(void) {
  char report[3072] = "";
  const char *env = getenv("TILEBENCH_CUDNN_LIB");
  if (env && *env) {
    cudnn.lib = open_path(env, report, sizeof report);
    if (!cudnn.lib)
      return gpu_set_error(GPU_ERR_NO_LIBRARY, "cuDNN not found: TILEBENCH_CUDNN_LIB=%s (set, so "
                           "nowhere else is searched):%s", env, report);
    return GPU_OK;
  }
  static const char *const names[] = {LIBNAME, NULL};
  cudnn.lib = gpu_dlopen_first(names, cudnn.path, sizeof cudnn.path);
  if (cudnn.lib) return GPU_OK;
  snprintf(report, sizeof report, "%s", gpu_last_error()); /* names the places it tried */
  char dir[1024];
  cudnn_python_lib_dir(dir, sizeof dir, report, sizeof report);
  if (dir[0]) cudnn.lib = open_path(dir, report, sizeof report);
  if (cudnn.lib) return GPU_OK;
  return gpu_set_error(GPU_ERR_NO_LIBRARY, "cuDNN 9 (%s) not found: %s", LIBNAME, report);
}

static gpu_status resolve(void) {
  struct { void **slot; const char *sym; } syms[] = {
    {(void **)&cudnn.get_version, "cudnnGetVersion"},
    {(void **)&cudnn.error_string, "cudnnGetErrorString"},
    {(void **)&cudnn.create, "cudnnCreate"},
    {(void **)&cudnn.destroy, "cudnnDestroy"},
    {(void **)&cudnn.set_stream, "cudnnSetStream"},
    {(void **)&cudnn.desc_create, "cudnnBackendCreateDescriptor"},
    {(void **)&cudnn.desc_destroy, "cudnnBackendDestroyDescriptor"},
    {(void **)&cudnn.finalize, "cudnnBackendFinalize"},
    {(void **)&cudnn.set, "cudnnBackendSetAttribute"},
    {(void **)&cudnn.get, "cudnnBackendGetAttribute"},
    {(void **)&cudnn.execute, "cudnnBackendExecute"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(cudnn.lib, syms[i].sym);
    if (!*syms[i].slot)
      return gpu_set_error(GPU_ERR_NO_LIBRARY, "cuDNN (%s) lacks %s: not cuDNN 9's library",
                           cudnn.path, syms[i].sym);
  }
  cudnn.last_error = (tb_cudnnGetLastErrorString_fn *)dlsym(cudnn.lib, "cudnnGetLastErrorString");
  /* Optional: only pooling needs them (the shim exports them in 9.x; a future cuDNN may not). */
  struct { void **slot; const char *sym; } legacy[] = {
    {(void **)&cudnn.pool.create_tensor, "cudnnCreateTensorDescriptor"},
    {(void **)&cudnn.pool.set_tensor_4d, "cudnnSetTensor4dDescriptor"},
    {(void **)&cudnn.pool.destroy_tensor, "cudnnDestroyTensorDescriptor"},
    {(void **)&cudnn.pool.create_pooling, "cudnnCreatePoolingDescriptor"},
    {(void **)&cudnn.pool.set_pooling_2d, "cudnnSetPooling2dDescriptor"},
    {(void **)&cudnn.pool.destroy_pooling, "cudnnDestroyPoolingDescriptor"},
    {(void **)&cudnn.pool.forward, "cudnnPoolingForward"},
  };
  cudnn.pool.missing = NULL;
  for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++) {
    *legacy[i].slot = dlsym(cudnn.lib, legacy[i].sym);
    if (!*legacy[i].slot && !cudnn.pool.missing) cudnn.pool.missing = legacy[i].sym;
  }
  size_t v = cudnn.get_version();
  if (v < 90000 || v >= 100000)
    return gpu_set_error(GPU_ERR_NO_LIBRARY, "cuDNN (%s) is version %zu; tilebench speaks cuDNN 9's "
                         "backend API", cudnn.path, v);
  return GPU_OK;
}

/* The handle lives until the process ends; destroying it at exit keeps LeakSanitizer's report
 * to real leaks (as cuda_blas.c does for cuBLASLt). */
static void destroy_at_exit(void) {
  pthread_mutex_lock(&lock);
  if (cudnn.handle && cudnn.destroy) cudnn.destroy(cudnn.handle);
  cudnn.handle = NULL;
  pthread_mutex_unlock(&lock);
}

gpu_status cudnn_open(void) {
  pthread_mutex_lock(&lock);
  if (opened) {
    gpu_status st = open_status;
    if (opened < 0) gpu_set_error(st, "%s", open_message);
    pthread_mutex_unlock(&lock);
    return st;
  }
  gpu_status st = find_library();
  if (st == GPU_OK) st = resolve();
  opened = st == GPU_OK ? 1 : -1;
  open_status = st;
  if (st != GPU_OK) snprintf(open_message, sizeof open_message, "%s", gpu_last_error());
  pthread_mutex_unlock(&lock);
  return st;
}

gpu_status cudnn_get_handle(tb_cudnnHandle_t *out) {
  *out = NULL;
  gpu_status st = cudnn_open();
  if (st != GPU_OK) return st;
  pthread_mutex_lock(&lock);
  if (!cudnn.handle) {
    /* binds the device current on this thread: the backend's, made current by the caller */
    tb_cudnnStatus_t cs = cudnn.create(&cudnn.handle);
    if (cs != TB_CUDNN_STATUS_SUCCESS) {
      cudnn.handle = NULL;
      char where[1100];
      snprintf(where, sizeof where, "the handle (%s)", cudnn.path);
      st = cudnn_fail("cudnnCreate", cs, where);
    } else {
      static int registered;
      if (!registered) registered = atexit(destroy_at_exit) == 0;
    }
  }
  *out = cudnn.handle;
  pthread_mutex_unlock(&lock);
  return st;
}

gpu_status cudnn_fail(const char *api, tb_cudnnStatus_t st, const char *what) {
  const char *name = cudnn.error_string ? cudnn.error_string(st) : NULL;
  char said[512] = "";
  if (cudnn.last_error) cudnn.last_error(said, sizeof said);
  size_t n = strlen(said);
  while (n && (said[n - 1] == '\n' || said[n - 1] == '\r')) said[--n] = '\0';
  /* 1000-1999: cuDNN cannot work here (a sub-library missing or mismatched, a runtime
   * prerequisite absent): the library is unusable, as if absent */
  gpu_status code = st >= 2000 && st < 4000 ? GPU_ERR_INVALID
                  : st >= 1000 && st < 2000 ? GPU_ERR_NO_LIBRARY : GPU_ERR_OTHER;
  return gpu_set_error(code, "%s: %s (%d)%s%s%s%s", api, name ? name : "cuDNN error", st,
                       what && *what ? " for " : "", what ? what : "", said[0] ? "; cuDNN says: " : "",
                       said);
}

void cudnn_reset_for_tests(void) {
  destroy_at_exit();
  pthread_mutex_lock(&lock);
  void *lib = cudnn.lib;
  memset(&cudnn, 0, sizeof cudnn);
  (void)lib; /* left open: a library's static state may be referenced by atexit handlers */
  opened = 0;
  pthread_mutex_unlock(&lock);
}

gpu_status cudnn_legacy_pooling(void) {
  gpu_status st = cudnn_open();
  if (st != GPU_OK) return st;
  if (cudnn.pool.missing)
    return gpu_set_error(GPU_ERR_NO_LIBRARY, "cuDNN (%s) lacks %s: its legacy pooling API is not exported",
                         cudnn.path, cudnn.pool.missing);
  return GPU_OK;
}
