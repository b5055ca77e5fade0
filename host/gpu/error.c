/* error.c: the thread-local "what failed and where" message every gpu_* call leaves behind, and
 * the class of each status (what a caller does about it). */
#include <stdarg.h>
#include <stdio.h>

#include "gpu.h"

static _Thread_local char last_error[16384];
static _Thread_local char last_api[64];

const char *gpu_last_error(void) { return last_error[0] ? last_error : "no error"; }
const char *gpu_last_error_api(void) { return last_api; }

gpu_status gpu_set_error(gpu_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  last_api[0] = '\0';
  return st;
}

gpu_status gpu_set_api_error(gpu_status st, const char *api, const char *fmt, ...) {
  char keep[sizeof last_api];
  snprintf(keep, sizeof keep, "%s", api ? api : ""); /* api may point into last_api itself */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  snprintf(last_api, sizeof last_api, "%s", keep);
  return st;
}

/* Lua's campaign maps these names to row statuses (runner.lua): oom -> oom, timeout -> timeout,
 * the rest -> failed; context_lost replaces the worker. */
const gpu_error_class gpu_error_classes[] = {
  {GPU_ERR_NO_DRIVER, "no_driver", 0},   /* no driver library or no device: nothing can run */
  {GPU_ERR_NO_LIBRARY, "no_library", 0}, /* an optional library (NVRTC, CUPTI, BLAS) is absent */
  {GPU_ERR_OOM, "oom", 0},               /* a case too large for the device: a status, not a crash */
  {GPU_ERR_INVALID, "launch", 0},        /* the driver refused the call (argument, image, launch shape) */
  {GPU_ERR_COMPILE, "compile", 0},       /* run-time compilation failed */
  {GPU_ERR_FAULT, "fault", 1},           /* sticky: the context is unusable */
  {GPU_ERR_TIMEOUT, "timeout", 1},       /* a hung kernel still occupies the context */
  {GPU_ERR_BUSY, "busy", 0},             /* a resource held by another tool (CUPTI under ncu) */
  {GPU_ERR_OTHER, "other", 0},           /* any other driver error */
  {GPU_OK, NULL, 0},
};

const gpu_error_class *gpu_status_class(gpu_status st) {
  for (const gpu_error_class *c = gpu_error_classes; c->name; c++)
    if (c->status == st) return c;
  return st == GPU_OK ? NULL : gpu_status_class(GPU_ERR_OTHER); /* a status outside the table */
}
