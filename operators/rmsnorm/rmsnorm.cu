// rmsnorm.cu: y = x * rsqrt(mean(x^2) + eps) * w over the last dimension (F.rms_norm), the `cuda`
// implementation: statistics in fp32. ROUND_BEFORE_WEIGHT=0: x * rstd * w in fp32 rounded once to
// DTYPE (PyTorch's fused CUDA rms_norm); 1: x * rstd rounded to DTYPE first, then multiplied by w
// and rounded again (ATen's composite rms_norm).
// One pass over x: the row stays in registers between its reduction (warp shuffles, plus shared
// memory when TPR > 32) and its stores. Two kernels share that per-row code (rmsnorm_row):
// - rmsnorm_cuda (registers): a group of TPR threads owns RPG consecutive rows, every load issued
//   first, so a row's reduction overlaps the loads of the rows after it.
// - rmsnorm_stream (STAGES defined; sm_90): persistent blocks, a block per row (TPR = BLOCK), rows
//   streamed through STAGES shared-memory slots by cp.async.bulk (tb_row_stream).
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, RPG (rows per group, default 1),
// ROUND_BEFORE_WEIGHT, STAGES (stream kernel).
#include "tb_rows.cuh" // RPG and FULLVEC default to 1 and 0 there

TB_DEVICE void rmsnorm_row(const tb_vec<DTYPE> (&v)[NV], bool active, const DTYPE *__restrict__ w,
                           DTYPE *__restrict__ yr, int t, int cols, float eps, bool vec_ok, float *red) {
  constexpr int V = tb_vec<DTYPE>::N;
  const float ss = tb_row_sumsq<NV, TPR>(v, active, t, cols);
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

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, DTYPE *__restrict__ y,
             int rows, int cols, float eps) {
  __shared__ float red[RPG][BLOCK / 32];   // one buffer per row
  const int t = threadIdx.x % TPR;
  const long long row0 = tb_row0<BLOCK, TPR, RPG>();
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x) && tb_aligned16(y) && tb_aligned16(w);
  tb_vec<DTYPE> v[RPG][NV];
  tb_rows_load<TPR, NV, RPG>(v, x, rows, cols, t, row0, vec_ok);
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    rmsnorm_row(v[i], active, w, y + (active ? row0 + i : 0) * cols, t, cols, eps, vec_ok, red[i]);
  }
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_stream(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, DTYPE *__restrict__ y,
               int rows, int cols, float eps) {
  __shared__ float red[BLOCK / 32];
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(y) && tb_aligned16(w);
  tb_rows_streamed<BLOCK, TPR, NV, STAGES>(x, rows, cols, [&](const tb_vec<DTYPE> (&v)[NV], bool, long long r, int t, int) {
    rmsnorm_row(v, true, w, y + r * cols, t, cols, eps, vec_ok, red);
  });
}
#endif
