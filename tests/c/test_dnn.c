/* test_dnn.c: the cuDNN batch-norm graph without a GPU. The loader's absent-library answer (the
 * status, TILEBENCH_CUDNN_LIB and the loader's reason in the message, the same answer again);
 * then, against tests/c/stub/stub_cudnn.c opened through TILEBENCH_CUDNN_LIB, the graph cuda_dnn.c
 * builds (x (N, C) as NCHW (N, C, 1, 1) channels innermost, fp32 statistics, by-value epsilon),
 * the engine it keeps when the heuristic's first choices do not build, what it records of it,
 * the no-engine message, argument checks, and that every descriptor is destroyed; and the Python
 * step of the search with a stand-in interpreter. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_backend.h"
#include "gpu/blas.h"
#include "gpu/cuda_dnn_lib.h"
#include "gpu/dnn.h"
#include "stub/stub_cudnn.h"

#include "check.h"

extern const gpu_dnn gpu_cuda_dnn;

static struct stub_cudnn_state *stub;

static void absent_library(void) {
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", "/nonexistent/tb-cudnn/libcudnn.so.9", 1);
  gpu_status st = gpu_cuda_dnn.lib.init();
  char first[4096];
  snprintf(first, sizeof first, "%s", gpu_last_error());
  CHECK(st == GPU_ERR_NO_LIBRARY, "status %d: %s", st, first);
  CHECK(strstr(first, "cuDNN not found: TILEBENCH_CUDNN_LIB=/nonexistent/tb-cudnn/libcudnn.so.9") != NULL,
        "%s", first);
  CHECK(strstr(first, "No such file or directory") != NULL, "the loader's reason is missing: %s", first);
  gpu_set_error(GPU_ERR_OTHER, "something else");
  CHECK(gpu_cuda_dnn.lib.init() == GPU_ERR_NO_LIBRARY && strcmp(gpu_last_error(), first) == 0,
        "the second answer differs: %s", gpu_last_error());
  dnn_graph *g = (dnn_graph *)1;
  dnn_batchnorm_desc d = {.n = 4, .c = 8, .x_type = DNN_F16, .param_type = DNN_F32, .eps = 1e-5f};
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_NO_LIBRARY && g == NULL, "create without cuDNN");
  CHECK(strstr(gpu_last_error(), "TILEBENCH_CUDNN_LIB") != NULL, "%s", gpu_last_error());
  size_t v = 7;
  CHECK(gpu_cuda_dnn.lib.version(&v, NULL, 0) == GPU_ERR_NO_LIBRARY && v == 7, "version without cuDNN");
  /* a directory given: the library is looked for inside it, and named */
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", "/", 1);
  CHECK(gpu_cuda_dnn.lib.init() == GPU_ERR_NO_LIBRARY && strstr(gpu_last_error(), "//libcudnn.so.9: ") != NULL,
        "%s", gpu_last_error());
}

/* The Python step asks the interpreter where nvidia.cudnn is (a stand-in interpreter here). */
static void python_package_step(void) {
  char dir[] = "/tmp/tb-dnn-python-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char good[256], bad[256], out[1024], report[1024] = "";
  snprintf(good, sizeof good, "%s/python-good", dir);
  snprintf(bad, sizeof bad, "%s/python-bad", dir);
  FILE *f = fopen(good, "w");
  if (f) { fputs("#!/bin/sh\n[ \"$1\" = -c ] && echo /opt/site-packages/nvidia/cudnn\n", f); fclose(f); }
  f = fopen(bad, "w");
  if (f) { fputs("#!/bin/sh\necho 'ModuleNotFoundError' >&2; exit 1\n", f); fclose(f); }
  chmod(good, 0755);
  chmod(bad, 0755);
  setenv("TILEBENCH_PYTHON", good, 1);
  cudnn_python_lib_dir(out, sizeof out, report, sizeof report);
  CHECK(strcmp(out, "/opt/site-packages/nvidia/cudnn/lib") == 0 && report[0] == '\0', "dir '%s' report '%s'", out,
        report);
  setenv("TILEBENCH_PYTHON", bad, 1);
  cudnn_python_lib_dir(out, sizeof out, report, sizeof report);
  CHECK(out[0] == '\0' && strstr(report, "python-bad: no nvidia.cudnn package (import failed)"), "dir '%s' report '%s'",
        out, report);
  unsetenv("TILEBENCH_PYTHON");
  unlink(good);
  unlink(bad);
  rmdir(dir);
}

static void open_stub(void) {
  cudnn_reset_for_tests();
  setenv("TILEBENCH_CUDNN_LIB", STUB_CUDNN_PATH, 1);
  size_t v = 0;
  char path[1024] = "";
  CHECK(gpu_cuda_dnn.lib.version(&v, path, sizeof path) == GPU_OK, "%s", gpu_last_error());
  CHECK(v == 91900 && strcmp(path, STUB_CUDNN_PATH) == 0, "version %zu path %s", v, path);
  void *h = dlopen(STUB_CUDNN_PATH, RTLD_NOW | RTLD_NOLOAD);
  stub = h ? dlsym(h, "stub_cudnn_state") : NULL;
  CHECK(stub != NULL, "the stub is not the library opened");
}

static dnn_batchnorm_desc bn(int64_t n, int64_t c, dnn_type x, dnn_type p) {
  dnn_batchnorm_desc d = {.n = n, .c = c, .x_type = x, .param_type = p, .eps = 1e-5f};
  return d;
}

static void probe_records_the_engine(void) {
  stub->configs = 3;
  stub->refuse = 1; /* the heuristic's first choice does not build: the second is kept */
  dnn_graph *g = NULL;
  dnn_batchnorm_desc d = bn(1000, 1024, DNN_F16, DNN_F32);
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_OK && g, "%s", gpu_last_error());
  if (!g) return;
  const int64_t dims[4] = {1000, 1024, 1, 1}, strides[4] = {1024, 1, 1024, 1024};
  CHECK(memcmp(stub->x_dims, dims, sizeof dims) == 0, "x dims %lld %lld %lld %lld", (long long)stub->x_dims[0],
        (long long)stub->x_dims[1], (long long)stub->x_dims[2], (long long)stub->x_dims[3]);
  CHECK(memcmp(stub->x_strides, strides, sizeof strides) == 0, "x strides %lld %lld %lld %lld",
        (long long)stub->x_strides[0], (long long)stub->x_strides[1], (long long)stub->x_strides[2],
        (long long)stub->x_strides[3]);
  CHECK(stub->scale_dims[0] == 1 && stub->scale_dims[1] == 1024, "scale is (1, C, 1, 1)");
  CHECK(stub->x_dtype == 2 && stub->scale_dtype == 0 && stub->mean_dtype == 0, "types x %d scale %d mean %d",
        stub->x_dtype, stub->scale_dtype, stub->mean_dtype);
  CHECK(stub->eps_by_value, "epsilon is not by value");
  CHECK(strcmp(stub->graph_text, "norm #0 #1 #2 #3 -> #4 #5 #6\n"
                                 "#0 f16 [1000,1024,1,1] [1024,1,1024,1024]\n"
                                 "#1 f32 [1,1024,1,1] [1024,1,1024,1024]\n"
                                 "#2 f32 [1,1024,1,1] [1024,1,1024,1024]\n"
                                 "#3 f32 [1,1,1,1] [1,1,1,1] by-value\n"
                                 "#4 f16 [1000,1024,1,1] [1024,1,1024,1024]\n"
                                 "#5 f32 [1,1024,1,1] [1024,1,1024,1024]\n"
                                 "#6 f32 [1,1024,1,1] [1024,1,1024,1024]\n") == 0,
        "the batch-norm graph is not the one meant:\n%s", stub->graph_text);
  dnn_engine e;
  gpu_cuda_dnn.engine(g, &e);
  CHECK(e.rank == 1 && e.n_candidates == 3 && e.global_index == 101, "rank %d of %d, engine %lld", e.rank,
        e.n_candidates, (long long)e.global_index);
  CHECK(e.n_knobs == 2 && e.knob_type[0] == 3 && e.knob_value[0] == 1 && e.knob_type[1] == 5 &&
        e.knob_value[1] == 2, "knobs %d", e.n_knobs);
  CHECK(e.workspace_bytes == 0, "workspace %zu", e.workspace_bytes);
  char text[1024];
  gpu_cuda_dnn.describe(g, text, sizeof text);
  CHECK(strstr(text, "x (1000, 1024) fp16 as NCHW (1000, 1024, 1, 1) strides (1024, 1, 1024, 1024)") &&
        strstr(text, "engine 101, knobs {3=1, 5=2}, heuristic choice 2 of 3, workspace 0 B"), "%s", text);
  CHECK(gpu_cuda_dnn.run(g, NULL) == GPU_ERR_INVALID && strstr(gpu_last_error(), "a probe"), "%s",
        gpu_last_error());
  CHECK(stub->executed == 0, "a probe executed");
  gpu_cuda_dnn.destroy(g);
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
}

static void bound_graph_runs(void) {
  stub->configs = 2;
  stub->refuse = 0;
  dnn_batchnorm_desc d = bn(3, 5, DNN_BF16, DNN_BF16);
  d.eps = 1e-3f;
  d.x = 0x10000; d.scale = 0x20000; d.bias = 0x30000; d.y = 0x40000; d.mean = 0x50000; d.inv_var = 0x60000;
  dnn_graph *g = NULL;
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_OK && g, "%s", gpu_last_error());
  if (!g) return;
  CHECK(stub->x_dtype == 9 && stub->scale_dtype == 9, "bf16 is CUDNN_DATA_BFLOAT16");
  CHECK(gpu_cuda_dnn.run(g, (gpu_stream)0x1234) == GPU_OK, "%s", gpu_last_error());
  CHECK(stub->n_scalars == 1 && stub->scalar_uid[0] == 3 && stub->scalar_value[0] == 1e-3f,
        "the variant pack's epsilon: %d scalars, #%lld = %g", stub->n_scalars, (long long)stub->scalar_uid[0],
        (double)stub->scalar_value[0]);
  CHECK(stub->executed == 1 && stub->stream == (void *)0x1234, "executed %d on %p", stub->executed, stub->stream);
  gpu_cuda_dnn.destroy(g);
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
}

static void no_engine(void) {
  stub->configs = 2;
  stub->refuse = 2;
  dnn_graph *g = (dnn_graph *)1;
  dnn_batchnorm_desc d = bn(1000, 1024, DNN_F32, DNN_F32);
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_INVALID && g == NULL, "created without an engine");
  const char *m = gpu_last_error();
  CHECK(strstr(m, "cuDNN offers no engine for batch norm (training) of x (1000, 1024) fp32, scale/bias fp32: "
                  "the heuristic gave 2 configurations; the first refused: cudnnBackendFinalize(EXECUTION_PLAN): "
                  "CUDNN_STATUS_NOT_SUPPORTED (3000) for engine configuration 1; cuDNN says: stub: engine 0 refused"),
        "%s", m);
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
  stub->configs = 0; /* neither instant nor fallback mode offers any */
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_INVALID &&
        strstr(gpu_last_error(), "the heuristic gave 0 configurations"), "%s", gpu_last_error());
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
  stub->configs = 3;
  stub->refuse = 0;
}

static void bad_arguments(void) {
  dnn_graph *g = NULL;
  dnn_batchnorm_desc d = bn(0, 1024, DNN_F32, DNN_F32);
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_INVALID &&
        strstr(gpu_last_error(), "n and c must be positive (n=0 c=1024)"), "%s", gpu_last_error());
  d = bn(4, 4, DNN_F32, DNN_F32);
  d.x = 0x10000;
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_INVALID && strstr(gpu_last_error(), "or none"), "%s",
        gpu_last_error());
  d.scale = 0x20000; d.bias = 0x30000; d.y = 0x40008; d.mean = 0x50000; d.inv_var = 0x60000;
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_INVALID &&
        strstr(gpu_last_error(), "buffer y at 0x40008 is not 16-byte aligned"), "%s", gpu_last_error());
  d = bn(4, 4, DNN_F32, DNN_F32);
  d.eps = 0.0f;
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_INVALID && strstr(gpu_last_error(), "eps must be positive"),
        "%s", gpu_last_error());
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
}

/* A cuDNN whose handle cannot be made (a sub-library that does not load) is unusable: no_library,
 * naming the call, the status and cuDNN's reason. */
static void handle_refused(void) {
  cudnn_reset_for_tests();
  stub->create_status = 1008;
  CHECK(gpu_cuda_dnn.lib.init() == GPU_OK, "%s", gpu_last_error());
  dnn_graph *g = (dnn_graph *)1;
  dnn_batchnorm_desc d = bn(4, 8, DNN_F32, DNN_F32);
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_ERR_NO_LIBRARY && g == NULL, "created without a handle");
  CHECK(strstr(gpu_last_error(), "cudnnCreate: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED (1008) for the handle (" STUB_CUDNN_PATH
               "); cuDNN says: stub: libcudnn_graph.so.9 not loaded"), "%s", gpu_last_error());
  stub->create_status = 0;
  CHECK(gpu_cuda_dnn.batchnorm_create(&g, &d) == GPU_OK && g, "the handle is tried again: %s", gpu_last_error());
  gpu_cuda_dnn.destroy(g);
  CHECK(stub->live == 0, "%d descriptors left", stub->live);
}

/* A backend without a DNN library (the fake) says so through the dnn_* calls. */
static void backend_without_dnn(void) {
  CHECK(gpu_backend_register(fake_backend()) == GPU_OK, "%s", gpu_last_error());
  CHECK(gpu_backend_select("fake") == GPU_OK, "%s", gpu_last_error());
  dnn_graph *g = (dnn_graph *)1;
  dnn_batchnorm_desc d = bn(4, 4, DNN_F32, DNN_F32);
  CHECK(dnn_init() == GPU_ERR_NO_LIBRARY && strstr(gpu_last_error(), "the fake backend has no DNN library"),
        "%s", gpu_last_error());
  CHECK(dnn_batchnorm_create(&g, &d) == GPU_ERR_NO_LIBRARY && g == NULL, "create on the fake backend");
  size_t v = 1;
  char path[64];
  CHECK(dnn_version(&v, path, sizeof path) == GPU_ERR_NO_LIBRARY &&
            strcmp(gpu_last_error(), "dnn: the fake backend has no DNN library") == 0, "%s", gpu_last_error());
  /* the same descriptor-driven lookup (gpu/library.c) serves the BLAS */
  blas_matmul *m = (blas_matmul *)1;
  blas_matmul_desc md = {.m = 1, .n = 1, .k = 1, .batch = 1};
  CHECK(blas_init() == GPU_ERR_NO_LIBRARY && strcmp(gpu_last_error(), "blas: the fake backend has no BLAS library") == 0,
        "%s", gpu_last_error());
  CHECK(blas_matmul_create(&m, &md) == GPU_ERR_NO_LIBRARY && m == NULL, "blas create on the fake backend");
}

int main(void) {
  absent_library();
  python_package_step();
  open_stub();
  if (stub) {
    probe_records_the_engine();
    bound_graph_runs();
    no_engine();
    bad_arguments();
    handle_refused();
  }
  backend_without_dnn();
  cudnn_reset_for_tests();
  return failures != 0;
}
