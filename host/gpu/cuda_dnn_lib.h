/* cuda_dnn_lib.h: cuDNN opened with dlopen (cuda_dnn_lib.c), shared by cuda_dnn.c. */
#ifndef TB_CUDA_DNN_LIB_H
#define TB_CUDA_DNN_LIB_H

#include "cudnn_abi.h"
#include "gpu.h"

typedef struct cudnn_lib {
  void *lib;
  char path[1024];
  tb_cudnnHandle_t handle;
  tb_cudnnGetVersion_fn *get_version;
  tb_cudnnGetErrorString_fn *error_string;
  tb_cudnnGetLastErrorString_fn *last_error; /* optional: the library's own reason */
  tb_cudnnCreate_fn *create;
  tb_cudnnDestroy_fn *destroy;
  tb_cudnnSetStream_fn *set_stream;
  tb_cudnnBackendCreateDescriptor_fn *desc_create;
  tb_cudnnBackendDestroyDescriptor_fn *desc_destroy;
  tb_cudnnBackendFinalize_fn *finalize;
  tb_cudnnBackendSetAttribute_fn *set;
  tb_cudnnBackendGetAttribute_fn *get;
  tb_cudnnBackendExecute_fn *execute;
  /* the legacy pooling API (cudnn_abi.h); NULL where the library lacks it (cudnn_legacy_pooling) */
  struct {
    tb_cudnnCreateTensorDescriptor_fn *create_tensor;
    tb_cudnnSetTensor4dDescriptor_fn *set_tensor_4d;
    tb_cudnnDestroyTensorDescriptor_fn *destroy_tensor;
    tb_cudnnCreatePoolingDescriptor_fn *create_pooling;
    tb_cudnnSetPooling2dDescriptor_fn *set_pooling_2d;
    tb_cudnnDestroyPoolingDescriptor_fn *destroy_pooling;
    tb_cudnnPoolingForward_fn *forward;
    const char *missing; /* the first entry point not found, or NULL */
  } pool;
} cudnn_lib;

extern cudnn_lib cudnn;

/* Finds and opens libcudnn.so.9 and resolves its entry points, once
 * (later calls return the first outcome's status with its message again). Where it looks, in
 * order: $TILEBENCH_CUDNN_LIB (the library file or its directory; when set, nowhere else), the
 * places gpu_dlopen_first searches (the system loader's path among them), then the lib/
 * directory of the `nvidia.cudnn` Python package (the PyPI wheel PyTorch installs) of
 * $TILEBENCH_PYTHON or python3. GPU_ERR_NO_LIBRARY names every place tried. */
gpu_status cudnn_open(void);
/* cudnn_open, then the one handle, made on first use for the device current on the thread. */
gpu_status cudnn_get_handle(tb_cudnnHandle_t *out);
/* GPU_OK where the opened library has the legacy pooling API, else GPU_ERR_NO_LIBRARY naming the
 * entry point it lacks. */
gpu_status cudnn_legacy_pooling(void);

/* A failed cuDNN call: "<api>: <status name> (<code>)[ for <what>][; cuDNN says: ...]",
 * GPU_ERR_INVALID for the not-supported family (3000-3999) and bad parameters (2000-2999),
 * GPU_ERR_NO_LIBRARY for the not-initialized family (1000-1999: a sub-library that does not
 * load, a version mismatch), else GPU_ERR_OTHER. */
gpu_status cudnn_fail(const char *api, tb_cudnnStatus_t st, const char *what);

/* The lib/ directory of the nvidia.cudnn package as $TILEBENCH_PYTHON (or python3) imports it,
 * into out; "" when it cannot be imported, the reason appended to report ("\n  <python>: ..."). */
void cudnn_python_lib_dir(char *out, size_t len, char *report, size_t cap);

/* For tests: forget the opened library and the recorded outcome (the handle is destroyed). */
void cudnn_reset_for_tests(void);

#endif
