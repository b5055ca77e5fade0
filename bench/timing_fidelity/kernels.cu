// kernels.cu: the kernels of the timing-fidelity benchmark and the one table of cases every tool
// times (tilebench, ncu, triton.testing.do_bench), so all three run the same binary code:
//   copy4     dst = src, float4 per thread, grid-stride   (10 sizes, ~2 us to ~5 ms)
//   fma_loop  a dependent FMA chain per thread            (compute-bound, ~50 us to ~20 ms)
//   plan3     scale4, add4, copy4 on 64 MiB buffers       (a three-kernel plan, timed as one)
//   nop       an empty kernel, 1 block and 16 blocks/SM   (diagnostic: each tool's fixed cost)
// and, outside the table, the diagnosis kernels of operators.sh (cases written by operators.py):
//   nop at each operator kernel's launch shape, nop_p8 (64 bytes of parameters), code_line (a
//   32 KiB straight-line twin of fma_loop)
// Built twice by run.sh: `nvcc -cubin` (loaded by tilebench and by do_bench.py) and as a program
// (`fid_cases`) that prints the case table (--list) or launches every case for ncu (--ncu).
#include <cuda_runtime.h>

extern "C" __global__ void copy4(const float4 *__restrict__ src, float4 *__restrict__ dst, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

extern "C" __global__ void scale4(const float4 *__restrict__ src, float4 *__restrict__ dst, long long n4, float alpha) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 v = src[i];
    dst[i] = make_float4(alpha * v.x, alpha * v.y, alpha * v.z, alpha * v.w);
  }
}

extern "C" __global__ void add4(const float4 *__restrict__ a, const float4 *__restrict__ b, float4 *__restrict__ out, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 x = a[i], y = b[i];
    out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

extern "C" __global__ void nop(void) {}

// nop_p8: the empty kernel with eight pointer parameters (64 bytes, about what an operator kernel
// passes), for operators.sh's diagnosis: does ncu's launch excess grow with the parameter block?
extern "C" __global__ void nop_p8(const void *a, const void *b, const void *c, const void *d, const void *e,
                                  const void *f, const void *g, const void *h) {}

// The eviction of `fid_cases --ncu N evict`: tilebench's protocol (read 2 x L2 before each run)
// for ncu --cache-control none. buf is zero-filled and key is 1, so the store never happens, but
// the compiler cannot drop the loads.
extern "C" __global__ void fid_evict(const uint4 *buf, long long n16, unsigned *sink, unsigned key) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x) {
    uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == key) *sink = acc;
}

extern "C" __global__ void fma_loop(float *out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 0.999f, c = 1e-4f;
  for (int i = 0; i < iters; i++) {
    a = fmaf(a, b, c);
    b = fmaf(b, a, c);
  }
  if (a + b == 12345.f) out[threadIdx.x] = a + b; // never true; keeps the loop alive
}

// code_line: the same dependent FMA chain as fma_loop at 1024 iterations (2048 FMAs), unrolled
// into straight-line code (~32 KiB for sm_90, 17 x fma_loop's; the largest operator kernels,
// layernorm_stream and rmsnorm_stream, have 34 KiB), so a launch fetches every instruction once.
// operators.sh times it against fma_loop at n = 1024 (same work, a few instructions of loop): the
// difference is the cost of fetching the code in each tool's cache state (does ncu's
// --cache-control all flush the instruction caches too?). Not in the case table below (run.sh's
// cases stay as they are); operators.py writes its cases (shapes.py).
extern "C" __global__ void code_line(float *out) {
  float a = threadIdx.x * 1e-3f, b = 0.999f, c = 1e-4f;
#pragma unroll
  for (int i = 0; i < 1024; i++) {
    a = fmaf(a, b, c);
    b = fmaf(b, a, c);
  }
  if (a + b == 12345.f) out[threadIdx.x] = a + b; // never true; keeps the chain alive
}

#ifndef __CUDACC_RTC__
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// kind: 0 copy4, 1 fma_loop, 2 plan3, 3 nop. n: float4 elements per buffer (kinds 0, 2), iterations
// (1) or blocks (3).
struct fid_case { const char *name; int kind; long long n; };
static const fid_case cases[] = {
  {"copy_32K", 0, (32ll << 10) / 16},   {"copy_128K", 0, (128ll << 10) / 16},
  {"copy_512K", 0, (512ll << 10) / 16}, {"copy_2M", 0, (2ll << 20) / 16},
  {"copy_8M", 0, (8ll << 20) / 16},     {"copy_32M", 0, (32ll << 20) / 16},
  {"copy_128M", 0, (128ll << 20) / 16}, {"copy_512M", 0, (512ll << 20) / 16},
  {"copy_2G", 0, (2ll << 30) / 16},     {"copy_8G", 0, (8ll << 30) / 16},
  {"fma_6k", 1, 6000},                  {"fma_125k", 1, 125000},
  {"fma_2500k", 1, 2500000},            {"plan3_64M", 2, (64ll << 20) / 16},
  {"nop_1", 3, 1},                      {"nop_2112", 3, 2112},
};
static const int n_cases = sizeof cases / sizeof cases[0];

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_), cudaGetErrorString(e_)); exit(1); } } while (0)

static int sm_count(void) {
  int dev = 0, n = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}
static unsigned mem_grid(long long n4, int sms) {
  long long g = (n4 + 255) / 256, cap = (long long)sms * 16;
  return (unsigned)(g < cap ? g : cap);
}
static long long case_bytes(const fid_case &c) { return c.kind == 0 ? 2 * 16 * c.n : c.kind == 2 ? 7 * 16 * c.n : 0; }

int main(int argc, char **argv) {
  int sms = sm_count();
  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    // One line per case: name kind n bytes grid block (the launch every tool uses).
    for (int i = 0; i < n_cases; i++) {
      const fid_case &c = cases[i];
      unsigned grid = c.kind == 1 ? (unsigned)sms * 4 : c.kind == 3 ? (unsigned)c.n : mem_grid(c.n, sms);
      printf("%s %d %lld %lld %u %d\n", c.name, c.kind, c.n, case_bytes(c), grid, 256);
    }
    return 0;
  }
  // --ncu REPS [evict]: launch every case REPS times, in table order, one launch sequence per line
  // on stdout. evict: fid_evict reads 2 x L2 before each launch sequence, as tilebench does before
  // each run (for ncu --cache-control none; ncu's -k filter leaves fid_evict out).
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  int evict = argc > 3 && strcmp(argv[3], "evict") == 0;
  uint4 *ebuf = NULL;
  unsigned *sink = NULL;
  long long e16 = 0;
  if (evict) {
    int dev = 0, l2 = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    e16 = 2ll * l2 / 16;
    CK(cudaMalloc(&ebuf, e16 * 16));
    CK(cudaMemset(ebuf, 0, e16 * 16));
    CK(cudaMalloc(&sink, 16));
  }
  long long max_n = 0;
  for (int i = 0; i < n_cases; i++) if (cases[i].kind != 1 && cases[i].n > max_n) max_n = cases[i].n;
  float4 *a, *b, *c;
  CK(cudaMalloc(&a, max_n * 16)); CK(cudaMalloc(&b, max_n * 16)); CK(cudaMalloc(&c, 64ll << 20));
  CK(cudaMemset(a, 0, max_n * 16)); CK(cudaMemset(b, 0, max_n * 16));
  float *out; CK(cudaMalloc(&out, 4096));
  for (int i = 0; i < n_cases; i++) {
    const fid_case &k = cases[i];
    for (int r = 0; r < reps; r++) {
      if (evict) fid_evict<<<sms * 8, 256>>>(ebuf, e16, sink, 1u);
      if (k.kind == 3) {
        nop<<<(unsigned)k.n, 256>>>();
      } else if (k.kind == 0) {
        copy4<<<mem_grid(k.n, sms), 256>>>(a, b, k.n);
      } else if (k.kind == 1) {
        fma_loop<<<sms * 4, 256>>>(out, (int)k.n);
      } else {
        unsigned g = mem_grid(k.n, sms);
        scale4<<<g, 256>>>(a, b, k.n, 2.0f);
        add4<<<g, 256>>>(a, b, c, k.n);
        copy4<<<g, 256>>>(c, a, k.n);
      }
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      printf("%s %d %d\n", k.name, r, k.kind == 2 ? 3 : 1); // case, rep, kernels launched
    }
  }
  return 0;
}
#endif
