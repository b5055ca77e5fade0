// mean_reduction.cu: out[r] = (1/N) * sum_c x[r, c] (x.mean(dim=1, dtype=torch.float32)), the
// `cuda` implementation: fp32 accumulation and an fp32 output for every input dtype.
// A group of TPR threads owns RPG consecutive rows; each thread issues all its RPG x NV 16-byte
// loads before adding (every row of the group is in flight at once), then reduces the rows one by
// one (warp shuffles, plus shared memory when TPR > 32), so the reduction of a row overlaps the
// loads of the rows after it. Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV (vectors
// per thread: cdiv(cols, TPR * 16 / sizeof(DTYPE))), RPG (rows per group, default 1: one row per
// group, the kernel as it was before RPG existed). Kernel: mean_reduction_cuda.
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
mean_reduction_cuda(const DTYPE *__restrict__ x, float *__restrict__ out, int rows, int cols) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red[RPG][BLOCK / 32];   // one buffer per row: each reduction needs its own

  const int t = threadIdx.x % TPR;
  // Rows row0 .. row0 + RPG - 1; those at or past `rows` (the tail) load nothing and store
  // nothing, but their group still reaches every barrier.
  const long long row0 = ((long long)blockIdx.x * RPB + threadIdx.x / TPR) * RPG;
  long long row[RPG];
  bool active[RPG];
  const DTYPE *xr[RPG];
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    row[i] = row0 + i;
    active[i] = row[i] < rows;
    xr[i] = x + (active[i] ? row[i] : 0) * cols;
  }
  const bool vec_ok = cols % V == 0 && tb_aligned16(x);

  tb_vec<DTYPE> v[RPG][NV];
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      v[i][j] = (active[i] && e < cols) ? tb_load_part(xr[i], e, cols, vec_ok) : tb_vec_zero<DTYPE>();
    }
  }
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      float sj = 0.0f;   // per-vector partial sums: shorter dependency chains
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (active[i] && e + k < cols) sj += tb_to_float(v[i][j].v[k]);
      s += sj;
    }
    s = tb_group_sum<TPR>(s, red[i]);
    if (active[i] && t == 0) out[row[i]] = s * (1.0f / cols);
  }
}
