// flash_attention_ref.cu: the reference. One warp per query row (b, h, i): lane l holds q[d] for
// d = l, l + 32, ... (D <= 256), and for each admissible key j (j <= i when causal, else all) the
// warp sums q . k_j by shuffles, then updates the row's running max m, the sum l of exp(s - m)
// and its share of the weighted V row, all in fp32 with expf (the same function as two passes,
// in a single read of K and V); out = acc / l rounded to fp16 once.
// Kernel: flash_attention_ref(Q, K, V, O, BH, S, D, causal, scale); one warp per row, 8 rows a
// block of 256 threads.
#include <cuda_fp16.h>
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

extern "C" __global__ void flash_attention_ref(const __half *Q, const __half *K, const __half *V, __half *O, int BH,
                                               int S, int D, int causal, float scale) {
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (w >= (long long)BH * S) return;
  const long long bh = w / S;
  const int i = (int)(w % S);
  const long long base = bh * S * D;
  float q[8], acc[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const int d = lane + 32 * c;
    q[c] = d < D ? __half2float(Q[base + (long long)i * D + d]) : 0.0f;
    acc[c] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const int jend = causal ? i + 1 : S;
  for (int j = 0; j < jend; ++j) {
    const __half *k = K + base + (long long)j * D;
    float dot = 0.0f;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const int d = lane + 32 * c;
      if (d < D) dot = fmaf(q[c], __half2float(k[d]), dot);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    const float s = dot * scale;
    const float mn = fmaxf(m, s);
    const float cf = expf(m - mn), p = expf(s - mn);
    l = l * cf + p;
    const __half *v = V + base + (long long)j * D;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const int d = lane + 32 * c;
      if (d < D) acc[c] = fmaf(p, __half2float(v[d]), acc[c] * cf);
    }
    m = mn;
  }
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const int d = lane + 32 * c;
    if (d < D) O[base + (long long)i * D + d] = __float2half_rn(l > 0.0f ? acc[c] / l : 0.0f);
  }
}
