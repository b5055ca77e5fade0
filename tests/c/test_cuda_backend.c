/* test_cuda_backend.c: the CUDA backend on a real device: memory, NVRTC-compiled kernels, launches
 * (with >48 KiB of dynamic shared memory), streams, events, graph capture, timeouts, OOM and a
 * sticky fault, each checked by reading results back. Exits 77 without a device; run on the GPU
 * machine through tests/gpu/cuda_backend.sh (label gpu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/gpu.h"

#include "check.h"
#define OK(call) CHECK((call) == GPU_OK, "%s", gpu_last_error())

static const char *source =
  "extern \"C\" __global__ void axpy(float *y, const float *x, float a, long n) {\n"
  "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
  "  if (i < n) y[i] += a * x[i];\n"
  "}\n"
  "extern \"C\" __global__ void smem_reverse(int *out, int n) {\n" /* n ints of dynamic smem */
  "  extern __shared__ int s[];\n"
  "  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = i;\n"
  "  __syncthreads();\n"
  "  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = s[n - 1 - i];\n"
  "}\n"
  "extern \"C\" __global__ void spin(unsigned long long ns) {\n"
  "  unsigned long long t0, t;\n"
  "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
  "  do { __nanosleep(1000); asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); } while (t - t0 < ns);\n"
  "}\n"
  "extern \"C\" __global__ void fault(int *p) { p[threadIdx.x] = 1; }\n";

static gpu_module *load_module(const gpu_backend *b) {
  rtc_result r;
  gpu_module *m = NULL;
  gpu_status st = rtc_compile(source, "backend_test.cu", NULL, 0, NULL, 0, NULL, &r); /* the device's arch */
  CHECK(st == GPU_OK, "%s", gpu_last_error());
  if (st == GPU_OK) OK(b->module_load_image(&m, r.image, r.size));
  rtc_result_free(&r);
  return m;
}

/* A kernel writing through a bad pointer leaves a sticky error: run it in a child process forked
 * before the parent initialises CUDA (a child cannot use CUDA its parent initialised). Returns the
 * child's exit status: 0 reported correctly, 1 wrong report, 3 no device. */
static int sticky_fault_in_child(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    const gpu_backend *b = gpu_backend_get();
    if (b->init() != GPU_OK || b->set_device(0) != GPU_OK) _exit(3);
    gpu_module *m = load_module(b);
    gpu_function *f = NULL;
    if (m == NULL || b->function_get(&f, m, "fault") != GPU_OK) _exit(1);
    int *bad = (int *)(uintptr_t)0x10;
    void *args[] = {&bad};
    unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    gpu_status st = b->launch(f, grid, block, 0, NULL, args);
    if (st == GPU_OK) st = b->synchronize();
    int good = st == GPU_ERR_FAULT && strstr(gpu_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL;
    fprintf(stderr, "fault child: status %d: %s\n", st, gpu_last_error());
    _exit(good ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

int main(void) {
  int fault_child = sticky_fault_in_child();
  const gpu_backend *b = gpu_backend_get();
  int n = 0;
  if (b->init() != GPU_OK || b->device_count(&n) != GPU_OK || n == 0) {
    fprintf(stderr, "skipped: %s\n", gpu_last_error());
    return 77;
  }
  CHECK(fault_child == 0, "illegal address not reported as GPU_ERR_FAULT (child status %d)", fault_child);

  gpu_device_props p;
  OK(b->device_props(0, &p));
  printf("device 0: %s %s (%s) %d SMs, L2 %zu, %zu bytes, peak %.0f GB/s, smem optin %zu\n", p.name, p.arch,
         p.family, p.sm_count, p.l2_bytes, p.total_mem, p.peak_dram_gbs, p.smem_per_block_optin);
  CHECK(p.sm_count > 0 && p.l2_bytes > 0 && p.total_mem > 0 && p.warp_size == 32, "props");
  CHECK(strncmp(p.arch, "sm_", 3) == 0 && strcmp(p.family, "unknown") != 0, "%s %s", p.arch, p.family);
  if (p.cc_major == 9 && p.cc_minor == 0) CHECK(strcmp(p.family, "hopper") == 0, "%s", p.family);
  OK(b->set_device(0));
  int cur = -1;
  OK(b->current_device(&cur));
  CHECK(cur == 0, "current %d", cur);
  gpu_version_info v;
  OK(b->version(&v));
  printf("driver %d at %s\n", v.driver_version, v.driver_path);

  /* memory round trip and memsets */
  enum { N = 1 << 20 };
  float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) hx[i] = (float)(i % 1000), hy[i] = 1.0f;
  gpu_ptr dx = 0, dy = 0, dz = 0;
  OK(b->mem_alloc(&dx, N * sizeof(float)));
  OK(b->mem_alloc(&dy, N * sizeof(float)));
  OK(b->mem_alloc(&dz, N * sizeof(int)));
  OK(b->copy_htod(dx, hx, N * sizeof(float)));
  OK(b->copy_htod(dy, hy, N * sizeof(float)));
  gpu_stream s = NULL;
  OK(b->stream_create(&s));
  OK(b->memset32_async(dz, 0xdeadbeefu, N, s));
  OK(b->stream_synchronize(s));
  unsigned *hz = malloc(N * sizeof(unsigned));
  OK(b->copy_dtoh(hz, dz, N * sizeof(unsigned)));
  CHECK(hz[0] == 0xdeadbeefu && hz[N - 1] == 0xdeadbeefu, "memset32 %x", hz[0]);
  OK(b->memset8_async(dz, 0x7f, 16, s));
  OK(b->stream_synchronize(s));
  OK(b->copy_dtoh(hz, dz, 8));
  CHECK(hz[0] == 0x7f7f7f7fu && hz[1] == 0x7f7f7f7fu, "memset8 %x", hz[0]);
  size_t free_b = 0, total_b = 0;
  OK(b->mem_info(&free_b, &total_b));
  CHECK(free_b > 0 && free_b <= total_b, "mem_info");

  gpu_module *m = load_module(b);
  if (m == NULL) return 1;
  gpu_function *axpy = NULL, *again = NULL, *rev = NULL, *spin = NULL, *missing = NULL;
  OK(b->function_get(&axpy, m, "axpy"));
  OK(b->function_get(&again, m, "axpy"));
  CHECK(axpy == again, "function not cached by name");
  CHECK(b->function_get(&missing, m, "no_such_kernel") == GPU_ERR_INVALID, "missing kernel");
  CHECK(strstr(gpu_last_error(), "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND") &&
        strstr(gpu_last_error(), "'no_such_kernel'"), "%s", gpu_last_error());
  gpu_function_attrs a;
  OK(b->function_attrs(axpy, &a));
  printf("axpy: %d regs, %d params, binary %d\n", a.num_regs, a.num_params, a.binary_version);
  CHECK(a.num_regs > 0 && a.max_threads_per_block > 0, "attrs");
  if (v.driver_version >= 12040) {
    CHECK(a.num_params == 4, "num_params %d", a.num_params);
    CHECK(a.param_size[0] == 8 && a.param_size[1] == 8 && a.param_size[2] == 4 && a.param_size[3] == 8,
          "param sizes %zu %zu %zu %zu", a.param_size[0], a.param_size[1], a.param_size[2], a.param_size[3]);
  }

  /* launch, events, wait with a timeout */
  float alpha = 2.0f;
  long count = N;
  void *args[] = {&dy, &dx, &alpha, &count};
  unsigned grid[3] = {N / 256, 1, 1}, block[3] = {256, 1, 1};
  gpu_event e0, e1;
  OK(b->event_create(&e0));
  OK(b->event_create(&e1));
  OK(b->event_record(e0, s));
  OK(b->launch(axpy, grid, block, 0, s, args));
  OK(b->event_record(e1, s));
  OK(b->stream_wait_timeout(s, 10000));
  float ms = -1;
  OK(b->event_elapsed_ms(&ms, e0, e1));
  CHECK(ms > 0 && ms < 1000, "elapsed %f ms", ms);
  OK(b->copy_dtoh(hy, dy, N * sizeof(float)));
  CHECK(hy[0] == 1.0f && hy[999] == 1.0f + 2.0f * 999 && hy[N - 1] == 1.0f + 2.0f * ((N - 1) % 1000), "axpy %f",
        hy[999]);

  /* graph: capture one axpy, replay it twice */
  gpu_graph g = NULL;
  OK(b->capture_begin(s));
  OK(b->launch(axpy, grid, block, 0, s, args));
  OK(b->capture_end(s, &g));
  OK(b->graph_launch(g, s));
  OK(b->graph_launch(g, s));
  OK(b->stream_synchronize(s));
  OK(b->graph_destroy(g));
  OK(b->copy_dtoh(hy, dy, N * sizeof(float)));
  CHECK(hy[999] == 1.0f + 3 * 2.0f * 999, "graph replay %f", hy[999]);

  /* more than 48 KiB of dynamic shared memory: the backend raises the limit itself */
  OK(b->function_get(&rev, m, "smem_reverse"));
  int ints = (int)(p.smem_per_block_optin / sizeof(int)) - 64;
  unsigned smem = (unsigned)ints * sizeof(int);
  void *rargs[] = {&dz, &ints};
  unsigned one[3] = {1, 1, 1}, rblock[3] = {1024, 1, 1};
  CHECK(ints > 12 * 1024, "device offers only %zu bytes of shared memory per block", p.smem_per_block_optin);
  if (ints > 12 * 1024) {
    OK(b->launch(rev, one, rblock, smem, s, rargs));
    OK(b->stream_synchronize(s));
    OK(b->copy_dtoh(hz, dz, (size_t)ints * sizeof(int)));
    CHECK(hz[0] == (unsigned)ints - 1 && hz[ints - 1] == 0, "smem reverse %u", hz[0]);
    OK(b->function_attrs(rev, &a));
    CHECK(a.max_dynamic_smem_bytes >= (int)smem, "dynamic smem limit %d < %u", a.max_dynamic_smem_bytes, smem);
  }

  /* a wait shorter than the work times out; a long enough one then succeeds */
  OK(b->function_get(&spin, m, "spin"));
  unsigned long long ns = 300000000ull; /* 300 ms */
  void *sargs[] = {&ns};
  OK(b->launch(spin, one, one, 0, s, sargs));
  CHECK(b->stream_wait_timeout(s, 20) == GPU_ERR_TIMEOUT, "no timeout: %s", gpu_last_error());
  OK(b->stream_wait_timeout(s, 10000));

  /* too much memory is GPU_ERR_OOM, a case status, not a crash */
  gpu_ptr huge = 0;
  CHECK(b->mem_alloc(&huge, (size_t)1 << 50) == GPU_ERR_OOM, "%s", gpu_last_error());
  CHECK(strstr(gpu_last_error(), "CUDA_ERROR_OUT_OF_MEMORY") != NULL, "%s", gpu_last_error());

  OK(b->event_destroy(e0));
  OK(b->event_destroy(e1));
  OK(b->module_unload(m));
  OK(b->mem_free(dx));
  OK(b->mem_free(dy));
  OK(b->mem_free(dz));
  OK(b->stream_destroy(s));
  free(hx), free(hy), free(hz);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
