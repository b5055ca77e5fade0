// softmax.cu: y[r, :] = exp(x[r, :] - max_r) / sum_c exp(x[r, c] - max_r) row by row
// (torch.softmax(x, -1)), the `cuda` implementation: fp32 math, output rounded once to DTYPE.
// One pass over the data: the row stays in registers between its reductions (the max, then the
// sum of exponentials, each by warp shuffles plus shared memory when TPR > 32) and its stores.
// Two kernels share that per-row code (softmax_row):
// - softmax_cuda (registers): a group of TPR threads owns RPG consecutive rows; every load is
//   issued first, so a row's reductions overlap the loads of the rows after it. TPR = 32 is
//   warp-per-row, TPR = BLOCK block-per-row.
// - softmax_stream (STAGES defined; sm_90): persistent blocks, a block per row (TPR = BLOCK), rows
//   streamed through STAGES shared-memory slots by cp.async.bulk (tb_row_stream).
// exp is __expf (SFU; within 1e-6 relative for the arguments x - max <= 0 that occur here).
// Defines: DTYPE, BLOCK (threads per block), TPR (threads per row, power of two 32..BLOCK),
// NV (vectors per thread: cdiv(cols, TPR * 16 / sizeof(DTYPE))), RPG (rows per group, default 1),
// STAGES (stream kernel).
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif
#ifndef FULLVEC // 1: one bound check per whole vector (tb_for_elems); 0: per element, as measured
#define FULLVEC 0
#endif

// Thread t's part of one row in registers; yr is the row's output (vec_ok: 16-byte stores allowed).
TB_DEVICE void softmax_row(const tb_vec<DTYPE> (&v)[NV], bool active, DTYPE *__restrict__ yr, int t, int cols,
                           bool vec_ok, float *red_max, float *red_sum) {
  constexpr int V = tb_vec<DTYPE>::N;
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) { m = fmaxf(m, tb_to_float(v[j].v[k])); });
#else
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) m = fmaxf(m, tb_to_float(v[j].v[k]));
#endif
  }
  m = tb_group_max<TPR>(m, red_max);

  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) { s += __expf(tb_to_float(v[j].v[k]) - m); });
#else
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) s += __expf(tb_to_float(v[j].v[k]) - m);
#endif
  }
  s = tb_group_sum<TPR>(s, red_sum);
  const float inv = 1.0f / s;

#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    if (active && e < cols) {
      tb_vec<DTYPE> o;
#pragma unroll
      for (int k = 0; k < V; ++k) o.v[k] = tb_from_float<DTYPE>(__expf(tb_to_float(v[j].v[k]) - m) * inv);
      tb_store_part(yr, e, cols, vec_ok, o);
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols) {
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red_max[RPG][BLOCK / 32], red_sum[RPG][BLOCK / 32];   // one pair per row

  const int t = threadIdx.x % TPR;
  // Rows row0 .. row0 + RPG - 1; those at or past `rows` (inactive) load and store nothing but
  // still reach every barrier.
  const long long row0 = ((long long)blockIdx.x * RPB + threadIdx.x / TPR) * RPG;
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x) && tb_aligned16(y);
  tb_vec<DTYPE> v[RPG][NV];
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    tb_row_load<TPR, NV>(v[i], x + (active ? row0 + i : 0) * cols, t, cols, vec_ok, active);
  }
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    softmax_row(v[i], active, y + (active ? row0 + i : 0) * cols, t, cols, vec_ok, red_max[i], red_sum[i]);
  }
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_stream(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols) {
  static_assert(TPR == BLOCK, "the stream kernel is block-per-row");
  extern __shared__ __align__(128) unsigned char tb_dyn[];
  __shared__ float red_max[BLOCK / 32], red_sum[BLOCK / 32];
  const int t = threadIdx.x;
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(y);
  tb_row_stream<DTYPE, STAGES>(x, rows, cols, reinterpret_cast<DTYPE *>(tb_dyn), [&](const DTYPE *xs, long long r) {
    tb_vec<DTYPE> v[NV];
    tb_row_load<TPR, NV>(v, xs, t, cols, cols % tb_vec<DTYPE>::N == 0, true);
    softmax_row(v, true, y + r * cols, t, cols, vec_ok, red_max, red_sum);
  });
}
#endif
