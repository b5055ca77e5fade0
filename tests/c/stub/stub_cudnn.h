/* stub_cudnn.h: the state of the stand-in libcudnn.so.9 (stub_cudnn.c) that tests/c/test_dnn.c
 * reads and sets through dlsym("stub_cudnn_state"): one declaration for both. */
#ifndef TB_STUB_CUDNN_H
#define TB_STUB_CUDNN_H

#include <stdint.h>

#define STUB_MAX_SCALARS 8

struct stub_cudnn_state {
  int configs, refuse;       /* heuristic results; the first `refuse` plans do not finalize */
  int create_status;         /* what cudnnCreate returns */
  int live;                  /* descriptors not yet destroyed */
  int executed;
  void *stream;
  /* the last batch-norm operation finalized */
  int x_dtype, scale_dtype, mean_dtype;
  int64_t x_dims[4], x_strides[4], scale_dims[4];
  int eps_by_value;
  /* the last operation graph finalized, as text: its operations in order, then its tensors by id */
  char graph_text[8192];
  /* the by-value scalars of the last execution: unique id and the float the variant pack held */
  int n_scalars;
  int64_t scalar_uid[STUB_MAX_SCALARS];
  float scalar_value[STUB_MAX_SCALARS];
  char last_error[256];
  /* convolutions and poolings computed on the host (fp32 data: the test's buffers are host memory) */
  int conv_computed, pool_computed;
  int pool_mode, pool_nan; /* the last pooling descriptor's mode and NaN option */
  int64_t workspace;       /* what every execution plan reports as its workspace */
};

#endif
