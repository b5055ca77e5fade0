/* nvml.c: the CUDA backend's power and clock source (gpu_power, gpu.h): NVML, opened by dlopen
 * (libnvidia-ml.so.1 ships with the driver, not the toolkit), so a binary without it still runs
 * and the timer records why it has no readings. Every NVML call is checked; a missing library, a
 * missing function or an unknown device is a gpu_status with a message naming the call, never a
 * crash. $TILEBENCH_NVML_LIB names the library to open instead (a path that does not exist
 * simulates a machine without NVML, as $TILEBENCH_CUPTI_LIB does for CUPTI; tests/c/test_nvml.c
 * opens a stand-in, tests/c/stub/stub_nvml.c). Power is read twice: the 1 s average
 * (nvmlDeviceGetPowerUsage) and, where the driver offers it, the instantaneous field value. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

typedef int nvml_return;       /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef void *nvml_device;     /* nvmlDevice_t */
#define NVML_CLOCK_SM 1        /* nvmlClockType_t */
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_FI_DEV_POWER_INSTANT 186 /* "current GPU power, supported on all architectures" (mW) */

/* nvmlFieldValue_t of NVML's public nvml.h, written out so the build needs no NVML header. The
 * instantaneous power is a field value: nvmlDeviceGetPowerUsage is a 1 s average on GPUs newer
 * than GA100, which in a heavy load's first half second still reads what ran before (H200,
 * session 12: a GEMM measured at 1882 MHz before its average rose, 15 % fast). */
typedef struct nvml_field {
  unsigned field_id;
  unsigned scope_id;          /* power fields: 0 = the GPU (NVML_POWER_SCOPE_GPU) */
  long long timestamp;        /* us since 1970 */
  long long latency_us;
  int value_type;             /* nvmlValueType_t: 0 double, 1 unsigned int, 2 unsigned long,
                                 3 unsigned long long, 4 signed long long, 5 signed int, 6 unsigned short */
  nvml_return ret;            /* this field's own outcome; value is undefined unless 0 */
  union {
    double d;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
  } value;
} nvml_field;
_Static_assert(offsetof(nvml_field, timestamp) == 8, "nvmlFieldValue_t.timestamp");
_Static_assert(offsetof(nvml_field, value_type) == 24, "nvmlFieldValue_t.valueType");
_Static_assert(offsetof(nvml_field, ret) == 28, "nvmlFieldValue_t.nvmlReturn");
_Static_assert(offsetof(nvml_field, value) == 32 && sizeof(nvml_field) == 40, "nvmlFieldValue_t layout");

/* nvmlClocksEventReasons bits (nvml.h) and the GPU_CAP_* bit each becomes. */
static const struct {
  unsigned long long nvml;
  unsigned ours;
} reason_bits[] = {
  {0x1ull, GPU_STATE_IDLE},          /* GpuIdle */
  {0x4ull, GPU_CAP_SW_POWER},        /* SwPowerCap */
  {0x8ull, GPU_CAP_HW_SLOWDOWN},     /* HwSlowdown */
  {0x20ull, GPU_CAP_SW_THERMAL},     /* SwThermalSlowdown */
  {0x40ull, GPU_CAP_HW_THERMAL},     /* HwThermalSlowdown */
  {0x80ull, GPU_CAP_HW_POWER_BRAKE}, /* HwPowerBrakeSlowdown */
};

static struct {
  int tried;                 /* open() ran for `bus` */
  gpu_status status;         /* its outcome, returned again by later calls for the same device */
  char message[1024];
  char bus[32];
  void *lib;
  nvml_device dev;
  nvml_return (*init)(void);
  nvml_return (*by_bus)(const char *, nvml_device *);
  nvml_return (*by_uuid)(const char *, nvml_device *);
  nvml_return (*reasons)(nvml_device, unsigned long long *);
  nvml_return (*clock)(nvml_device, int, unsigned *);
  nvml_return (*power)(nvml_device, unsigned *);
  nvml_return (*limit)(nvml_device, unsigned *);
  nvml_return (*fields)(nvml_device, int, nvml_field *); /* optional: the instantaneous power */
  int now_unsupported;       /* the device said NOT_SUPPORTED to the instant field: not asked again */
  const char *(*error_string)(nvml_return);
} N;

static const char *nvml_text(nvml_return r) {
  const char *s = N.error_string ? N.error_string(r) : NULL;
  return s ? s : "unknown NVML error";
}

/* Resolves name, else the first of the alternatives (NVML renamed "throttle" to "clocks event"). */
static void *sym(const char *name, const char *alt) {
  void *p = dlsym(N.lib, name);
  if (p == NULL && alt) p = dlsym(N.lib, alt);
  return p;
}

static gpu_status fail(gpu_status st, const char *api, const char *fmt, const char *detail) {
  snprintf(N.message, sizeof N.message, fmt, detail);
  N.status = st;
  return gpu_set_api_error(st, api, "%s", N.message);
}

static gpu_status open_library(void) {
  if (N.lib) return GPU_OK;
  const char *env = getenv("TILEBENCH_NVML_LIB");
  char found[512];
  if (env && *env) {
    N.lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (N.lib == NULL) {
      const char *why = dlerror();
      snprintf(found, sizeof found, "%s: %s", env, why ? why : "cannot be opened");
      return fail(GPU_ERR_NO_LIBRARY, "dlopen", "NVML not found ($TILEBENCH_NVML_LIB=%s)", found);
    }
  } else {
    static const char *const names[] = {"libnvidia-ml.so.1", NULL};
    N.lib = gpu_dlopen_first(names, found, sizeof found);
    if (N.lib == NULL) return fail(GPU_ERR_NO_LIBRARY, "dlopen", "NVML: %s", gpu_last_error());
  }
  N.init = (nvml_return(*)(void))sym("nvmlInit_v2", "nvmlInit");
  N.by_bus = (nvml_return(*)(const char *, nvml_device *))sym("nvmlDeviceGetHandleByPciBusId_v2",
                                                              "nvmlDeviceGetHandleByPciBusId");
  N.by_uuid = (nvml_return(*)(const char *, nvml_device *))sym("nvmlDeviceGetHandleByUUID", NULL);
  N.reasons = (nvml_return(*)(nvml_device, unsigned long long *))sym("nvmlDeviceGetCurrentClocksEventReasons",
                                                                      "nvmlDeviceGetCurrentClocksThrottleReasons");
  N.clock = (nvml_return(*)(nvml_device, int, unsigned *))sym("nvmlDeviceGetClockInfo", NULL);
  N.power = (nvml_return(*)(nvml_device, unsigned *))sym("nvmlDeviceGetPowerUsage", NULL);
  N.limit = (nvml_return(*)(nvml_device, unsigned *))sym("nvmlDeviceGetEnforcedPowerLimit", NULL);
  N.fields = (nvml_return(*)(nvml_device, int, nvml_field *))sym("nvmlDeviceGetFieldValues", NULL);
  N.now_unsupported = 0;
  N.error_string = (const char *(*)(nvml_return))sym("nvmlErrorString", NULL);
  const char *missing = !N.init ? "nvmlInit_v2" : !N.by_bus ? "nvmlDeviceGetHandleByPciBusId_v2"
                      : !N.reasons ? "nvmlDeviceGetCurrentClocksEventReasons"
                      : !N.clock ? "nvmlDeviceGetClockInfo" : !N.power ? "nvmlDeviceGetPowerUsage" : NULL;
  if (missing) {
    dlclose(N.lib);
    N.lib = NULL;
    return fail(GPU_ERR_INVALID, "dlsym", "NVML lacks %s", missing);
  }
  nvml_return r = N.init();
  if (r != 0) {
    const char *t = nvml_text(r);
    dlclose(N.lib);
    N.lib = NULL;
    N.error_string = NULL;
    return fail(GPU_ERR_NO_LIBRARY, "nvmlInit_v2", "nvmlInit_v2: %s", t);
  }
  return GPU_OK;
}

static gpu_status nvml_open(const gpu_device_props *p) {
  if (N.tried && strcmp(N.bus, p->pci_bus_id) == 0) {
    if (N.status != GPU_OK) return gpu_set_error(N.status, "%s", N.message);
    return GPU_OK;
  }
  N.tried = 1;
  N.status = GPU_OK;
  N.message[0] = '\0';
  N.dev = NULL;
  snprintf(N.bus, sizeof N.bus, "%s", p->pci_bus_id);
  gpu_status st = open_library();
  if (st != GPU_OK) return st;
  nvml_return r = N.by_bus(p->pci_bus_id, &N.dev);
  if (r != 0 && N.by_uuid && p->uuid[0]) { /* NVML writes UUIDs as "GPU-<uuid>" */
    char uuid[64];
    snprintf(uuid, sizeof uuid, "GPU-%s", p->uuid);
    r = N.by_uuid(uuid, &N.dev);
  }
  if (r != 0) {
    char what[160];
    snprintf(what, sizeof what, "bus id %s: %s", p->pci_bus_id, nvml_text(r));
    N.dev = NULL;
    return fail(GPU_ERR_INVALID, "nvmlDeviceGetHandleByPciBusId_v2", "NVML does not know the device (%s)", what);
  }
  return GPU_OK;
}

/* The instantaneous power in W, or -1: the function missing, the call or the field failing, the
 * device not supporting it (then never asked again: each read is a driver query), a value of a
 * type power is never given in. Optional by design: the timer falls back to the 1 s average. */
static double instant_power(void) {
  if (N.fields == NULL || N.now_unsupported) return -1;
  nvml_field f;
  memset(&f, 0, sizeof f);
  f.field_id = NVML_FI_DEV_POWER_INSTANT;
  nvml_return r = N.fields(N.dev, 1, &f);
  if (r == NVML_ERROR_NOT_SUPPORTED || (r == 0 && f.ret == NVML_ERROR_NOT_SUPPORTED)) N.now_unsupported = 1;
  if (r != 0 || f.ret != 0) return -1;
  double mw;
  switch (f.value_type) {
  case 0: mw = f.value.d; break;
  case 1: mw = f.value.ui; break;
  case 2: mw = (double)f.value.ul; break;
  case 3: mw = (double)f.value.ull; break;
  case 4: mw = (double)f.value.sll; break;
  case 5: mw = f.value.si; break;
  case 6: mw = f.value.us; break;
  default: return -1;
  }
  return mw > 0 ? mw * 1e-3 : -1;
}

static gpu_status nvml_read(gpu_power_reading *out) {
  out->reasons = 0;
  out->sm_clock_mhz = -1;
  out->power_w = -1;
  out->power_now_w = -1;
  if (N.dev == NULL) return gpu_set_error(GPU_ERR_INVALID, "NVML: no device opened%s%s", N.message[0] ? ": " : "",
                                          N.message);
  unsigned long long bits = 0;
  nvml_return r = N.reasons(N.dev, &bits);
  if (r != 0)
    return gpu_set_api_error(GPU_ERR_OTHER, "nvmlDeviceGetCurrentClocksEventReasons",
                             "nvmlDeviceGetCurrentClocksEventReasons: %s", nvml_text(r));
  for (size_t i = 0; i < sizeof reason_bits / sizeof reason_bits[0]; i++)
    if (bits & reason_bits[i].nvml) out->reasons |= reason_bits[i].ours;
  unsigned v = 0;
  if (N.clock(N.dev, NVML_CLOCK_SM, &v) == 0) out->sm_clock_mhz = v;
  if (N.power(N.dev, &v) == 0) out->power_w = v * 1e-3;
  out->power_now_w = instant_power();
  return GPU_OK;
}

static gpu_status nvml_limit(double *w) {
  unsigned mw = 0;
  if (N.dev == NULL || N.limit == NULL) return gpu_set_error(GPU_ERR_INVALID, "NVML: no power limit known");
  nvml_return r = N.limit(N.dev, &mw);
  if (r != 0)
    return gpu_set_api_error(GPU_ERR_INVALID, "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetEnforcedPowerLimit: %s",
                             nvml_text(r));
  *w = mw * 1e-3;
  return GPU_OK;
}

const gpu_power gpu_nvml_power = {
  .name = "nvml",
  .open = nvml_open,
  .read = nvml_read,
  .limit_w = nvml_limit,
};
