// l2_norm.cu: y = x * rsqrt(sum(x^2) + eps) over the last dimension, the `cuda` implementation:
// the sum of squares in fp32, x * rstd in fp32 rounded once to DTYPE (TileBench's reference:
// vector_norm in fp32, squared, x * rsqrt(norm_sq + eps), one cast). rmsnorm's kernel without
// the weight and without the division by cols.
// One pass over x: the row stays in registers between its reduction (warp shuffles, plus shared
// memory when TPR > 32) and its stores. Two kernels share that per-row code (l2_norm_row):
// - l2_norm_cuda (registers): a group of TPR threads owns RPG consecutive rows, every load issued
//   first, so a row's reduction overlaps the loads of the rows after it.
// - l2_norm_stream (STAGES defined; sm_90): persistent blocks, a block per row (TPR = BLOCK), rows
//   streamed through STAGES shared-memory slots by cp.async.bulk (tb_row_stream).
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, RPG (rows per group, default 1),
// FULLVEC, STAGES (stream kernel).
#include "tb_rows.cuh" // RPG and FULLVEC default to 1 and 0 there

TB_DEVICE void l2_norm_row(const tb_vec<DTYPE> (&v)[NV], bool active, DTYPE *__restrict__ yr, int t, int cols,
                           float eps, bool vec_ok, float *red) {
  constexpr int V = tb_vec<DTYPE>::N;
  const float ss = tb_row_sumsq<NV, TPR>(v, active, t, cols);
  const float rstd = rsqrtf(tb_group_sum<TPR>(ss, red) + eps);

#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    if (active && e < cols) {
      tb_vec<DTYPE> o;
#pragma unroll
      for (int k = 0; k < V; ++k) o.v[k] = tb_from_float<DTYPE>(tb_to_float(v[j].v[k]) * rstd);
      tb_store_part(yr, e, cols, vec_ok, o);
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
l2_norm_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols, float eps) {
  __shared__ float red[RPG][BLOCK / 32];   // one buffer per row
  const int t = threadIdx.x % TPR;
  const long long row0 = tb_row0<BLOCK, TPR, RPG>();
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x) && tb_aligned16(y);
  tb_vec<DTYPE> v[RPG][NV];
  tb_rows_load<TPR, NV, RPG>(v, x, rows, cols, t, row0, vec_ok);
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    l2_norm_row(v[i], active, y + (active ? row0 + i : 0) * cols, t, cols, eps, vec_ok, red[i]);
  }
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
l2_norm_stream(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols, float eps) {
  __shared__ float red[BLOCK / 32];
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(y);
  tb_rows_streamed<BLOCK, TPR, NV, STAGES>(x, rows, cols, [&](const tb_vec<DTYPE> (&v)[NV], bool, long long r, int t, int) {
    l2_norm_row(v, true, y + r * cols, t, cols, eps, vec_ok, red);
  });
}
#endif
