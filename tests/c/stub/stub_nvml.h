/* stub_nvml.h: what tests/c/test_nvml.c sets and reads in the stand-in libnvidia-ml.so.1
 * (stub_nvml.c), found by dlsym(handle, "stub_nvml_state"). */
#ifndef TB_STUB_NVML_H
#define TB_STUB_NVML_H

struct stub_nvml_state {
  unsigned power_mw;      /* nvmlDeviceGetPowerUsage's reading (NVML's 1 s average) */
  unsigned sm_mhz;        /* nvmlDeviceGetClockInfo(SM) */
  unsigned long long reasons; /* nvmlDeviceGetCurrentClocksEventReasons */
  int fields_return;      /* what nvmlDeviceGetFieldValues itself returns */
  int field_return;       /* the field's own nvmlReturn */
  int value_type;         /* nvmlValueType_t the value is written as */
  double value_mw;        /* the instantaneous power, written as value_type */
  int field_calls;        /* calls of nvmlDeviceGetFieldValues so far */
  unsigned field_id, scope_id; /* what the last call asked for */
  int count;
};

#endif
