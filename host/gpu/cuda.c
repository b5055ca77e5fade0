/* cuda.c: the CUDA Driver API behind gpu.h's vtable. libcuda.so.1 is opened with dlopen, so
 * cuda.h provides types only and nothing links it.
 *
 * Each entry point is taken by the exported name the headers map it to (cuMemAlloc ->
 * cuMemAlloc_v2, the legacy default-stream variants), whose ABI is the header's prototype we
 * type the pointer with. cuGetProcAddress is the fallback only: at the headers' version it can
 * return a newer ABI under the same base name (CUDA 13: cuCtxSynchronize is then
 * cuCtxSynchronize_v2, which takes a context), which a void-prototype call would break. */
#define _GNU_SOURCE /* dladdr */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "dnn.h"
#include "cupti.h"
#include "cuda_errors.h"
#include "gpu.h"

/* X(name, required): every driver entry point used. Optional ones may be NULL (older driver). */
#define CU_SYMBOLS(X)                                                                          \
  X(cuDeviceGetCount, 1) X(cuDeviceGet, 1) X(cuDeviceGetName, 1) X(cuDeviceGetAttribute, 1)    \
  X(cuDeviceTotalMem, 1) X(cuDeviceGetUuid, 1) X(cuDeviceGetPCIBusId, 1)                       \
  X(cuDevicePrimaryCtxRetain, 1) X(cuCtxSetCurrent, 1) X(cuCtxGetCurrent, 1)                   \
  X(cuCtxGetDevice, 1) X(cuCtxSynchronize, 1) X(cuMemAlloc, 1) X(cuMemFree, 1)                 \
  X(cuMemGetInfo, 1) X(cuMemsetD8Async, 1) X(cuMemsetD32Async, 1) X(cuMemcpyHtoD, 1)           \
  X(cuMemcpyDtoH, 1) X(cuMemcpyDtoDAsync, 1) X(cuModuleLoadDataEx, 1) X(cuModuleUnload, 1)     \
  X(cuModuleGetFunction, 1) X(cuFuncGetAttribute, 1) X(cuFuncSetAttribute, 1)                  \
  X(cuLaunchKernel, 1) X(cuStreamCreate, 1) X(cuStreamDestroy, 1) X(cuStreamSynchronize, 1)    \
  X(cuStreamQuery, 1) X(cuEventCreate, 1) X(cuEventDestroy, 1) X(cuEventRecord, 1)             \
  X(cuEventSynchronize, 1) X(cuEventElapsedTime, 1) X(cuStreamBeginCapture, 1)                 \
  X(cuStreamEndCapture, 1) X(cuGraphInstantiateWithFlags, 1) X(cuGraphLaunch, 1)               \
  X(cuGraphExecDestroy, 1) X(cuGraphDestroy, 1) X(cuFuncGetParamInfo, 0)                     \
  X(cuEventRecordWithFlags, 0) X(cuGraphGetNodes, 0) X(cuGraphNodeGetType, 0)                  \
  X(cuGraphEventRecordNodeGetEvent, 0) X(cuGraphExecEventRecordNodeSetEvent, 0)               \
  X(cuTensorMapEncodeTiled, 0) X(cuStreamWaitEvent, 0)

/* The pointer's type is the header prototype of the macro-expanded name (cuMemAlloc_v2). */
#define DECLARE_POINTER(name, required) static __typeof__(name) *p_##name;
CU_SYMBOLS(DECLARE_POINTER)
/* Resolved before cuInit, by dlsym: their names are unversioned. */
static __typeof__(cuInit) *p_cuInit;
static __typeof__(cuDriverGetVersion) *p_cuDriverGetVersion;
static __typeof__(cuGetErrorName) *p_cuGetErrorName;
static __typeof__(cuGetErrorString) *p_cuGetErrorString;

#define STRINGIFY(x) #x
#define EXPANDED_NAME(x) STRINGIFY(x)
static const struct cu_symbol {
  const char *base;      /* what cuGetProcAddress takes */
  const char *versioned; /* the exported symbol the headers map it to, for dlsym */
  void **slot;
  int required;
} cu_symbols[] = {
#define SYMBOL_ENTRY(name, required) {#name, EXPANDED_NAME(name), (void **)&p_##name, required},
  CU_SYMBOLS(SYMBOL_ENTRY)
};

static void *libcuda;
static int init_state; /* 0 not tried, 1 ready, -1 failed (init_status/init_message hold why) */
static gpu_status init_status;
static char init_message[1024];
static char driver_path[512];
static int driver_version;

/* ---- errors ------------------------------------------------------------------------------- */

static int name_is(const char *name, const char *const *list) {
  for (; *list; list++)
    if (strcmp(name, *list) == 0) return 1;
  return 0;
}

/* THE list of sticky errors: after one the context is unusable and the rest of the process must
 * not touch it (the campaign replaces the worker). A destroyed context is as unusable. */
static const char *const sticky_errors[] = {
  "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
  "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_LAUNCH_FAILED",
  "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT",
  "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED", NULL};
/* Wrong input rather than a broken device: a wrong image, a missing name, a bad launch shape. */
static const char *const invalid_errors[] = {
  "CUDA_ERROR_NOT_FOUND", "CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
  "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", NULL};

gpu_status cuda_error_status(int result, const char *name) {
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return GPU_ERR_OOM;
  if (name == NULL) return GPU_ERR_OTHER;
  if (name_is(name, sticky_errors)) return GPU_ERR_FAULT;
  if (strncmp(name, "CUDA_ERROR_INVALID_", 19) == 0 || name_is(name, invalid_errors))
    return GPU_ERR_INVALID;
  return GPU_ERR_OTHER;
}

/* What cuInit can answer when the library cannot describe its own errors (the toolkit's stub
 * libcuda, found first on a misconfigured loader path, knows no error names). */
static const struct known_error {
  CUresult code;
  const char *name, *text;
} init_errors[] = {
  {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
  {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
   "system has unsupported display driver / cuda driver combination"},
  {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
};

/* Records "api: CUDA_ERROR_NAME (text)<detail>" and returns the classified status. */
static gpu_status cu_error(CUresult r, const char *api, const char *detail) {
  const char *name = NULL, *text = NULL;
  char unknown[32];
  if (p_cuGetErrorName == NULL || p_cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) name = NULL;
  if (p_cuGetErrorString == NULL || p_cuGetErrorString(r, &text) != CUDA_SUCCESS || text == NULL) text = NULL;
  for (size_t i = 0; i < sizeof init_errors / sizeof init_errors[0] && (!name || !text); i++)
    if (init_errors[i].code == r) {
      if (!name) name = init_errors[i].name;
      if (!text) text = init_errors[i].text;
    }
  if (name == NULL) {
    snprintf(unknown, sizeof unknown, "CUDA error %d", (int)r);
    name = unknown;
  }
  if (text == NULL) text = "no description";
  return gpu_set_api_error(cuda_error_status((int)r, name), api, "%s: %s (%s)%s", api, name, text, detail ? detail : "");
}

static gpu_status cu_check(CUresult r, const char *api) {
  return r == CUDA_SUCCESS ? GPU_OK : cu_error(r, api, NULL);
}
/* CU(cuMemAlloc, (&p, n)): calls the resolved entry point and names it in any error. */
#define CU(fn, args) cu_check(p_##fn args, #fn)

/* Every entry point but init() goes through this: no pointer is used before it is resolved. */
static gpu_status not_ready(void) {
  if (init_state == 0) return gpu_set_error(GPU_ERR_NO_DRIVER, "the CUDA backend was used before init()");
  return gpu_set_error(init_status, "%s", init_message);
}
#define REQUIRE_DRIVER()                    \
  do {                                      \
    if (init_state != 1) return not_ready(); \
  } while (0)

/* ---- initialisation ----------------------------------------------------------------------- */

static gpu_status init_failed(gpu_status st) {
  snprintf(init_message, sizeof init_message, "%s", gpu_last_error());
  init_status = st;
  init_state = -1;
  return st;
}

/* Bounded copy of a message (a dlerror text may be long). */
static void copy_text(char *dst, size_t len, const char *src) {
  size_t n = strlen(src);
  if (n >= len) n = len - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static void *open_libcuda(char *why, size_t why_len) {
  /* An explicit directory first (tests, unusual installs), then the loader's own search. */
  const char *dir = getenv("TILEBENCH_CUDA_LIB_DIR");
  why[0] = '\0';
  if (dir && *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/libcuda.so.1", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    /* Report this failure only if the file is there but broken; else the loader's answer. */
    FILE *f = fopen(path, "rb");
    if (f) {
      fclose(f);
      copy_text(why, why_len, e ? e : path);
    }
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  const char *e = dlerror();
  if (why[0] == '\0') {
    /* dlerror() starts with the name again ("libcuda.so.1: cannot open ..."): drop it. */
    const char *msg = e ? e : "cannot be opened";
    if (strncmp(msg, "libcuda.so.1: ", 14) == 0) msg += 14;
    snprintf(why, why_len, "%s; searched %s%sthe system loader's path for libcuda.so.1, which the "
             "NVIDIA driver installs", msg, dir && *dir ? dir : "", dir && *dir ? " ($TILEBENCH_CUDA_LIB_DIR) and " : "");
  }
  return NULL;
}

static gpu_status resolve_symbols(void) {
  __typeof__(cuGetProcAddress) *get_proc = (__typeof__(cuGetProcAddress) *)dlsym(libcuda,
                                                                                 "cuGetProcAddress_v2");
  int want = driver_version < CUDA_VERSION ? driver_version : CUDA_VERSION;
  for (size_t i = 0; i < sizeof cu_symbols / sizeof cu_symbols[0]; i++) {
    const struct cu_symbol *s = &cu_symbols[i];
    /* The exported name the headers map to first: its ABI is the prototype we call it with.
     * cuGetProcAddress at the headers' version can hand back a newer ABI under the same base
     * name (CUDA 13: cuCtxSynchronize -> cuCtxSynchronize_v2(CUcontext)), so it is only the
     * fallback for drivers that do not export the versioned name. */
    void *fn = dlsym(libcuda, s->versioned);
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (fn == NULL && get_proc != NULL &&
        (get_proc(s->base, &fn, want, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
         found != CU_GET_PROC_ADDRESS_SUCCESS))
      fn = NULL;
    if (fn == NULL && s->required)
      return gpu_set_error(GPU_ERR_NO_DRIVER,
                           "no usable CUDA driver (%s, version %d, lacks %s; the headers are CUDA %d)",
                           driver_path, driver_version, s->versioned, CUDA_VERSION);
    *s->slot = fn;
  }
  return GPU_OK;
}

static gpu_status cuda_init(void) {
  if (init_state == 1) return GPU_OK;
  if (init_state == -1) return gpu_set_error(init_status, "%s", init_message);
  char why[768];
  libcuda = open_libcuda(why, sizeof why);
  if (libcuda == NULL)
    return init_failed(gpu_set_error(GPU_ERR_NO_DRIVER, "no CUDA driver found (libcuda.so.1: %s)", why));
  p_cuInit = (__typeof__(p_cuInit))dlsym(libcuda, "cuInit");
  p_cuDriverGetVersion = (__typeof__(p_cuDriverGetVersion))dlsym(libcuda, "cuDriverGetVersion");
  p_cuGetErrorName = (__typeof__(p_cuGetErrorName))dlsym(libcuda, "cuGetErrorName");
  p_cuGetErrorString = (__typeof__(p_cuGetErrorString))dlsym(libcuda, "cuGetErrorString");
  Dl_info info;
  snprintf(driver_path, sizeof driver_path, "libcuda.so.1");
  if (p_cuInit && dladdr((void *)p_cuInit, &info) && info.dli_fname)
    snprintf(driver_path, sizeof driver_path, "%s", info.dli_fname);
  if (!p_cuInit || !p_cuDriverGetVersion || !p_cuGetErrorName || !p_cuGetErrorString)
    return init_failed(gpu_set_error(GPU_ERR_NO_DRIVER, "no CUDA driver found (libcuda.so.1: %s is not a "
                                     "CUDA driver: cuInit/cuGetErrorName missing)", driver_path));
  CUresult r = p_cuInit(0);
  if (r != CUDA_SUCCESS) {
    cu_error(r, "cuInit", NULL);
    return init_failed(GPU_ERR_NO_DRIVER); /* no device, driver/library mismatch, ... */
  }
  if (p_cuDriverGetVersion(&driver_version) != CUDA_SUCCESS) driver_version = 0;
  gpu_status st = resolve_symbols();
  if (st != GPU_OK) return init_failed(st);
  init_state = 1;
  return GPU_OK;
}

static gpu_status cuda_version(gpu_version_info *v) {
  REQUIRE_DRIVER();
  memset(v, 0, sizeof *v);
  v->driver_version = driver_version;
  snprintf(v->backend, sizeof v->backend, "cuda");
  snprintf(v->driver_path, sizeof v->driver_path, "%s", driver_path);
  return GPU_OK;
}

/* ---- devices ------------------------------------------------------------------------------- */

static gpu_status cuda_device_count(int *n) {
  REQUIRE_DRIVER();
  return CU(cuDeviceGetCount, (n));
}

static gpu_status get_device(int dev, CUdevice *d) {
  int n = 0;
  gpu_status st = CU(cuDeviceGetCount, (&n));
  if (st != GPU_OK) return st;
  if (dev < 0 || dev >= n)
    return gpu_set_error(GPU_ERR_INVALID, "device %d does not exist (%d CUDA device%s)", dev, n,
                         n == 1 ? "" : "s");
  return CU(cuDeviceGet, (d, dev));
}

/* Integer attributes, as data: where each lands in gpu_device_props and whether it must exist. */
enum { AS_INT, AS_SIZE };
static const struct device_attribute {
  CUdevice_attribute attr;
  size_t offset;
  int type;
  int required; /* clocks are deprecated attributes: a driver may drop them (0 then) */
} device_attributes[] = {
  {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(gpu_device_props, cc_major), AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(gpu_device_props, cc_minor), AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(gpu_device_props, sm_count), AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(gpu_device_props, warp_size), AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(gpu_device_props, max_threads_per_block), AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, offsetof(gpu_device_props, max_threads_per_sm),
   AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, offsetof(gpu_device_props, regs_per_sm), AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, offsetof(gpu_device_props, l2_bytes), AS_SIZE, 1},
  {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, offsetof(gpu_device_props, clock_khz), AS_INT, 0},
  {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, offsetof(gpu_device_props, mem_clock_khz), AS_INT, 0},
  {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, offsetof(gpu_device_props, mem_bus_width_bits), AS_INT, 1},
  {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, offsetof(gpu_device_props, smem_per_block), AS_SIZE, 1},
  {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, offsetof(gpu_device_props, smem_per_block_optin),
   AS_SIZE, 1},
  {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, offsetof(gpu_device_props, smem_per_sm),
   AS_SIZE, 1},
};

static const char *family_of(int major, int minor) {
  if (major == 8 && minor == 9) return "ada";
  if (major == 8) return "ampere";
  if (major == 9) return "hopper";
  if (major == 10 || major == 11 || major == 12) return "blackwell";
  if (major == 7 && minor == 5) return "turing";
  if (major == 7) return "volta";
  if (major == 6) return "pascal";
  return "unknown";
}

static gpu_status cuda_device_props(int dev, gpu_device_props *p) {
  REQUIRE_DRIVER();
  CUdevice d;
  gpu_status st = get_device(dev, &d);
  if (st != GPU_OK) return st;
  memset(p, 0, sizeof *p);
  p->index = dev;
  if ((st = CU(cuDeviceGetName, (p->name, (int)sizeof p->name, d))) != GPU_OK) return st;
  for (size_t i = 0; i < sizeof device_attributes / sizeof device_attributes[0]; i++) {
    const struct device_attribute *a = &device_attributes[i];
    int value = 0;
    CUresult r = p_cuDeviceGetAttribute(&value, a->attr, d);
    if (r != CUDA_SUCCESS) {
      if (a->required) return cu_error(r, "cuDeviceGetAttribute", NULL);
      value = 0;
    }
    if (a->type == AS_INT) *(int *)((char *)p + a->offset) = value;
    else *(size_t *)((char *)p + a->offset) = (size_t)value;
  }
  if ((st = CU(cuDeviceTotalMem, (&p->total_mem, d))) != GPU_OK) return st;
  if ((st = CU(cuDeviceGetPCIBusId, (p->pci_bus_id, (int)sizeof p->pci_bus_id, d))) != GPU_OK) return st;
  CUuuid u;
  if ((st = CU(cuDeviceGetUuid, (&u, d))) != GPU_OK) return st;
  const unsigned char *b = (const unsigned char *)u.bytes;
  snprintf(p->uuid, sizeof p->uuid,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
           b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  snprintf(p->arch, sizeof p->arch, "sm_%d%d", p->cc_major, p->cc_minor);
  snprintf(p->family, sizeof p->family, "%s", family_of(p->cc_major, p->cc_minor));
  /* Double data rate: two transfers per memory clock over the whole bus. */
  p->peak_dram_gbs = 2.0 * (double)p->mem_clock_khz * 1e3 * (double)p->mem_bus_width_bits / 8.0 / 1e9;
  return GPU_OK;
}

#define MAX_DEVICES 64
static CUcontext primary[MAX_DEVICES]; /* retained once, kept for the process's life */

static gpu_status cuda_set_device(int dev) {
  REQUIRE_DRIVER();
  CUdevice d;
  gpu_status st = get_device(dev, &d);
  if (st != GPU_OK) return st;
  if (dev >= MAX_DEVICES) return gpu_set_error(GPU_ERR_INVALID, "device %d: at most %d devices are supported",
                                               dev, MAX_DEVICES);
  if (primary[dev] == NULL && (st = CU(cuDevicePrimaryCtxRetain, (&primary[dev], d))) != GPU_OK) return st;
  return CU(cuCtxSetCurrent, (primary[dev]));
}

static gpu_status cuda_current_device(int *dev) {
  REQUIRE_DRIVER();
  CUdevice d;
  gpu_status st = CU(cuCtxGetDevice, (&d));
  if (st == GPU_OK) *dev = (int)d;
  return st;
}

static gpu_status cuda_synchronize(void) {
  REQUIRE_DRIVER();
  return CU(cuCtxSynchronize, ());
}

/* ---- memory -------------------------------------------------------------------------------- */

static gpu_status cuda_mem_alloc(gpu_ptr *p, size_t bytes) {
  REQUIRE_DRIVER();
  CUdeviceptr d = 0;
  CUresult r = p_cuMemAlloc(&d, bytes);
  if (r != CUDA_SUCCESS) {
    char detail[64];
    snprintf(detail, sizeof detail, " allocating %zu bytes", bytes);
    return cu_error(r, "cuMemAlloc", detail);
  }
  *p = (gpu_ptr)d;
  return GPU_OK;
}

static gpu_status cuda_mem_free(gpu_ptr p) {
  REQUIRE_DRIVER();
  return CU(cuMemFree, ((CUdeviceptr)p));
}

static gpu_status cuda_mem_info(size_t *free_bytes, size_t *total_bytes) {
  REQUIRE_DRIVER();
  return CU(cuMemGetInfo, (free_bytes, total_bytes));
}

static gpu_status cuda_memset8_async(gpu_ptr p, unsigned char value, size_t bytes, gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuMemsetD8Async, ((CUdeviceptr)p, value, bytes, (CUstream)s));
}

static gpu_status cuda_memset32_async(gpu_ptr p, uint32_t value, size_t count, gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuMemsetD32Async, ((CUdeviceptr)p, value, count, (CUstream)s));
}

static gpu_status cuda_copy_htod(gpu_ptr dst, const void *src, size_t bytes) {
  REQUIRE_DRIVER();
  return CU(cuMemcpyHtoD, ((CUdeviceptr)dst, src, bytes));
}

static gpu_status cuda_copy_dtoh(void *dst, gpu_ptr src, size_t bytes) {
  REQUIRE_DRIVER();
  return CU(cuMemcpyDtoH, (dst, (CUdeviceptr)src, bytes));
}

static gpu_status cuda_copy_dtod_async(gpu_ptr dst, gpu_ptr src, size_t bytes, gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuMemcpyDtoDAsync, ((CUdeviceptr)dst, (CUdeviceptr)src, bytes, (CUstream)s));
}

/* ---- modules and functions ----------------------------------------------------------------- */

/* A module owns its functions: gpu.h has no function_free, they go with module_unload. */
struct gpu_function {
  CUfunction fn;
  int dynamic_smem_limit; /* what was last set with MAX_DYNAMIC_SHARED_SIZE_BYTES; 0 = default */
  struct gpu_function *next;
  char name[];
};

struct gpu_module {
  CUmodule mod;
  struct gpu_function *functions;
};

static gpu_status cuda_module_load_image(gpu_module **m, const void *image, size_t size) {
  REQUIRE_DRIVER();
  *m = NULL;
  if (image == NULL || size == 0) return gpu_set_error(GPU_ERR_INVALID, "cuModuleLoadData: empty image");
  const unsigned char *b = image;
  static const unsigned char fatbin_magic[4] = {0x50, 0xed, 0x55, 0xba};
  int binary = (size >= 4 && memcmp(b, "\x7f" "ELF", 4) == 0) || (size >= 4 && memcmp(b, fatbin_magic, 4) == 0);
  char *text = NULL;
  if (!binary && memchr(image, '\0', size) == NULL) {
    /* PTX must be NUL-terminated for the driver: copy it if the caller's buffer is not. */
    if ((text = malloc(size + 1)) == NULL) return gpu_set_error(GPU_ERR_OOM, "cuModuleLoadData: out of host memory");
    memcpy(text, image, size);
    text[size] = '\0';
    image = text;
  }
  /* The JIT's error log names the PTX line when a PTX image does not assemble. */
  char jit_log[8192];
  jit_log[0] = '\0';
  CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {jit_log, (void *)(uintptr_t)sizeof jit_log};
  gpu_module *mod = calloc(1, sizeof *mod);
  if (mod == NULL) {
    free(text);
    return gpu_set_error(GPU_ERR_OOM, "cuModuleLoadData: out of host memory");
  }
  CUresult r = p_cuModuleLoadDataEx(&mod->mod, image, 2, opts, values);
  free(text);
  if (r != CUDA_SUCCESS) {
    free(mod);
    char detail[sizeof jit_log + 8];
    snprintf(detail, sizeof detail, "%s%s", jit_log[0] ? "\n" : "", jit_log);
    return cu_error(r, "cuModuleLoadData", detail);
  }
  *m = mod;
  return GPU_OK;
}

static gpu_status cuda_module_load_file(gpu_module **m, const char *path) {
  REQUIRE_DRIVER();
  *m = NULL;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return gpu_set_error(GPU_ERR_INVALID, "cannot open kernel image '%s': %s", path, strerror(errno));
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  do {
    if (len + 65536 > cap) {
      char *grown = realloc(buf, cap = cap * 2 + 65536);
      if (grown == NULL) {
        free(buf);
        fclose(f);
        return gpu_set_error(GPU_ERR_OOM, "reading '%s': out of host memory", path);
      }
      buf = grown;
    }
    n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
  } while (n > 0);
  int failed = ferror(f);
  fclose(f);
  if (failed) {
    free(buf);
    return gpu_set_error(GPU_ERR_INVALID, "cannot read kernel image '%s'", path);
  }
  buf[len] = '\0';
  gpu_status st = cuda_module_load_image(m, buf, len);
  free(buf);
  if (st != GPU_OK) {
    char msg[16384];
    snprintf(msg, sizeof msg, "%s", gpu_last_error());
    gpu_set_error(st, "%s: %s", path, msg);
  }
  return st;
}

static gpu_status cuda_module_unload(gpu_module *m) {
  REQUIRE_DRIVER();
  if (m == NULL) return GPU_OK;
  gpu_status st = CU(cuModuleUnload, (m->mod));
  for (struct gpu_function *f = m->functions, *next; f; f = next) {
    next = f->next;
    free(f);
  }
  free(m);
  return st;
}

static gpu_status cuda_function_get(gpu_function **out, gpu_module *m, const char *name) {
  REQUIRE_DRIVER();
  *out = NULL;
  for (struct gpu_function *f = m->functions; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *out = f;
      return GPU_OK;
    }
  CUfunction fn;
  CUresult r = p_cuModuleGetFunction(&fn, m->mod, name);
  if (r != CUDA_SUCCESS) {
    char detail[300];
    snprintf(detail, sizeof detail, " '%.256s'", name);
    return cu_error(r, "cuModuleGetFunction", detail);
  }
  size_t len = strlen(name);
  struct gpu_function *f = calloc(1, sizeof *f + len + 1);
  if (f == NULL) return gpu_set_error(GPU_ERR_OOM, "cuModuleGetFunction: out of host memory");
  f->fn = fn;
  memcpy(f->name, name, len + 1);
  f->next = m->functions;
  m->functions = f;
  *out = f;
  return GPU_OK;
}

static const struct function_attribute {
  CUfunction_attribute attr;
  size_t offset;
} function_attributes[] = {
  {CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(gpu_function_attrs, num_regs)},
  {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(gpu_function_attrs, static_smem_bytes)},
  {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(gpu_function_attrs, local_bytes)},
  {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, offsetof(gpu_function_attrs, const_bytes)},
  {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(gpu_function_attrs, max_threads_per_block)},
  {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, offsetof(gpu_function_attrs, max_dynamic_smem_bytes)},
  {CU_FUNC_ATTRIBUTE_PTX_VERSION, offsetof(gpu_function_attrs, ptx_version)},
  {CU_FUNC_ATTRIBUTE_BINARY_VERSION, offsetof(gpu_function_attrs, binary_version)},
};

static gpu_status cuda_function_attrs(gpu_function *f, gpu_function_attrs *a) {
  REQUIRE_DRIVER();
  memset(a, 0, sizeof *a);
  for (size_t i = 0; i < sizeof function_attributes / sizeof function_attributes[0]; i++) {
    gpu_status st = CU(cuFuncGetAttribute, ((int *)((char *)a + function_attributes[i].offset),
                                            function_attributes[i].attr, f->fn));
    if (st != GPU_OK) return st;
  }
  /* cuFuncGetParamInfo (CUDA 12.4+) answers CUDA_ERROR_INVALID_VALUE past the last parameter. */
  a->num_params = -1;
  if (p_cuFuncGetParamInfo == NULL) return GPU_OK;
  for (size_t i = 0; i < 4096; i++) {
    size_t offset = 0, size = 0;
    CUresult r = p_cuFuncGetParamInfo(f->fn, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) {
      a->num_params = (int)i;
      break;
    }
    if (r != CUDA_SUCCESS) break; /* the driver cannot tell: num_params stays -1 */
    if (i < sizeof a->param_offset / sizeof a->param_offset[0]) {
      a->param_offset[i] = offset;
      a->param_size[i] = size;
    }
  }
  return GPU_OK;
}

static gpu_status cuda_function_set_max_dynamic_smem(gpu_function *f, int bytes) {
  REQUIRE_DRIVER();
  CUresult r = p_cuFuncSetAttribute(f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (r != CUDA_SUCCESS) {
    char detail[320];
    snprintf(detail, sizeof detail, " setting %d bytes of dynamic shared memory for '%.256s'", bytes, f->name);
    return cu_error(r, "cuFuncSetAttribute", detail);
  }
  f->dynamic_smem_limit = bytes;
  return GPU_OK;
}

static gpu_status cuda_launch(gpu_function *f, const unsigned grid[3], const unsigned block[3],
                              unsigned smem_bytes, gpu_stream s, void **args) {
  REQUIRE_DRIVER();
  /* The default dynamic limit is 48 KiB less the kernel's static shared memory, so raise it for
   * any dynamic size not yet allowed (once per size increase), not only for sizes over 48 KiB. */
  if (smem_bytes > 0 && (int)smem_bytes > f->dynamic_smem_limit) {
    gpu_status st = cuda_function_set_max_dynamic_smem(f, (int)smem_bytes);
    if (st != GPU_OK) return st;
  }
  CUresult r = p_cuLaunchKernel(f->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem_bytes,
                                (CUstream)s, args, NULL);
  if (r != CUDA_SUCCESS) {
    char detail[400];
    snprintf(detail, sizeof detail, " launching '%.256s' grid (%u,%u,%u) block (%u,%u,%u) smem %u", f->name,
             grid[0], grid[1], grid[2], block[0], block[1], block[2], smem_bytes);
    return cu_error(r, "cuLaunchKernel", detail);
  }
  return GPU_OK;
}

/* ---- streams, events, graphs --------------------------------------------------------------- */

static gpu_status cuda_stream_create(gpu_stream *s) {
  REQUIRE_DRIVER();
  CUstream cs = NULL;
  gpu_status st = CU(cuStreamCreate, (&cs, CU_STREAM_NON_BLOCKING));
  *s = (gpu_stream)cs;
  return st;
}

static gpu_status cuda_stream_destroy(gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuStreamDestroy, ((CUstream)s));
}

static gpu_status cuda_stream_synchronize(gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuStreamSynchronize, ((CUstream)s));
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static gpu_status cuda_stream_wait_timeout(gpu_stream s, double timeout_ms) {
  REQUIRE_DRIVER();
  if (timeout_ms < 0) return cuda_stream_synchronize(s);
  double start = now_ms();
  long sleep_ns = 10000; /* 10 us, doubling to 1 ms: quick for short work, cheap for long */
  for (;;) {
    CUresult r = p_cuStreamQuery((CUstream)s);
    if (r == CUDA_SUCCESS) return GPU_OK;
    if (r != CUDA_ERROR_NOT_READY) return cu_error(r, "cuStreamQuery", NULL);
    double waited = now_ms() - start;
    if (waited > timeout_ms)
      return gpu_set_error(GPU_ERR_TIMEOUT, "cuStreamQuery: the stream's work did not finish within %.0f ms",
                           timeout_ms);
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
    if (sleep_ns < 1000000) sleep_ns *= 2;
  }
}

static gpu_status cuda_event_create(gpu_event *e) {
  REQUIRE_DRIVER();
  CUevent ce = NULL;
  gpu_status st = CU(cuEventCreate, (&ce, CU_EVENT_DEFAULT));
  *e = (gpu_event)ce;
  return st;
}

static gpu_status cuda_event_destroy(gpu_event e) {
  REQUIRE_DRIVER();
  return CU(cuEventDestroy, ((CUevent)e));
}

static gpu_status cuda_event_record(gpu_event e, gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuEventRecord, ((CUevent)e, (CUstream)s));
}

static gpu_status cuda_stream_wait_event(gpu_stream s, gpu_event e) {
  REQUIRE_DRIVER();
  if (p_cuStreamWaitEvent == NULL) return gpu_set_error(GPU_ERR_INVALID, "the driver lacks cuStreamWaitEvent");
  return CU(cuStreamWaitEvent, ((CUstream)s, (CUevent)e, 0));
}

static gpu_status cuda_event_synchronize(gpu_event e) {
  REQUIRE_DRIVER();
  return CU(cuEventSynchronize, ((CUevent)e));
}

static gpu_status cuda_event_elapsed_ms(float *ms, gpu_event start, gpu_event end) {
  REQUIRE_DRIVER();
  return CU(cuEventElapsedTime, (ms, (CUevent)start, (CUevent)end));
}

static gpu_status cuda_capture_begin(gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuStreamBeginCapture, ((CUstream)s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
}

/* An instantiated graph; the template and the event-record nodes are kept only for graphs made
 * by capture_end_events (graph_set_event needs both). */
struct gpu_graph_s {
  CUgraphExec exec;
  CUgraph tmpl;
  CUgraphNode *event_nodes;
  size_t n_event_nodes;
};

static gpu_status end_capture(gpu_stream s, gpu_graph *g, const gpu_event *events, size_t n) {
  REQUIRE_DRIVER();
  *g = NULL;
  CUgraph graph = NULL;
  gpu_status st = CU(cuStreamEndCapture, ((CUstream)s, &graph));
  if (st != GPU_OK) return st;
  struct gpu_graph_s *out = calloc(1, sizeof *out);
  CUgraphNode *all = NULL;
  if (out == NULL) {
    p_cuGraphDestroy(graph);
    return gpu_set_error(GPU_ERR_OOM, "graph capture: out of host memory");
  }
  if (events) { /* find the node recording each event */
    size_t count = 0;
    out->event_nodes = calloc(n ? n : 1, sizeof *out->event_nodes);
    st = out->event_nodes ? CU(cuGraphGetNodes, (graph, NULL, &count))
                          : gpu_set_error(GPU_ERR_OOM, "graph capture: out of host memory");
    if (st == GPU_OK && (all = calloc(count ? count : 1, sizeof *all)) == NULL)
      st = gpu_set_error(GPU_ERR_OOM, "graph capture: out of host memory");
    if (st == GPU_OK) st = CU(cuGraphGetNodes, (graph, all, &count));
    size_t found = 0;
    for (size_t i = 0; st == GPU_OK && i < count; i++) {
      CUgraphNodeType type;
      if ((st = CU(cuGraphNodeGetType, (all[i], &type))) != GPU_OK || type != CU_GRAPH_NODE_TYPE_EVENT_RECORD) continue;
      CUevent e = NULL;
      if ((st = CU(cuGraphEventRecordNodeGetEvent, (all[i], &e))) != GPU_OK) break;
      for (size_t k = 0; k < n; k++)
        if ((CUevent)events[k] == e && out->event_nodes[k] == NULL) {
          out->event_nodes[k] = all[i];
          found++;
          break;
        }
    }
    if (st == GPU_OK && found != n)
      st = gpu_set_error(GPU_ERR_INVALID, "graph capture: %zu of %zu recorded events became event-record nodes", found, n);
    out->n_event_nodes = n;
  }
  free(all);
  if (st == GPU_OK) st = CU(cuGraphInstantiateWithFlags, (&out->exec, graph, 0));
  if (st != GPU_OK || !events) { /* a plain graph keeps only its exec */
    char why[2048];
    snprintf(why, sizeof why, "%s", gpu_last_error());
    CUresult r = p_cuGraphDestroy(graph);
    if (st == GPU_OK && r != CUDA_SUCCESS) st = cu_error(r, "cuGraphDestroy", NULL);
    else if (st != GPU_OK) gpu_set_error(st, "%s", why);
    if (st != GPU_OK) {
      if (out->exec) p_cuGraphExecDestroy(out->exec);
      free(out->event_nodes);
      free(out);
      return st;
    }
  } else {
    out->tmpl = graph;
  }
  *g = out;
  return GPU_OK;
}

static gpu_status cuda_capture_end(gpu_stream s, gpu_graph *g) { return end_capture(s, g, NULL, 0); }

static gpu_status cuda_capture_end_events(gpu_stream s, gpu_graph *g, const gpu_event *events, size_t n) {
  if (p_cuGraphGetNodes == NULL || p_cuGraphNodeGetType == NULL || p_cuGraphEventRecordNodeGetEvent == NULL ||
      p_cuGraphExecEventRecordNodeSetEvent == NULL) {
    gpu_graph ignored = NULL; /* still end the capture */
    if (end_capture(s, &ignored, NULL, 0) == GPU_OK) {
      p_cuGraphExecDestroy(ignored->exec);
      free(ignored);
    }
    return gpu_set_error(GPU_ERR_INVALID, "the driver lacks the graph event-node API (cuGraphExecEventRecordNodeSetEvent)");
  }
  return end_capture(s, g, events, n);
}

static gpu_status cuda_event_record_captured(gpu_event e, gpu_stream s) {
  REQUIRE_DRIVER();
  if (p_cuEventRecordWithFlags == NULL)
    return gpu_set_error(GPU_ERR_INVALID, "the driver lacks cuEventRecordWithFlags");
  return CU(cuEventRecordWithFlags, ((CUevent)e, (CUstream)s, CU_EVENT_RECORD_EXTERNAL));
}

static gpu_status cuda_graph_set_event(gpu_graph g, size_t i, gpu_event e) {
  REQUIRE_DRIVER();
  if (g->tmpl == NULL || i >= g->n_event_nodes)
    return gpu_set_error(GPU_ERR_INVALID, "graph_set_event: node %zu of a graph with %zu event nodes", i,
                         g->tmpl ? g->n_event_nodes : 0);
  return CU(cuGraphExecEventRecordNodeSetEvent, (g->exec, g->event_nodes[i], (CUevent)e));
}

static gpu_status cuda_graph_launch(gpu_graph g, gpu_stream s) {
  REQUIRE_DRIVER();
  return CU(cuGraphLaunch, (g->exec, (CUstream)s));
}

static gpu_status cuda_graph_destroy(gpu_graph g) {
  REQUIRE_DRIVER();
  if (g == NULL) return GPU_OK;
  gpu_status st = CU(cuGraphExecDestroy, (g->exec));
  if (g->tmpl) {
    CUresult r = p_cuGraphDestroy(g->tmpl);
    if (st == GPU_OK && r != CUDA_SUCCESS) st = cu_error(r, "cuGraphDestroy", NULL);
  }
  free(g->event_nodes);
  free(g);
  return st;
}

static gpu_status cuda_tensormap_encode(void *out, const gpu_tensormap_spec *sp) {
  REQUIRE_DRIVER();
  if (p_cuTensorMapEncodeTiled == NULL)
    return gpu_set_error(GPU_ERR_INVALID, "the driver lacks cuTensorMapEncodeTiled (TMA needs CUDA 12)");
  CUtensorMapDataType type;
  switch (sp->elem_bytes) {
    case 1: type = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
    case 2: type = CU_TENSOR_MAP_DATA_TYPE_UINT16; break;
    case 4: type = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
    case 8: type = CU_TENSOR_MAP_DATA_TYPE_UINT64; break;
    default: return gpu_set_error(GPU_ERR_INVALID, "tensor map: elements of %d bytes", sp->elem_bytes);
  }
  CUtensorMapSwizzle sw;
  switch (sp->swizzle) {
    case 0: sw = CU_TENSOR_MAP_SWIZZLE_NONE; break;
    case 32: sw = CU_TENSOR_MAP_SWIZZLE_32B; break;
    case 64: sw = CU_TENSOR_MAP_SWIZZLE_64B; break;
    case 128: sw = CU_TENSOR_MAP_SWIZZLE_128B; break;
    default: return gpu_set_error(GPU_ERR_INVALID, "tensor map: swizzle of %d bytes (0, 32, 64, 128)", sp->swizzle);
  }
  if (sp->rank < 1 || sp->rank > 5) return gpu_set_error(GPU_ERR_INVALID, "tensor map: rank %d (1-5)", sp->rank);
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], estr[5];
  for (int i = 0; i < sp->rank; i++) {
    dims[i] = sp->dims[i];
    box[i] = sp->box[i];
    estr[i] = 1;
    if (i > 0) strides[i - 1] = sp->strides[i - 1];
  }
  char detail[256];
  int at = snprintf(detail, sizeof detail, " (rank %d, %d-byte elements, dims", sp->rank, sp->elem_bytes);
  for (int i = 0; i < sp->rank && at < (int)sizeof detail; i++)
    at += snprintf(detail + at, sizeof detail - (size_t)at, " %llu", (unsigned long long)sp->dims[i]);
  for (int i = 0; i < sp->rank && at < (int)sizeof detail; i++)
    at += snprintf(detail + at, sizeof detail - (size_t)at, "%s%u", i ? " " : ", box ", sp->box[i]);
  if (at < (int)sizeof detail) snprintf(detail + at, sizeof detail - (size_t)at, ", swizzle %d)", sp->swizzle);
  CUresult r = p_cuTensorMapEncodeTiled((CUtensorMap *)out, type, (cuuint32_t)sp->rank, (void *)(uintptr_t)sp->address,
                                        dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? GPU_OK : cu_error(r, "cuTensorMapEncodeTiled", detail);
}

static void *cuda_native_context(void) {
  CUcontext c = NULL;
  if (init_state != 1 || p_cuCtxGetCurrent(&c) != CUDA_SUCCESS) return NULL;
  return c;
}

static void *cuda_native_stream(gpu_stream s) { return (void *)(CUstream)s; }

/* The kernel language's (CUDA C's) type for each tilebench dtype, as cuda_fp16.h, cuda_bf16.h,
 * cuda_fp8.h and <cstdint> name them. */
static const char *cuda_kernel_type(const char *dtype) {
  static const char *const types[][2] = {
    {"fp32", "float"}, {"fp16", "__half"}, {"bf16", "__nv_bfloat16"}, {"fp8_e4m3", "__nv_fp8_e4m3"},
    {"int8", "int8_t"}, {"uint8", "uint8_t"}, {"int32", "int32_t"}, {"int64", "int64_t"},
    {"fp8_e5m2", "__nv_fp8_e5m2"}, {"int16", "int16_t"}};
  for (size_t i = 0; dtype && i < sizeof types / sizeof types[0]; i++)
    if (strcmp(types[i][0], dtype) == 0) return types[i][1];
  return NULL;
}

extern const gpu_compiler gpu_cuda_compiler; /* cuda_rtc.c: NVRTC */
extern const gpu_blas gpu_cuda_blas;         /* cuda_blas.c: cuBLASLt */
extern const gpu_dnn gpu_cuda_dnn;           /* cuda_dnn.c: cuDNN's backend API */

static const gpu_backend cuda_backend = {
  .name = "cuda",
  .display_name = "CUDA",
  .compiler = &gpu_cuda_compiler,
  .blas = &gpu_cuda_blas,
  .dnn = &gpu_cuda_dnn,
  .kernel_type = cuda_kernel_type,
  .init = cuda_init,
  .version = cuda_version,
  .device_count = cuda_device_count,
  .device_props = cuda_device_props,
  .set_device = cuda_set_device,
  .current_device = cuda_current_device,
  .synchronize = cuda_synchronize,
  .mem_alloc = cuda_mem_alloc,
  .mem_free = cuda_mem_free,
  .mem_info = cuda_mem_info,
  .memset8_async = cuda_memset8_async,
  .memset32_async = cuda_memset32_async,
  .copy_htod = cuda_copy_htod,
  .copy_dtoh = cuda_copy_dtoh,
  .copy_dtod_async = cuda_copy_dtod_async,
  .module_load_image = cuda_module_load_image,
  .module_load_file = cuda_module_load_file,
  .module_unload = cuda_module_unload,
  .function_get = cuda_function_get,
  .function_attrs = cuda_function_attrs,
  .function_set_max_dynamic_smem = cuda_function_set_max_dynamic_smem,
  .launch = cuda_launch,
  .stream_create = cuda_stream_create,
  .stream_destroy = cuda_stream_destroy,
  .stream_synchronize = cuda_stream_synchronize,
  .stream_wait_timeout = cuda_stream_wait_timeout,
  .event_create = cuda_event_create,
  .event_destroy = cuda_event_destroy,
  .event_record = cuda_event_record,
  .stream_wait_event = cuda_stream_wait_event,
  .event_synchronize = cuda_event_synchronize,
  .event_elapsed_ms = cuda_event_elapsed_ms,
  .capture_begin = cuda_capture_begin,
  .capture_end = cuda_capture_end,
  .graph_launch = cuda_graph_launch,
  .graph_destroy = cuda_graph_destroy,
  .event_record_captured = cuda_event_record_captured,
  .capture_end_events = cuda_capture_end_events,
  .graph_set_event = cuda_graph_set_event,
  .tensormap_encode = cuda_tensormap_encode,
  .timestamps = &gpu_cupti_timestamps,
  .power = &gpu_nvml_power,
  .native_context = cuda_native_context,
  .native_stream = cuda_native_stream,
};

const gpu_backend *gpu_cuda_backend(void) { return &cuda_backend; }
