/* test_nvml.c: host/gpu/nvml.c against a stand-in libnvidia-ml.so.1 (tests/c/stub/stub_nvml.c,
 * opened through $TILEBENCH_NVML_LIB as a user's own copy would be): the averaged power
 * (nvmlDeviceGetPowerUsage) and the instantaneous one (nvmlDeviceGetFieldValues, field
 * NVML_FI_DEV_POWER_INSTANT) read side by side, the field's value in each nvmlValueType_t, and
 * every way the instantaneous read can fail leaving it unknown (<= 0) while the reading itself
 * succeeds: the call failing, the field failing, the device not supporting it (then never asked
 * again), a value type power never comes in, and a library without nvmlDeviceGetFieldValues. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gpu/gpu.h"
#include "stub/stub_nvml.h"

static struct stub_nvml_state *open_stub(const char *path, gpu_device_props *p) {
  setenv("TILEBENCH_NVML_LIB", path, 1);
  memset(p, 0, sizeof *p);
  snprintf(p->pci_bus_id, sizeof p->pci_bus_id, "0000:19:00.0");
  gpu_status st = gpu_nvml_power.open(p);
  CHECK(st == GPU_OK, "open the stub %s: %s", path, gpu_last_error());
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  struct stub_nvml_state *s = h ? dlsym(h, "stub_nvml_state") : NULL;
  CHECK(s != NULL, "the stub's state");
  return s;
}

static gpu_power_reading read_ok(const char *what) {
  gpu_power_reading rd;
  memset(&rd, 0x7f, sizeof rd);
  gpu_status st = gpu_nvml_power.read(&rd);
  CHECK(st == GPU_OK, "%s: the reading itself succeeds: %s", what, gpu_last_error());
  return rd;
}

static void test_instant(void) {
  gpu_device_props p;
  struct stub_nvml_state *s = open_stub(STUB_NVML_PATH, &p);
  if (s == NULL) return;
  gpu_power_reading rd = read_ok("instant");
  CHECK(rd.power_w == 150 && rd.power_now_w == 650, "average %g W, instant %g W", rd.power_w, rd.power_now_w);
  CHECK(rd.sm_clock_mhz == 1980, "clock %g", rd.sm_clock_mhz);
  CHECK(s->field_id == 186 && s->scope_id == 0 && s->count == 1, "asked for field %u scope %u count %d", s->field_id,
        s->scope_id, s->count);
  double w = 0;
  CHECK(gpu_nvml_power.limit_w(&w) == GPU_OK && w == 700, "limit %g", w);
  /* every value type NVML may give the field in, read in milliwatts */
  for (int t = 0; t <= 6; t++) {
    s->value_type = t;
    s->value_mw = t == 6 ? 61000 : 612500; /* unsigned short holds at most 65535 mW */
    rd = read_ok("value type");
    double want = t == 6 ? 61 : 612.5;
    CHECK(rd.power_now_w == want, "value type %d: %g W, want %g", t, rd.power_now_w, want);
  }
  s->value_type = 9; /* not a type NVML defines: unknown, not a guess */
  rd = read_ok("bad type");
  CHECK(rd.power_now_w <= 0 && rd.power_w == 150, "unknown type: instant %g", rd.power_now_w);
  s->value_type = 1;
  s->value_mw = 650000;
  /* the call failing (e.g. NVML_ERROR_UNKNOWN): unknown this time, asked again next time */
  int calls = s->field_calls;
  s->fields_return = 999;
  rd = read_ok("call fails");
  CHECK(rd.power_now_w <= 0 && rd.power_w == 150, "call fails: instant %g", rd.power_now_w);
  s->fields_return = 0;
  rd = read_ok("call ok again");
  CHECK(rd.power_now_w == 650 && s->field_calls == calls + 2, "asked again: %g, %d calls", rd.power_now_w,
        s->field_calls - calls);
  /* the field's own return failing */
  s->field_return = 999;
  rd = read_ok("field fails");
  CHECK(rd.power_now_w <= 0 && rd.power_w == 150, "field fails: instant %g", rd.power_now_w);
  /* zero milliwatts is no reading */
  s->field_return = 0;
  s->value_mw = 0;
  rd = read_ok("zero");
  CHECK(rd.power_now_w <= 0, "0 mW: unknown, %g", rd.power_now_w);
  s->value_mw = 650000;
  /* NOT_SUPPORTED for the field: unknown, and the driver is not asked again */
  s->field_return = 3;
  rd = read_ok("not supported");
  calls = s->field_calls;
  s->field_return = 0;
  rd = read_ok("after not supported");
  CHECK(rd.power_now_w <= 0 && rd.power_w == 150 && s->field_calls == calls, "not asked again: %g W, %d calls",
        rd.power_now_w, s->field_calls - calls);
}

/* A library without nvmlDeviceGetFieldValues (an older driver) opens and reads as before. In a
 * child: nvml.c keeps the library it opened for the process. */
static void test_no_fields(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    failures = 0;
    gpu_device_props p;
    struct stub_nvml_state *s = open_stub(STUB_NVML_NOFIELDS_PATH, &p);
    if (s) {
      gpu_power_reading rd = read_ok("no fields");
      CHECK(rd.power_now_w <= 0 && rd.power_w == 150 && rd.sm_clock_mhz == 1980, "no field function: instant %g, "
            "average %g", rd.power_now_w, rd.power_w);
      CHECK(s->field_calls == 0, "nothing asked");
    }
    fflush(NULL);
    _exit(failures != 0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child without nvmlDeviceGetFieldValues: status %d", status);
}

int main(void) {
  test_no_fields();
  test_instant();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures != 0;
}
