// softmax.cu: y[r, :] = exp(x[r, :] - max_r) / sum_c exp(x[r, c] - max_r) row by row
// (torch.softmax(x, -1)), the `cuda` implementation: fp32 math, output rounded once to DTYPE.
// One pass over the data: a group of TPR threads owns RPG consecutive rows and holds them in
// registers (RPG x NV 16-byte vectors per thread, every load issued first). Row by row, it reduces
// the max, then the sum of exponentials (warp shuffles, plus shared memory when TPR > 32), and
// writes the row, so a row's reductions overlap the loads of the rows after it. TPR = 32 is
// warp-per-row, TPR = BLOCK block-per-row.
// exp is __expf (SFU; within 1e-6 relative for the arguments x - max <= 0 that occur here).
// Defines: DTYPE, BLOCK (threads per block), TPR (threads per row, power of two 32..BLOCK),
// NV (vectors per thread: cdiv(cols, TPR * 16 / sizeof(DTYPE))), RPG (rows per group, default 1).
// Kernel: softmax_cuda.
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red_max[RPG][BLOCK / 32], red_sum[RPG][BLOCK / 32];   // one pair per row

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
  const bool vec_ok = cols % V == 0 && tb_aligned16(x) && tb_aligned16(y);

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
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (active[i] && e + k < cols) m = fmaxf(m, tb_to_float(v[i][j].v[k]));
    }
    m = tb_group_max<TPR>(m, red_max[i]);

    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (active[i] && e + k < cols) s += __expf(tb_to_float(v[i][j].v[k]) - m);
    }
    s = tb_group_sum<TPR>(s, red_sum[i]);
    const float inv = 1.0f / s;

#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      if (active[i] && e < cols) {
        tb_vec<DTYPE> o;
#pragma unroll
        for (int k = 0; k < V; ++k) o.v[k] = tb_from_float<DTYPE>(__expf(tb_to_float(v[i][j].v[k]) - m) * inv);
        tb_store_part(yr[i], e, cols, vec_ok, o);
      }
    }
  }
}
