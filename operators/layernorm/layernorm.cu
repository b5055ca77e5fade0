// layernorm.cu: y = (x - mean) / sqrt(var + eps) * w + b over the last dimension (F.layer_norm,
// biased variance), the `cuda` implementation: statistics in fp32, output rounded once to DTYPE.
// One pass over x: the row stays in registers; the mean and then the centred sum of squares (two
// reductions of the register copy, as exact as a two-pass algorithm) come from warp shuffles,
// plus shared memory when TPR > 32, then the row is written. w and b are read per row (they stay
// in L1/L2). Two kernels share that per-row code (layernorm_row):
// - layernorm_cuda (registers): a group of TPR threads owns RPG consecutive rows, every load
//   issued first, so a row's reductions overlap the loads of the rows after it.
// - layernorm_stream (STAGES defined; sm_90): persistent blocks, a block per row (TPR = BLOCK),
//   rows streamed through STAGES shared-memory slots by cp.async.bulk (tb_row_stream).
// Defines: DTYPE, BLOCK, TPR (threads per row, power of two 32..BLOCK), NV (vectors per thread),
// RPG (rows per group, default 1), STAGES (stream kernel).
#include "tb_rows.cuh" // RPG and FULLVEC default to 1 and 0 there

TB_DEVICE void layernorm_row(const tb_vec<DTYPE> (&v)[NV], bool active, const DTYPE *__restrict__ w,
                             const DTYPE *__restrict__ b, DTYPE *__restrict__ yr, int t, int cols, float eps,
                             bool vec_ok, float *red_mean, float *red_var) {
  constexpr int V = tb_vec<DTYPE>::N;
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) { s += tb_to_float(v[j].v[k]); });
#else
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) s += tb_to_float(v[j].v[k]);
#endif
  }
  const float mean = tb_group_sum<TPR>(s, red_mean) / cols;
  float d2 = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) {
      const float d = tb_to_float(v[j].v[k]) - mean;
      d2 += d * d;
    });
#else
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float d = tb_to_float(v[j].v[k]) - mean;
      if (active && e + k < cols) d2 += d * d;
    }
#endif
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

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, const DTYPE *__restrict__ b,
               DTYPE *__restrict__ y, int rows, int cols, float eps) {
  __shared__ float red_mean[RPG][BLOCK / 32], red_var[RPG][BLOCK / 32];   // one pair per row
  const int t = threadIdx.x % TPR;
  const long long row0 = tb_row0<BLOCK, TPR, RPG>();
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x) && tb_aligned16(y) && tb_aligned16(w) &&
                      tb_aligned16(b);
  // 16-bit rows as 32-bit words (tb_row_load: 0.60-0.93 of the time up to K = 7680 on the H200);
  // fp32 through tb_load_part (tb_row_load_elems), which was 3.5-4.6 % faster at K = 2560 and 3072
  // (A/B, 2026-11-29).
  tb_vec<DTYPE> v[RPG][NV];
  tb_rows_load<TPR, NV, RPG, sizeof(DTYPE) != 2>(v, x, rows, cols, t, row0, vec_ok);
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    layernorm_row(v[i], active, w, b, y + (active ? row0 + i : 0) * cols, t, cols, eps, vec_ok, red_mean[i],
                  red_var[i]);
  }
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_stream(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, const DTYPE *__restrict__ b,
                 DTYPE *__restrict__ y, int rows, int cols, float eps) {
  __shared__ float red_mean[BLOCK / 32], red_var[BLOCK / 32];
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(y) && tb_aligned16(w) && tb_aligned16(b);
  // tb_row_load_elems for every dtype: tb_rows.cuh's tb_row_load says why
  tb_rows_streamed<BLOCK, TPR, NV, STAGES, true>(x, rows, cols, [&](const tb_vec<DTYPE> (&v)[NV], bool, long long r, int t, int) {
    layernorm_row(v, true, w, b, y + r * cols, t, cols, eps, vec_ok, red_mean, red_var);
  });
}
#endif
