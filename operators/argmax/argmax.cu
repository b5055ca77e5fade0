// argmax.cu: out[r] = the index of the first maximum of row r (torch.argmax(x, dim=1); NaN
// counts as the maximum), as int64, the `cuda` implementation. A group of TPR threads owns RPG
// consecutive rows; each thread issues all its RPG x NV 16-byte loads, then, row by row, scans its
// elements in increasing index order and the group reduces (value, index) pairs, ties going to
// the lower index (warp shuffles, plus shared memory when TPR > 32); a row's reduction overlaps
// the loads of the rows after it. Values compare as floats (exact for fp16/bf16).
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, RPG (rows per group, default 1).
// Kernel: argmax_cuda.
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
argmax_cuda(const DTYPE *__restrict__ x, int64_t *__restrict__ out, int rows, int cols) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red_v[RPG][BLOCK / 32];   // one buffer pair per row
  __shared__ int red_i[RPG][BLOCK / 32];

  const int t = threadIdx.x % TPR;
  // Rows row0 .. row0 + RPG - 1; those at or past `rows` load and store nothing but still reach
  // every barrier.
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
    float best = -INFINITY;
    int best_i = 0x7fffffff;   // loses every comparison: a thread with no element changes nothing
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float f = tb_to_float(v[i][j].v[k]);
        if (active[i] && e + k < cols && tb_argmax_better(f, e + k, best, best_i)) {
          best = f;
          best_i = e + k;
        }
      }
    }
    tb_group_argmax<TPR>(best, best_i, red_v[i], red_i[i]);
    if (active[i] && t == 0) out[row[i]] = best_i;
  }
}
