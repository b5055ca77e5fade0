/* dnn.h: the vendor DNN library's graphs for the `lib` baselines (batch_normalization,
 * flash_attention, the convolutions and 2d_max_pooling), as a table each backend fills (gpu_backend.dnn; CUDA: cuDNN's backend (graph) API in cuda_dnn.c,
 * the library opened with dlopen on first use by cuda_dnn_lib.c) and the dnn_* calls that
 * dispatch to the backend in use (dnn.c). No Lua header is included.
 *
 * A dnn_graph is one prepared problem: the operation graph, the engine the library's heuristic
 * ranked first among those that build (its execution plan) and, once bound to buffers, the
 * workspace and the variant pack; dnn_graph_run only enqueues the execution on a stream, so a
 * launch plan replays it with no set-up cost. A graph made without buffers (a probe) says
 * whether the library has an engine for the case and which, and cannot run. */
#ifndef TB_DNN_H
#define TB_DNN_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"

typedef enum dnn_type { DNN_F32 = 0, DNN_F16, DNN_BF16 } dnn_type;

/* Training-mode batch normalisation of x (n, c) row-major over the n rows: per channel the
 * mean and the biased variance, y = (x - mean) / sqrt(var + eps) * scale + bias. The saved
 * statistics (mean and 1 / sqrt(var + eps), c values each) are fp32. All pointers 0: a probe. */
typedef struct dnn_batchnorm_desc {
  int64_t n, c;
  dnn_type x_type;     /* x and y */
  dnn_type param_type; /* scale and bias */
  float eps;
  gpu_ptr x, scale, bias, y, mean, inv_var;
} dnn_batchnorm_desc;

/* Scaled dot-product attention forward (flash attention), inference: per (b, h),
 * o = softmax(q k^T * scale [+ causal mask: query i attends keys j <= i]) v, with q, k, v and o
 * (b, h, s, d) contiguous (row-major) in one 16-bit float type, fp32 accumulation, no statistics
 * output. All pointers 0: a probe. */
typedef struct dnn_sdpa_desc {
  int64_t b, h, s, d;
  dnn_type type; /* fp16 or bf16 */
  int causal;
  float scale;
  gpu_ptr q, k, v, o;
} dnn_sdpa_desc;

/* Convolution forward as PyTorch's F.conv1d/2d/3d without bias: grouped cross-correlation of x
 * (n, c, in[0..nd-1]) with w (k, c / groups, window[0..nd-1]) into y (n, k, out[0..nd-1]),
 * out[i] = (in[i] + 2 padding[i] - dilation[i] (window[i] - 1) - 1) / stride[i] + 1, every tensor
 * contiguous (row-major), one type, fp32 accumulation (fp32 data: TF32 tensor-core engines allowed,
 * as PyTorch's cudnn.allow_tf32 default). nd is 1, 2 or 3. All pointers 0: a probe. */
#define DNN_MAX_SPATIAL 3
typedef struct dnn_conv_desc {
  int nd;
  int64_t n, c, k, groups;
  int64_t in[DNN_MAX_SPATIAL], window[DNN_MAX_SPATIAL];
  int64_t stride[DNN_MAX_SPATIAL], padding[DNN_MAX_SPATIAL], dilation[DNN_MAX_SPATIAL];
  dnn_type type;
  gpu_ptr x, w, y;
} dnn_conv_desc;

/* Max pooling forward as F.max_pool2d (dilation 1, floor mode): x (n, c, h, w) contiguous NCHW into
 * y (n, c, (h + 2 padding - window) / stride + 1, likewise for w), padded positions never chosen
 * (-inf), a NaN in a window giving NaN. All pointers 0: a probe. */
typedef struct dnn_pool_desc {
  int64_t n, c, h, w;
  int window, stride, padding;
  dnn_type type;
  gpu_ptr x, y;
} dnn_pool_desc;

typedef struct dnn_graph dnn_graph;

#define DNN_MAX_KNOBS 44 /* cuDNN 9's knob types */

/* The engine a graph runs: what the library calls it and how it is configured. */
typedef struct dnn_engine {
  int64_t global_index;              /* the library's engine number */
  int n_knobs;
  int64_t knob_type[DNN_MAX_KNOBS];  /* the library's knob numbers and their chosen values */
  int64_t knob_value[DNN_MAX_KNOBS];
  int rank;                          /* 0-based place in the heuristic's list */
  int n_candidates;                  /* how many the heuristic offered */
  size_t workspace_bytes;
  /* "" for a graph's engine; else the legacy entry point that runs instead ("cudnnPoolingForward":
   * no engine, no heuristic, global_index -1) */
  char legacy_api[48];
} dnn_engine;

/* A backend's DNN library: the operations below, with the same contracts. */
typedef struct gpu_dnn {
  gpu_library lib; /* name ("cuDNN"), init, version (gpu.h) */
  gpu_status (*batchnorm_create)(dnn_graph **out, const dnn_batchnorm_desc *d);
  gpu_status (*sdpa_create)(dnn_graph **out, const dnn_sdpa_desc *d);
  gpu_status (*conv_create)(dnn_graph **out, const dnn_conv_desc *d);
  gpu_status (*pool_create)(dnn_graph **out, const dnn_pool_desc *d);
  gpu_status (*run)(dnn_graph *g, gpu_stream s);
  void (*engine)(const dnn_graph *g, dnn_engine *e);
  size_t (*describe)(const dnn_graph *g, char *buf, size_t len);
  void (*destroy)(dnn_graph *g);
} gpu_dnn;

/* Opens the backend's DNN library (GPU_ERR_NO_LIBRARY naming every place searched when it is
 * absent, or saying the backend has none). */
gpu_status dnn_init(void);
/* The library's version (cuDNN: cudnnGetVersion(), e.g. 91900) and where it was found. */
gpu_status dnn_version(size_t *version, char *path, size_t path_len);
/* Builds the graph, asks the heuristic for engines and keeps the first whose plan builds
 * (GPU_ERR_INVALID naming the case and the library's reasons when none does); with buffers,
 * allocates the workspace and binds them. *out is NULL on failure. */
gpu_status dnn_batchnorm_create(dnn_graph **out, const dnn_batchnorm_desc *d);
/* The same for attention (dnn_sdpa_desc). */
gpu_status dnn_sdpa_create(dnn_graph **out, const dnn_sdpa_desc *d);
/* The same for a convolution (dnn_conv_desc). */
gpu_status dnn_conv_create(dnn_graph **out, const dnn_conv_desc *d);
/* Max pooling: checks the case and prepares the library's call (cuDNN: its legacy pooling API, which
 * has no engine choice); GPU_ERR_NO_LIBRARY where the library lacks it. */
gpu_status dnn_pool_create(dnn_graph **out, const dnn_pool_desc *d);
/* Enqueues the graph on s (asynchronous); a plan step (tb_native_run_fn). */
gpu_status dnn_graph_run(dnn_graph *g, gpu_stream s);
void dnn_graph_engine(const dnn_graph *g, dnn_engine *e);
/* Writes the problem and the engine ("batch norm (training) x 1000x1024 fp16 ...; engine 3,
 * knobs {...}, choice 1 of 2, workspace 0 B") into buf; returns the length written. */
size_t dnn_graph_describe(const dnn_graph *g, char *buf, size_t len);
/* Frees everything; NULL is fine. */
void dnn_graph_destroy(dnn_graph *g);

const char *dnn_type_name(dnn_type t);

#endif
