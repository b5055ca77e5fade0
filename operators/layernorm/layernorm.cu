// layernorm.cu: y = (x - mean) / sqrt(var + eps) * w + b over the last dimension (F.layer_norm,
// biased variance), the `cuda` implementation: statistics in fp32, output rounded once to DTYPE.
// One pass over x: a group of TPR threads owns RPG consecutive rows and holds them in registers
// (RPG x NV 16-byte vectors per thread, every load issued first). Row by row, the mean and then
// the centred sum of squares (two reductions of the register copy, as exact as a two-pass
// algorithm) come from warp shuffles, plus shared memory when TPR > 32, and the row is written,
// so a row's reductions overlap the loads of the rows after it. w and b are read per row (they
// stay in L1/L2).
// Defines: DTYPE, BLOCK, TPR (threads per row, power of two 32..BLOCK), NV (vectors per thread),
// RPG (rows per group, default 1). Kernel: layernorm_cuda.
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ w, const DTYPE *__restrict__ b,
               DTYPE *__restrict__ y, int rows, int cols, float eps) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red_mean[RPG][BLOCK / 32], red_var[RPG][BLOCK / 32];   // one pair per row

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
  const bool vec_ok = cols % V == 0 && tb_aligned16(x) && tb_aligned16(y) && tb_aligned16(w) &&
                      tb_aligned16(b);

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
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (active[i] && e + k < cols) s += tb_to_float(v[i][j].v[k]);
    }
    const float mean = tb_group_sum<TPR>(s, red_mean[i]) / cols;
    float d2 = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float d = tb_to_float(v[i][j].v[k]) - mean;
        if (active[i] && e + k < cols) d2 += d * d;
      }
    }
    const float var = tb_group_sum<TPR>(d2, red_var[i]) / cols;
    const float rstd = rsqrtf(var + eps);

#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      if (active[i] && e < cols) {
        const tb_vec<DTYPE> wv = tb_load_part(w, e, cols, vec_ok);
        const tb_vec<DTYPE> bv = tb_load_part(b, e, cols, vec_ok);
        tb_vec<DTYPE> o;
#pragma unroll
        for (int k = 0; k < V; ++k)
          o.v[k] = tb_from_float<DTYPE>((tb_to_float(v[i][j].v[k]) - mean) * rstd * tb_to_float(wv.v[k]) +
                                        tb_to_float(bv.v[k]));
        tb_store_part(yr[i], e, cols, vec_ok, o);
      }
    }
  }
}
