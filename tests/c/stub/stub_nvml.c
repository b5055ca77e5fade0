/* stub_nvml.c: a stand-in libnvidia-ml.so.1 for tests/c/test_nvml.c (no GPU, no driver): the
 * entry points host/gpu/nvml.c opens, one device, readings the test sets through
 * stub_nvml_state. nvmlDeviceGetFieldValues fills the field as NVML's public nvml.h lays out
 * nvmlFieldValue_t, declared here independently of nvml.c's copy so the test checks the two
 * agree. Built twice: with STUB_NVML_NO_FIELDS the library lacks nvmlDeviceGetFieldValues (an
 * older driver). */
#include <stdint.h>
#include <string.h>

#include "stub_nvml.h"

struct stub_nvml_state stub_nvml_state = {.power_mw = 150000, .sm_mhz = 1980, .value_type = 1, .value_mw = 650000};
static int device; /* the one nvmlDevice_t: its address */

typedef struct {
  uint32_t fieldId;
  uint32_t scopeId;
  int64_t timestamp;
  int64_t latencyUsec;
  int32_t valueType;
  int32_t nvmlReturn;
  union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    int siVal;
    unsigned short usVal;
  } value;
} field_value;

int nvmlInit_v2(void) { return 0; }
const char *nvmlErrorString(int r) { return r == 3 ? "Not Supported" : "Unknown Error"; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
  (void)bus;
  *dev = &device;
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev) { return nvmlDeviceGetHandleByPciBusId_v2(uuid, dev); }
int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r) {
  (void)dev;
  *r = stub_nvml_state.reasons;
  return 0;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *v) {
  (void)dev;
  if (type != 1) return 2; /* NVML_ERROR_INVALID_ARGUMENT: only the SM clock is asked for */
  *v = stub_nvml_state.sm_mhz;
  return 0;
}
int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw) {
  (void)dev;
  *mw = stub_nvml_state.power_mw;
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned *mw) {
  (void)dev;
  *mw = 700000;
  return 0;
}

#ifndef STUB_NVML_NO_FIELDS
int nvmlDeviceGetFieldValues(void *dev, int count, field_value *v) {
  struct stub_nvml_state *s = &stub_nvml_state;
  s->field_calls++;
  s->count = count;
  if (dev != &device || count < 1) return 2;
  s->field_id = v[0].fieldId;
  s->scope_id = v[0].scopeId;
  if (s->fields_return != 0) return s->fields_return;
  v[0].timestamp = 1;
  v[0].latencyUsec = 0;
  v[0].nvmlReturn = s->field_return;
  v[0].valueType = s->value_type;
  memset(&v[0].value, 0, sizeof v[0].value);
  switch (s->value_type) {
  case 0: v[0].value.dVal = s->value_mw; break;
  case 1: v[0].value.uiVal = (unsigned)s->value_mw; break;
  case 2: v[0].value.ulVal = (unsigned long)s->value_mw; break;
  case 3: v[0].value.ullVal = (unsigned long long)s->value_mw; break;
  case 4: v[0].value.sllVal = (long long)s->value_mw; break;
  case 5: v[0].value.siVal = (int)s->value_mw; break;
  case 6: v[0].value.usVal = (unsigned short)s->value_mw; break;
  default: v[0].value.ullVal = 0xdeadbeefull; break;
  }
  return 0;
}
#endif
