// argmax.cu: out[r] = the index of the first maximum of row r (torch.argmax(x, dim=1); NaN
// counts as the maximum), as int64, the `cuda` implementation. A group of TPR threads owns a
// row; each thread issues all its NV 16-byte loads, scans its elements in increasing index order,
// then the group reduces (value, index) pairs, ties going to the lower index (warp shuffles,
// plus shared memory when TPR > 32). Values compare as floats (exact for fp16/bf16).
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV. Kernel: argmax_cuda.
#include "tb_common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
argmax_cuda(const DTYPE *__restrict__ x, int64_t *__restrict__ out, int rows, int cols) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  __shared__ float red_v[BLOCK / 32];
  __shared__ int red_i[BLOCK / 32];

  const int t = threadIdx.x % TPR;
  const long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
  const bool active = row < rows;
  const DTYPE *xr = x + (active ? row : 0) * cols;
  const bool vec_ok = cols % V == 0 && tb_aligned16(x);

  tb_vec<DTYPE> v[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    v[j] = (active && e < cols) ? tb_load_part(xr, e, cols, vec_ok) : tb_vec_zero<DTYPE>();
  }
  float best = -INFINITY;
  int best_i = 0x7fffffff;   // loses every comparison: a thread with no element changes nothing
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float f = tb_to_float(v[j].v[k]);
      if (active && e + k < cols && tb_argmax_better(f, e + k, best, best_i)) {
        best = f;
        best_i = e + k;
      }
    }
  }
  tb_group_argmax<TPR>(best, best_i, red_v, red_i);
  if (active && t == 0) out[row] = best_i;
}
