/* cupti.h: kernel durations from CUPTI activity records, grouped by an external correlation id
 * the caller pushes around its launches, so one run of a multi-kernel plan sums as one unit.
 * libcupti is opened with dlopen; no Lua here. CUPTI is process-wide, so this is a singleton.
 * Internal to the CUDA backend: everything else reaches it as gpu_backend.timestamps (gpu.h). */
#ifndef TB_GPU_CUPTI_H
#define TB_GPU_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"

/* The CUDA backend's kernel timestamps (gpu.h says what each entry does). libcupti is found as
 * $TILEBENCH_CUPTI_LIB if set, else libcupti.so.13/.12/.so by the CUDA library search, else the
 * toolkit's extras/CUPTI; start() registers the buffer callbacks and enables kernel, external
 * correlation (CUSTOM0) and launch-API records, and answers GPU_ERR_BUSY under ncu / nsys
 * (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED). push/pop tag launches with an external
 * correlation id; trace_all_api enables every driver and runtime API instead. */
extern const gpu_timestamps gpu_cupti_timestamps;

#endif
