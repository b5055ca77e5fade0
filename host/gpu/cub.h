/* cub.h: CUB's device-wide sorts (radix_sort's and top_k_selection's `lib`) through libtb_cub.so,
 * a small library CMake builds with nvcc from host/cub/tb_cub.cu where nvcc is found. Opened with
 * dlopen like the other GPU libraries; absent, every call says where it looked (GPU_ERR_NO_LIBRARY).
 * Where it looks: $TILEBENCH_CUB_LIB (a file; when set, nowhere else), else the build's own copy
 * (TB_CUB_LIB_PATH, set by cmake/cub.cmake when it built one), then libtb_cub.so by the loader's
 * search. */
#ifndef TB_GPU_CUB_H
#define TB_GPU_CUB_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"

typedef enum cub_op {
  CUB_SORT_I32 = 1, /* DeviceRadixSort::SortKeys, int32 ascending: in -> out */
  CUB_TOPK_F32 = 2  /* DeviceRadixSort::SortKeysDescending, fp32: in -> scratch, first k -> out */
} cub_op;

/* Opens the library once (later calls return the first outcome). */
gpu_status cub_init(void);
/* CUB_VERSION of the headers the library was built with (300001 = 3.0.1), and its path. */
gpu_status cub_version(size_t *version, char *path, size_t path_len);
/* CUB's temporary storage for op over n keys (CUB asks the current device: needs a context). */
gpu_status cub_temp_bytes(cub_op op, int64_t n, size_t *bytes);
/* Enqueues op on stream s (CUB's kernels and, for CUB_TOPK_F32, the copy of the first k). */
gpu_status cub_run(cub_op op, gpu_ptr temp, size_t temp_bytes, gpu_ptr in, gpu_ptr scratch, gpu_ptr out,
                   int64_t n, int64_t k, gpu_stream s);
const char *cub_op_name(cub_op op);

#endif
