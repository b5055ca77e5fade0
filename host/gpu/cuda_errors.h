/* cuda_errors.h: how the CUDA backend classifies a driver error into a gpu_status (cuda.c), for
 * the backend itself and its unit test (tests/c/test_error_classes.c). */
#ifndef TB_CUDA_ERRORS_H
#define TB_CUDA_ERRORS_H

#include "gpu.h"

/* result: a CUresult; name: the driver's name for it ("CUDA_ERROR_ILLEGAL_ADDRESS"), or NULL
 * when the driver cannot name it. Out of memory -> GPU_ERR_OOM; the sticky list -> GPU_ERR_FAULT;
 * CUDA_ERROR_INVALID_* and a wrong image/name/launch shape -> GPU_ERR_INVALID; else GPU_ERR_OTHER. */
gpu_status cuda_error_status(int result, const char *name);

#endif
