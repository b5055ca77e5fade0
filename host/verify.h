/* verify.h: compares an output with its reference on the device in one pass (the compare kernel
 * of host/kernels/verify.cu) and copies back a few KB: the mismatch count, the largest errors and
 * the lowest-index mismatches. Plain C on gpu.h (no Lua): tb_verify.c is its binding, and the C
 * unit tests run it on the fake backend. Tolerances are the caller's (config.lua's); this unit
 * holds none.
 *
 * Rule: |out - ref| <= atol + rtol*|ref| (in double); NaN matches only NaN; +Inf only +Inf, -Inf
 * only -Inf; two integer operands with atol = rtol = 0 compare exactly as int64. max_abs and
 * max_rel are over pairs of finite values (max_rel leaves out ref == 0). */
#ifndef TB_VERIFY_H
#define TB_VERIFY_H

#include <stdint.h>

#include "gpu/gpu.h"

#define VERIFY_MAX_REPORT 1024

typedef struct verify_operand {
  gpu_ptr ptr;
  uint64_t numel;
  const char *dtype; /* "fp32", "int8", ...: names the compare kernel tb_compare_<out>_<ref> */
  int size;          /* bytes per element */
  int is_float;
} verify_operand;

typedef struct verify_mismatch {
  uint64_t index;         /* 0-based flat index */
  uint64_t got, expected; /* float operands: the double's bits; integers: the int64 value */
} verify_mismatch;

typedef struct verify_result {
  uint64_t mismatches;
  double max_abs, max_rel;
  unsigned nfirst;                          /* entries of first (<= max_report) */
  verify_mismatch first[VERIFY_MAX_REPORT]; /* the lowest-index mismatches, ascending */
} verify_result;

/* Where and how the compare runs: the device's arch (to compile verify.cu for) and SM count (to
 * size the grid), the stream, and how long to wait for it (ms; < 0 forever). */
typedef struct verify_device {
  const gpu_backend *backend;
  const char *arch;
  int sm_count;
  gpu_stream stream;
  double timeout_ms;
} verify_device;

/* Compares out with ref (same numel; dtypes may differ only when both are float: the caller
 * checks) with atol, rtol (finite, >= 0) and keeps at most max_report (<= VERIFY_MAX_REPORT) of
 * the first mismatches. Waits for the result. On failure gpu_last_error() holds the message:
 * "compare tb_compare_<o>_<r>: <error>", prefixed "timeout: " when the wait ran out; a compare
 * kernel that cannot be had, or scratch memory that cannot be allocated or freed, leave the
 * backend's own message. The scratch buffer is freed whatever happened. */
gpu_status verify_compare(const verify_device *dev, const verify_operand *out, const verify_operand *ref,
                          double atol, double rtol, unsigned max_report, verify_result *r);

#endif
