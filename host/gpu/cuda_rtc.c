/* cuda_rtc.c: CUDA's run-time compiler table (gpu_compiler): CUDA C to a cubin (sm_XY) or PTX
 * (compute_XY) with NVRTC, opened with dlopen. rtc.c keys, caches and verifies what it produces. */
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpu.h"

/* ---- NVRTC, opened on first use ------------------------------------------------------------ */

#define NVRTC_SYMBOLS(X)                                                                        \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)          \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize)  \
  X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX)
#define DECLARE_POINTER(name) static __typeof__(name) *p_##name;
NVRTC_SYMBOLS(DECLARE_POINTER)

static int nvrtc_state; /* 0 not tried, 1 ready, -1 absent (nvrtc_message says why) */
static char nvrtc_message[4096];
static int nvrtc_major, nvrtc_minor;

static gpu_status nvrtc_open(void) {
  if (nvrtc_state == 1) return GPU_OK;
  if (nvrtc_state == -1) return gpu_set_error(GPU_ERR_NO_LIBRARY, "%s", nvrtc_message);
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
  char path[512];
  void *lib = gpu_dlopen_first(names, path, sizeof path);
  const char *missing = NULL;
  if (lib) {
#define RESOLVE(name) \
  if ((p_##name = (__typeof__(p_##name))dlsym(lib, #name)) == NULL && missing == NULL) missing = #name;
    NVRTC_SYMBOLS(RESOLVE)
#undef RESOLVE
    if (missing) gpu_set_error(GPU_ERR_NO_LIBRARY, "NVRTC at %s lacks %s (too old: CUDA 11.1+ is needed)", path,
                               missing);
  }
  if (lib == NULL || missing) {
    snprintf(nvrtc_message, sizeof nvrtc_message, "%s", gpu_last_error());
    nvrtc_state = -1;
    return GPU_ERR_NO_LIBRARY;
  }
  if (p_nvrtcVersion(&nvrtc_major, &nvrtc_minor) != NVRTC_SUCCESS) nvrtc_major = nvrtc_minor = 0;
  nvrtc_state = 1;
  return GPU_OK;
}

static gpu_status nvrtc_version(int *major, int *minor) {
  gpu_status st = nvrtc_open();
  if (st != GPU_OK) return st;
  *major = nvrtc_major;
  *minor = nvrtc_minor;
  return GPU_OK;
}


/* sm_90, sm_90a, sm_100f, compute_90 ... */
static int valid_arch(const char *arch, int *cubin) {
  const char *digits;
  if (strncmp(arch, "sm_", 3) == 0) *cubin = 1, digits = arch + 3;
  else if (strncmp(arch, "compute_", 8) == 0) *cubin = 0, digits = arch + 8;
  else return 0;
  size_t n = strspn(digits, "0123456789");
  if (n < 2 || n > 3) return 0;
  return digits[n] == '\0' || ((digits[n] == 'a' || digits[n] == 'f') && digits[n + 1] == '\0');
}


static const char *cuda_include_dir(void) {
  static char dir[1024];
  struct stat st;
  const char *home = getenv("CUDA_HOME");
  if (home && *home) {
    snprintf(dir, sizeof dir, "%s/include", home);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  }
  snprintf(dir, sizeof dir, "/usr/local/cuda/include");
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  return NULL;
}

static int has_std_option(const char *const *options, int n) {
  for (int i = 0; i < n; i++)
    if (strncmp(options[i], "-std", 4) == 0 || strncmp(options[i], "--std", 5) == 0) return 1;
  return 0;
}


/* Compiles with NVRTC; fills image/size/log of out. */
static gpu_status nvrtc_build(const char *source, const char *name, const rtc_header *headers, int n_headers,
                              const char *const *options, int n_options, const rtc_target *t, rtc_result *out) {
  int cubin = !t->text_image;
  const char **header_text = calloc((size_t)n_headers + 1, sizeof *header_text);
  const char **header_name = calloc((size_t)n_headers + 1, sizeof *header_name);
  if (header_text == NULL || header_name == NULL) {
    free(header_text);
    free(header_name);
    return gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory");
  }
  for (int i = 0; i < n_headers; i++) header_text[i] = headers[i].source, header_name[i] = headers[i].name;
  nvrtcProgram prog = NULL;
  nvrtcResult r = p_nvrtcCreateProgram(&prog, source, name, n_headers, header_text, header_name);
  free(header_text);
  free(header_name);
  if (r != NVRTC_SUCCESS)
    return gpu_set_error(r == NVRTC_ERROR_OUT_OF_MEMORY ? GPU_ERR_OOM : GPU_ERR_OTHER,
                         "nvrtcCreateProgram: %s: %s", name, p_nvrtcGetErrorString(r));

  nvrtcResult compiled = p_nvrtcCompileProgram(prog, n_options, (const char **)options);
  size_t log_size = 0;
  if (p_nvrtcGetProgramLogSize(prog, &log_size) != NVRTC_SUCCESS) log_size = 0;
  out->log = malloc(log_size + 1);
  if (out->log == NULL) {
    p_nvrtcDestroyProgram(&prog);
    return gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory");
  }
  out->log[0] = '\0';
  if (log_size > 0 && p_nvrtcGetProgramLog(prog, out->log) != NVRTC_SUCCESS) out->log[0] = '\0';
  out->log[log_size] = '\0';

  gpu_status st = GPU_OK;
  if (compiled != NVRTC_SUCCESS) {
    /* A source that does not compile, or an option NVRTC rejects: both are the caller's input. */
    int input = compiled == NVRTC_ERROR_COMPILATION || compiled == NVRTC_ERROR_INVALID_OPTION;
    st = gpu_set_error(input ? GPU_ERR_COMPILE : GPU_ERR_OTHER, "nvrtcCompileProgram: %s: %s\n%s", name,
                       p_nvrtcGetErrorString(compiled), out->log);
  } else {
    size_t size = 0;
    r = cubin ? p_nvrtcGetCUBINSize(prog, &size) : p_nvrtcGetPTXSize(prog, &size);
    if (r != NVRTC_SUCCESS || size == 0) {
      st = gpu_set_error(GPU_ERR_OTHER, "%s: %s: %s", cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", name,
                         r != NVRTC_SUCCESS ? p_nvrtcGetErrorString(r) : "empty image");
    } else if ((out->image = malloc(size)) == NULL) {
      st = gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory for a %zu-byte image", size);
    } else if ((r = cubin ? p_nvrtcGetCUBIN(prog, out->image) : p_nvrtcGetPTX(prog, out->image)) !=
               NVRTC_SUCCESS) {
      st = gpu_set_error(GPU_ERR_OTHER, "%s: %s: %s", cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", name,
                         p_nvrtcGetErrorString(r));
    } else {
      out->size = size;
    }
  }
  p_nvrtcDestroyProgram(&prog);
  return st;
}

static gpu_status nvrtc_target(const char *program, const char *arch, rtc_target *t) {
  int cubin = 0;
  if (!valid_arch(arch, &cubin))
    return gpu_set_error(GPU_ERR_INVALID, "rtc_compile: %s: invalid architecture '%s' (expected sm_XY or "
                         "compute_XY, e.g. sm_90, sm_90a)", program, arch);
  snprintf(t->extension, sizeof t->extension, "%s", cubin ? "cubin" : "ptx");
  t->text_image = !cubin;
  return GPU_OK;
}

/* The target, the language level (unless the caller set one) and the toolkit's headers. */
static int nvrtc_implicit_options(const char *arch, const char **opts, int n, char *buf, size_t buf_len) {
  size_t used = 0;
  int n_caller = n;
  /* Copies text into buf and appends it to opts; an option that does not fit is left out (the
   * buffer is sized for three paths of PATH_MAX). */
#define ADD_OPTION(...)                                                                      \
  do {                                                                                       \
    int len_ = snprintf(buf + used, buf_len - used, __VA_ARGS__);                            \
    if (len_ >= 0 && (size_t)len_ < buf_len - used) {                                        \
      opts[n++] = buf + used;                                                                \
      used += (size_t)len_ + 1;                                                              \
    }                                                                                        \
  } while (0)
  ADD_OPTION("--gpu-architecture=%s", arch);
  if (!has_std_option(opts, n_caller)) opts[n++] = "-std=c++17";
  const char *include_dir = cuda_include_dir();
  if (include_dir) {
    /* NVRTC has no built-in cuda_fp16.h / cuda_bf16.h / cuda_fp8.h: they come from the toolkit,
     * and CUDA 13 keeps libcu++ (<cuda/std/...>, <nv/target>) under include/cccl. */
    struct stat st_cccl;
    char cccl[1100];
    ADD_OPTION("-I%s", include_dir);
    snprintf(cccl, sizeof cccl, "%s/cccl", include_dir);
    if (stat(cccl, &st_cccl) == 0 && S_ISDIR(st_cccl.st_mode)) ADD_OPTION("-I%s/cccl", include_dir);
  }
#undef ADD_OPTION
  return n;
}

extern const gpu_compiler gpu_cuda_compiler; /* cuda.c's backend table points here */
const gpu_compiler gpu_cuda_compiler = {
  .name = "nvrtc",
  .default_arch = "sm_90",
  .version = nvrtc_version,
  .target = nvrtc_target,
  .implicit_options = nvrtc_implicit_options,
  .build = nvrtc_build,
};
