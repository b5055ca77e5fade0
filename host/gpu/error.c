/* error.c: the thread-local "what failed and where" message every gpu_* call leaves behind. */
#include <stdarg.h>
#include <stdio.h>

#include "gpu.h"

static _Thread_local char last_error[16384];

const char *gpu_last_error(void) { return last_error[0] ? last_error : "no error"; }

gpu_status gpu_set_error(gpu_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return st;
}
