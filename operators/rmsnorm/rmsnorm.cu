// rmsnorm.cu: y = x * rsqrt(mean(x^2) + eps) * w over the last dimension (F.rms_norm), the `cuda`
// implementation: statistics in fp32. ROUND_BEFORE_WEIGHT=0: x * rstd * w in fp32 rounded once to
// DTYPE (PyTorch's fused CUDA rms_norm); 1: x * rstd rounded to DTYPE first, then multiplied by w
// and rounded again (ATen's composite rms_norm).
// One pass over x: a group of TPR threads owns a row in registers (NV 16-byte vectors per thread),
// one reduction (warp shuffles, plus shared memory when TPR > 32).
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, ROUND_BEFORE_WEIGHT. Kernel: rmsnorm_cuda.
#include "tb_common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, DTYPE *__restrict__ y,
             int rows, int cols, float eps) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  __shared__ float red[BLOCK / 32];

  const int t = threadIdx.x % TPR;
  const long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
  const bool active = row < rows;
  const DTYPE *xr = x + (active ? row : 0) * cols;
  DTYPE *yr = y + (active ? row : 0) * cols;
  const bool vec_ok = cols % V == 0 && tb_aligned16(x) && tb_aligned16(y) && tb_aligned16(w);

  tb_vec<DTYPE> v[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    v[j] = (active && e < cols) ? tb_load_part(xr, e, cols, vec_ok) : tb_vec_zero<DTYPE>();
  }
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float f = tb_to_float(v[j].v[k]);
      if (active && e + k < cols) ss += f * f;
    }
  }
  const float rstd = rsqrtf(tb_group_sum<TPR>(ss, red) / cols + eps);

#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    if (active && e < cols) {
      const tb_vec<DTYPE> wv = tb_load_part(w, e, cols, vec_ok);
      tb_vec<DTYPE> o;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float nrm = tb_to_float(v[j].v[k]) * rstd;
        if (ROUND_BEFORE_WEIGHT) nrm = tb_round<DTYPE>(nrm);
        o.v[k] = tb_from_float<DTYPE>(nrm * tb_to_float(wv.v[k]));
      }
      tb_store_part(yr, e, cols, vec_ok, o);
    }
  }
}
