// peaks.cu: the vector ceilings `tilebench peaks` measures besides cuBLASLt's matrix rates.
//   peak_copy   dst = src in 16-byte words, each thread keeping UNROLL independent loads in
//               flight before its stores (grid-stride; bytes counted = read + written)
//   peak_fma    fp32 FMA rate: every thread runs CHAINS independent FMA chains of `iters` steps
//               (no dependency between chains, so the pipes stay full); flops = 2*CHAINS*iters
//               per thread. The result is stored only if it is impossible, so nothing is dead code.
//   peak_read, peak_read2   the read-only and 2-reads-to-1-write mixes (below)
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef CHAINS
#define CHAINS 8
#endif

extern "C" __global__ void __launch_bounds__(256)
peak_copy(const uint4 *__restrict__ src, uint4 *__restrict__ dst, long long n_words) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n_words; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) v[u] = __ldcs(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) __stcs(dst + i + u * stride, v[u]);
  }
  for (; i < n_words; i += stride) dst[i] = src[i];
}

extern "C" __global__ void __launch_bounds__(256)
peak_fma(float *out, int iters, float a, float b) {
  float x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; c++) x[c] = (float)(threadIdx.x + c);
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int c = 0; c < CHAINS; c++) x[c] = __fmaf_rn(x[c], a, b);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < CHAINS; c++) s += x[c];
  if (s == -1.2345e30f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// The other traffic mixes of the memory ceiling (issue 19): kernels stream as the suite's do, so
// the ceiling is the best of the mixes, not the 1:1 copy alone.
//   peak_read   reads n_words 16-byte words (bytes counted = read); the XOR of what it read is
//               stored only if it equals an impossible value, so the loads are not dead code
//   peak_read2  dst = a + b word-wise: 2 reads to 1 write (bytes counted = 3 x n_words x 16)
extern "C" __global__ void __launch_bounds__(256)
peak_read(const uint4 *__restrict__ src, uint4 *__restrict__ sink, long long n_words) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (; i + (UNROLL - 1) * stride < n_words; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) v[u] = __ldcs(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; u++) acc.x ^= v[u].x, acc.y ^= v[u].y, acc.z ^= v[u].z, acc.w ^= v[u].w;
  }
  for (; i < n_words; i += stride) {
    uint4 v = src[i];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if (acc.x == 0x9e3779b9u && acc.y == 0x7f4a7c15u && acc.z == 0xf39cc060u && acc.w == 0x5bd1e995u)
    sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

extern "C" __global__ void __launch_bounds__(256)
peak_read2(const uint4 *__restrict__ a, const uint4 *__restrict__ b, uint4 *__restrict__ dst, long long n_words) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n_words; i += UNROLL * stride) {
    uint4 x[UNROLL], y[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) x[u] = __ldcs(a + i + u * stride), y[u] = __ldcs(b + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
      __stcs(dst + i + u * stride, make_uint4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w));
  }
  for (; i < n_words; i += stride) {
    uint4 x = a[i], y = b[i];
    dst[i] = make_uint4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}
