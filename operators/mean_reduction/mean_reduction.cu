// mean_reduction.cu: out[r] = (1/N) * sum_c x[r, c] (x.mean(dim=1, dtype=torch.float32)), the
// `cuda` implementation: fp32 accumulation and an fp32 output for every input dtype.
// A group of TPR threads owns a row; each thread issues all its NV 16-byte loads before adding
// (the whole row is in flight at once), then the group reduces (warp shuffles, plus shared
// memory when TPR > 32). Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV (vectors per
// thread: cdiv(cols, TPR * 16 / sizeof(DTYPE))). Kernel: mean_reduction_cuda.
#include "tb_common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
mean_reduction_cuda(const DTYPE *__restrict__ x, float *__restrict__ out, int rows, int cols) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  __shared__ float red[BLOCK / 32];

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
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    float sj = 0.0f;   // per-vector partial sums: shorter dependency chains
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) sj += tb_to_float(v[j].v[k]);
    s += sj;
  }
  s = tb_group_sum<TPR>(s, red);
  if (active && t == 0) out[row] = s * (1.0f / cols);
}
