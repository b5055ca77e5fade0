// peaks.cu: the two vector ceilings `tilebench peaks` measures besides cuBLASLt's matrix rates.
//   peak_copy   dst = src in 16-byte words, each thread keeping UNROLL independent loads in
//               flight before its stores (grid-stride; bytes counted = read + written)
//   peak_fma    fp32 FMA rate: every thread runs CHAINS independent FMA chains of `iters` steps
//               (no dependency between chains, so the pipes stay full); flops = 2*CHAINS*iters
//               per thread. The result is stored only if it is impossible, so nothing is dead code.
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
