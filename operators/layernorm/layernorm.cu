// layernorm.cu: y = (x - mean) / sqrt(var + eps) * w + b over the last dimension (F.layer_norm,
// biased variance), the `cuda` implementation: statistics in fp32, output rounded once to DTYPE.
// One pass over x: a group of TPR threads owns a row and holds it in registers (NV 16-byte
// vectors per thread); mean and then the centred sum of squares (two reductions of the register
// copy, as exact as a two-pass algorithm) come from warp shuffles, plus shared memory when
// TPR > 32. w and b are read per row (they stay in L1/L2).
// Defines: DTYPE, BLOCK, TPR (threads per row, power of two 32..BLOCK), NV (vectors per thread).
// Kernel: layernorm_cuda.
#include "tb_common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, const DTYPE *__restrict__ b,
               DTYPE *__restrict__ y, int rows, int cols, float eps) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  __shared__ float red_mean[BLOCK / 32], red_var[BLOCK / 32];

  const int t = threadIdx.x % TPR;
  const long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
  const bool active = row < rows;
  const DTYPE *xr = x + (active ? row : 0) * cols;
  DTYPE *yr = y + (active ? row : 0) * cols;
  const bool vec_ok = cols % V == 0 && tb_aligned16(x) && tb_aligned16(y) && tb_aligned16(w) &&
                      tb_aligned16(b);

  tb_vec<DTYPE> v[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    v[j] = (active && e < cols) ? tb_load_part(xr, e, cols, vec_ok) : tb_vec_zero<DTYPE>();
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) s += tb_to_float(v[j].v[k]);
  }
  const float mean = tb_group_sum<TPR>(s, red_mean) / cols;
  float d2 = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float d = tb_to_float(v[j].v[k]) - mean;
      if (active && e + k < cols) d2 += d * d;
    }
  }
  const float var = tb_group_sum<TPR>(d2, red_var) / cols;
  const float rstd = rsqrtf(var + eps);

#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    if (active && e < cols) {
      const tb_vec<DTYPE> wv = tb_load_part(w, e, cols, vec_ok);
      const tb_vec<DTYPE> bv = tb_load_part(b, e, cols, vec_ok);
      tb_vec<DTYPE> o;
#pragma unroll
      for (int k = 0; k < V; ++k)
        o.v[k] = tb_from_float<DTYPE>((tb_to_float(v[j].v[k]) - mean) * rstd * tb_to_float(wv.v[k]) +
                                      tb_to_float(bv.v[k]));
      tb_store_part(yr, e, cols, vec_ok, o);
    }
  }
}
