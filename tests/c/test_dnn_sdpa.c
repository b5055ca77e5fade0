/* test_dnn_sdpa.c: cuda_dnn_sdpa.c's attention graph (flash_attention's `lib`) without a GPU,
 * against tests/c/stub/stub_cudnn.c opened through TILEBENCH_CUDNN_LIB. The stub checks what
 * cuDNN checks at each finalize (shapes that agree, unique ids, virtual tensors produced once, a
 * variant pack binding exactly the graph's non-virtual tensors) and writes the graph it was given
 * as text: the causal graph is compared, operation by operation and tensor by tensor, with the
 * one meant (cudnn-frontend's SDPA pattern: Q K^T, scale, GEN_INDEX rows and columns, CMP_GE,
 * BINARY_SELECT with the mask value, max, sub, exp, sum, log + add into the virtual statistics,
 * div into an fp16 P, P V); the non-causal graph drops the mask; the by-value scalars bound at
 * execution; the engine kept when the first choices do not build and the no-engine message; the
 * argument checks; every descriptor destroyed; cuDNN absent or not cuDNN 9 (no_library). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_dnn_lib.h"
#include "gpu/dnn.h"
#include "stub/stub_cudnn.h"

#include "check.h"

extern const gpu_dnn gpu_cuda_dnn;
static struct stub_cudnn_state *stub;

static dnn_sdpa_desc sdpa(int64_t b, int64_t h, int64_t s, int64_t d, int causal) {
  dnn_sdpa_desc x = {.b = b, .h = h, .s = s, .d = d, .type = DNN_F16, .causal = causal, .scale = 0.25f};
  return x;
}

/* The causal graph for (2, 3, 64, 16) fp16: operations (pointwise modes MUL 1, GEN_INDEX 501,
 * CMP_GE 303, BINARY_SELECT 601, SUB 9, EXP 13, LOG 15, ADD 0, DIV 6; reductions MAX 3, ADD 0),
 * then the tensors by id: dims, strides, virtual or by value. */
static const char causal_graph[] =
  "matmul f32 #1 #2 -> #101\n"
  "pointwise 1 f32 #101 #5 -> #102\n"
  "pointwise 501 i32 axis 2 #102 -> #103\n"
  "pointwise 501 i32 axis 3 #102 -> #104\n"
  "pointwise 303 bool #103 #104 -> #105\n"
  "pointwise 601 f32 #102 #6 #105 -> #106\n"
  "reduce 3 f32 #106 -> #107\n"
  "pointwise 9 f32 #106 #107 -> #108\n"
  "pointwise 13 f32 #108 -> #109\n"
  "reduce 0 f32 #109 -> #110\n"
  "pointwise 15 f32 #110 -> #111\n"
  "pointwise 0 f32 #107 #111 -> #112\n"
  "pointwise 6 f32 #109 #110 -> #113\n"
  "matmul f32 #113 #3 -> #4\n"
  "#1 f16 [2,3,64,16] [3072,1024,16,1]\n"
  "#2 f16 [2,3,16,64] [3072,1024,1,16]\n"
  "#3 f16 [2,3,64,16] [3072,1024,16,1]\n"
  "#4 f16 [2,3,64,16] [3072,1024,16,1]\n"
  "#5 f32 [1,1,1,1] [1,1,1,1] by-value\n"
  "#6 f32 [1,1,1,1] [1,1,1,1] by-value\n"
  "#101 f32 [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#102 f32 [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#103 i32 [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#104 i32 [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#105 bool [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#106 f32 [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#107 f32 [2,3,64,1] [192,64,1,1] virtual\n"
  "#108 f32 [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#109 f32 [2,3,64,64] [12288,4096,64,1] virtual\n"
  "#110 f32 [2,3,64,1] [192,64,1,1] virtual\n"
  "#111 f32 [2,3,64,1] [192,64,1,1] virtual\n"
  "#112 f32 [2,3,64,1] [192,64,1,1] virtual\n"
  "#113 f16 [2,3,64,64] [12288,4096,64,1] virtual\n";

static void first_difference(const char *got, const char *want) {
  size_t i = 0;
  while (got[i] && got[i] == want[i]) i++;
  size_t line = i;
  while (line > 0 && want[line - 1] != '\n') line--;
  fprintf(stderr, "graph differs at offset %zu:\n  got:  %.80s\n  want: %.80s\n", i, got + line, want + line);
}

static void causal_graph_is_the_one_meant(void) {
  stub->configs = 3;
  stub->refuse = 1; /* the heuristic's first choice does not build: the second is kept */
  dnn_graph *g = NULL;
  dnn_sdpa_desc d = sdpa(2, 3, 64, 16, 1);
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_OK && g, "%s", gpu_last_error());
  if (!g) return;
  int same = strcmp(stub->graph_text, causal_graph) == 0;
  CHECK(same, "the causal attention graph is not the one meant:\n%s", stub->graph_text);
  if (!same) first_difference(stub->graph_text, causal_graph);
  dnn_engine e;
  gpu_cuda_dnn.engine(g, &e);
  CHECK(e.rank == 1 && e.n_candidates == 3 && e.global_index == 101, "rank %d of %d, engine %lld", e.rank,
        e.n_candidates, (long long)e.global_index);
  char text[1536];
  gpu_cuda_dnn.describe(g, text, sizeof text);
  CHECK(strstr(text, "cuDNN attention forward (causal, inference) q/v/o (2, 3, 64, 16) fp16 strides (3072, 1024, 16, "
                     "1), k as K^T (2, 3, 16, 64) strides (3072, 1024, 1, 16), scale 0.25") &&
        strstr(text, "; engine 101, knobs {3=1, 5=2}, heuristic choice 2 of 3, workspace 0 B"), "%s", text);
  CHECK(gpu_cuda_dnn.run(g, NULL) == GPU_ERR_INVALID && strstr(gpu_last_error(), "a probe"), "%s",
        gpu_last_error());
  gpu_cuda_dnn.destroy(g);
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
}

/* With buffers: the variant pack binds q, k, v, o and the two scalars (the scale, and -inf: the
 * stub is cuDNN 9.19, where the frontend masks with -inf rather than the lowest float). */
static void bound_graph_runs(void) {
  stub->configs = 2;
  stub->refuse = 0;
  dnn_sdpa_desc d = sdpa(1, 2, 100, 64, 1);
  d.type = DNN_BF16;
  d.scale = 0.125f;
  d.q = 0x10000; d.k = 0x20000; d.v = 0x30000; d.o = 0x40000;
  dnn_graph *g = NULL;
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_OK && g, "%s", gpu_last_error());
  if (!g) return;
  CHECK(strstr(stub->graph_text, "#1 bf16 [1,2,100,64] [12800,6400,64,1]\n#2 bf16 [1,2,64,100] [12800,6400,1,64]\n"),
        "%s", stub->graph_text);
  CHECK(strstr(stub->graph_text, "#113 bf16 [1,2,100,100]"), "P is not in the input type: %s", stub->graph_text);
  int before = stub->executed;
  CHECK(gpu_cuda_dnn.run(g, (gpu_stream)0x1234) == GPU_OK, "%s", gpu_last_error());
  CHECK(stub->executed == before + 1 && stub->stream == (void *)0x1234, "executed %d on %p", stub->executed,
        stub->stream);
  CHECK(stub->n_scalars == 2 && stub->scalar_uid[0] == 5 && stub->scalar_value[0] == 0.125f &&
        stub->scalar_uid[1] == 6 && isinf(stub->scalar_value[1]) && stub->scalar_value[1] < 0,
        "scalars: %d (#%lld = %g, #%lld = %g)", stub->n_scalars, (long long)stub->scalar_uid[0],
        (double)stub->scalar_value[0], (long long)stub->scalar_uid[1], (double)stub->scalar_value[1]);
  gpu_cuda_dnn.destroy(g);
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
}

static void non_causal_has_no_mask(void) {
  stub->configs = 1;
  stub->refuse = 0;
  dnn_sdpa_desc d = sdpa(2, 3, 64, 16, 0);
  d.q = 0x10000; d.k = 0x20000; d.v = 0x30000; d.o = 0x40000;
  dnn_graph *g = NULL;
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_OK && g, "%s", gpu_last_error());
  if (!g) return;
  CHECK(strncmp(stub->graph_text, "matmul f32 #1 #2 -> #101\npointwise 1 f32 #101 #5 -> #102\nreduce 3 f32 #102 -> "
                "#107\npointwise 9 f32 #102 #107 -> #108\n", 104) == 0, "%s", stub->graph_text);
  CHECK(!strstr(stub->graph_text, "#6 ") && !strstr(stub->graph_text, " 501 ") && !strstr(stub->graph_text, " 601 "),
        "a mask in the non-causal graph: %s", stub->graph_text);
  CHECK(gpu_cuda_dnn.run(g, NULL) == GPU_OK, "%s", gpu_last_error());
  CHECK(stub->n_scalars == 1 && stub->scalar_uid[0] == 5, "scalars: %d", stub->n_scalars);
  char text[1536];
  gpu_cuda_dnn.describe(g, text, sizeof text);
  CHECK(strstr(text, "attention forward (no mask, inference)"), "%s", text);
  gpu_cuda_dnn.destroy(g);
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
}

static void no_engine(void) {
  stub->configs = 2;
  stub->refuse = 2;
  dnn_graph *g = (dnn_graph *)1;
  dnn_sdpa_desc d = sdpa(4, 32, 1024, 128, 1);
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_INVALID && g == NULL, "created without an engine");
  CHECK(strstr(gpu_last_error(), "cuDNN offers no engine for attention forward (causal) of q/k/v (4, 32, 1024, 128) "
                                 "fp16: the heuristic gave 2 configurations; the first refused: "
                                 "cudnnBackendFinalize(EXECUTION_PLAN): CUDNN_STATUS_NOT_SUPPORTED (3000) for engine "
                                 "configuration 1; cuDNN says: stub: engine 0 refused"), "%s", gpu_last_error());
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
  stub->configs = 3;
  stub->refuse = 0;
}

static void bad_arguments(void) {
  dnn_graph *g = NULL;
  dnn_sdpa_desc d = sdpa(2, 3, 0, 16, 1);
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_INVALID &&
        strstr(gpu_last_error(), "b, h, s and d must be positive (b=2 h=3 s=0 d=16)"), "%s", gpu_last_error());
  d = sdpa(2, 3, 64, 16, 1);
  d.type = DNN_F32;
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_INVALID && strstr(gpu_last_error(), "fp16 or bf16 (got fp32)"),
        "%s", gpu_last_error());
  d = sdpa(2, 3, 64, 16, 1);
  d.scale = NAN;
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_INVALID && strstr(gpu_last_error(), "positive and finite"), "%s",
        gpu_last_error());
  d = sdpa(2, 3, 64, 16, 1);
  d.q = 0x10000;
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_INVALID && strstr(gpu_last_error(), "or none (a probe)"), "%s",
        gpu_last_error());
  d.k = 0x20000; d.v = 0x30008; d.o = 0x40000;
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_INVALID &&
        strstr(gpu_last_error(), "buffer v at 0x30008 is not 16-byte aligned"), "%s", gpu_last_error());
  CHECK(g == NULL && stub->live == 0, "%d descriptors left", stub->live);
}

/* cuDNN absent: the attention graph says so as batch norm does (no_library, naming the place). */
static void absent_library(void) {
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", "/nonexistent/tb-cudnn/libcudnn.so.9", 1);
  dnn_graph *g = (dnn_graph *)1;
  dnn_sdpa_desc d = sdpa(2, 3, 64, 16, 1);
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_NO_LIBRARY && g == NULL, "create without cuDNN");
  CHECK(strstr(gpu_last_error(), "cuDNN not found: TILEBENCH_CUDNN_LIB=/nonexistent/tb-cudnn/libcudnn.so.9"), "%s",
        gpu_last_error());
}

/* A cuDNN that is not 9 (8.9 here) is refused when opened: no_library, naming its version. */
static void too_old(void) {
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", STUB_CUDNN_PATH, 1);
  setenv("STUB_CUDNN_VERSION", "8907", 1);
  dnn_graph *g = (dnn_graph *)1;
  dnn_sdpa_desc d = sdpa(2, 3, 64, 16, 1);
  CHECK(gpu_cuda_dnn.sdpa_create(&g, &d) == GPU_ERR_NO_LIBRARY && g == NULL, "created with cuDNN 8.9");
  CHECK(strstr(gpu_last_error(), "cuDNN (" STUB_CUDNN_PATH ") is version 8907; tilebench speaks cuDNN 9's backend API"),
        "%s", gpu_last_error());
  unsetenv("STUB_CUDNN_VERSION");
}

int main(void) {
  absent_library();
  too_old();
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", STUB_CUDNN_PATH, 1);
  CHECK(gpu_cuda_dnn.lib.init() == GPU_OK, "%s", gpu_last_error());
  void *h = dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_NOLOAD);
  stub = h ? dlsym(h, "stub_cudnn_state") : NULL;
  CHECK(stub != NULL, "the stub is not the library opened");
  if (stub) {
    causal_graph_is_the_one_meant();
    bound_graph_runs();
    non_causal_has_no_mask();
    no_engine();
    bad_arguments();
  }
  cudnn_reset_for_tests();
  return failures != 0;
}
