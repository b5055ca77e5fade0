// rmsnorm.cu: y = x * rsqrt(mean(x^2) + eps) * w over the last dimension (F.rms_norm), the `cuda`
// implementation: statistics in fp32. ROUND_BEFORE_WEIGHT=0: x * rstd * w in fp32 rounded once to
// DTYPE (PyTorch's fused CUDA rms_norm); 1: x * rstd rounded to DTYPE first, then multiplied by w
// and rounded again (ATen's composite rms_norm).
// One pass over x: a group of TPR threads owns RPG consecutive rows in registers (RPG x NV 16-byte
// vectors per thread, every load issued first); row by row, one reduction (warp shuffles, plus
// shared memory when TPR > 32) and the row's stores, so a row's reduction overlaps the loads of
// the rows after it.
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, RPG (rows per group, default 1),
// ROUND_BEFORE_WEIGHT. Kernel: rmsnorm_cuda.
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, DTYPE *__restrict__ y,
             int rows, int cols, float eps) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red[RPG][BLOCK / 32];   // one buffer per row

  const int t = threadIdx.x % TPR;
  // Rows row0 .. row0 + RPG - 1; those at or past `rows` (inactive) load and store nothing but
  // still reach every barrier.
  const long long row0 = ((long long)blockIdx.x * RPB + threadIdx.x / TPR) * RPG;
  long long row[RPG];
  bool active[RPG];
  const DTYPE *xr[RPG];
  DTYPE *yr[RPG];
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    row[i] = row0 + i;
    active[i] = row[i] < rows;
    xr[i] = x + (active[i] ? row[i] : 0) * cols;
    yr[i] = y + (active[i] ? row[i] : 0) * cols;
  }
  const bool vec_ok = cols % V == 0 && tb_aligned16(x) && tb_aligned16(y) && tb_aligned16(w);

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
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float f = tb_to_float(v[i][j].v[k]);
        if (active[i] && e + k < cols) ss += f * f;
      }
    }
    const float rstd = rsqrtf(tb_group_sum<TPR>(ss, red[i]) / cols + eps);

#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      if (active[i] && e < cols) {
        const tb_vec<DTYPE> wv = tb_load_part(w, e, cols, vec_ok);
        tb_vec<DTYPE> o;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          float nrm = tb_to_float(v[i][j].v[k]) * rstd;
          if (ROUND_BEFORE_WEIGHT) nrm = tb_round<DTYPE>(nrm);
          o.v[k] = tb_from_float<DTYPE>(nrm * tb_to_float(wv.v[k]));
        }
        tb_store_part(yr[i], e, cols, vec_ok, o);
      }
    }
  }
}
