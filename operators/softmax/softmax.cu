// softmax.cu: y[r, :] = exp(x[r, :] - max_r) / sum_c exp(x[r, c] - max_r) row by row
// (torch.softmax(x, -1)), the `cuda` implementation: fp32 math, output rounded once to DTYPE.
// One pass over the data: a group of TPR threads owns a row and holds it in registers (NV 16-byte
// vectors per thread), reduces the max, then the sum of exponentials (warp shuffles, plus shared
// memory when TPR > 32), and writes the row. TPR = 32 is warp-per-row, TPR = BLOCK block-per-row.
// exp is __expf (SFU; within 1e-6 relative for the arguments x - max <= 0 that occur here).
// Defines: DTYPE, BLOCK (threads per block), TPR (threads per row, power of two 32..BLOCK),
// NV (vectors per thread: cdiv(cols, TPR * 16 / sizeof(DTYPE))). Kernel: softmax_cuda.
#include "tb_common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  __shared__ float red_max[BLOCK / 32], red_sum[BLOCK / 32];

  const int t = threadIdx.x % TPR;
  const long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
  const bool active = row < rows;   // inactive groups still reach every barrier
  const DTYPE *xr = x + (active ? row : 0) * cols;
  DTYPE *yr = y + (active ? row : 0) * cols;
  const bool vec_ok = cols % V == 0 && tb_aligned16(x) && tb_aligned16(y);

  tb_vec<DTYPE> v[NV];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    v[j] = (active && e < cols) ? tb_load_part(xr, e, cols, vec_ok) : tb_vec_zero<DTYPE>();
  }
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) m = fmaxf(m, tb_to_float(v[j].v[k]));
  }
  m = tb_group_max<TPR>(m, red_max);

  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) s += __expf(tb_to_float(v[j].v[k]) - m);
  }
  s = tb_group_sum<TPR>(s, red_sum);
  const float inv = 1.0f / s;

#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    if (active && e < cols) {
      tb_vec<DTYPE> o;
#pragma unroll
      for (int k = 0; k < V; ++k) o.v[k] = tb_from_float<DTYPE>(__expf(tb_to_float(v[j].v[k]) - m) * inv);
      tb_store_part(yr, e, cols, vec_ok, o);
    }
  }
}
