// argmax.cu: out[r] = the index of the first maximum of row r (torch.argmax(x, dim=1); NaN
// counts as the maximum), as int64, the `cuda` implementation. Values compare as floats (exact
// for fp16/bf16). Two kernels share the per-row code (argmax_row: each thread scans its elements
// in increasing index order, then the group reduces (value, index) pairs, ties going to the lower
// index, by warp shuffles plus shared memory when TPR > 32):
// - argmax_cuda (registers): a group of TPR threads owns RPG consecutive rows; each thread issues
//   all its RPG x NV 16-byte loads first, so a row's reduction overlaps the loads of the next.
// - argmax_stream (STAGES defined; sm_90): persistent blocks, a block per row (TPR = BLOCK), rows
//   streamed through STAGES shared-memory slots by cp.async.bulk (tb_row_stream).
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, RPG (rows per group, default 1),
// STAGES (stream kernel).
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif
#ifndef FULLVEC // 1: one bound check per whole vector (tb_for_elems); 0: per element, as measured
#define FULLVEC 0
#endif

TB_DEVICE void argmax_row(const tb_vec<DTYPE> (&v)[NV], bool active, long long row, int t, int cols,
                          int64_t *__restrict__ out, float *red_v, int *red_i) {
  constexpr int V = tb_vec<DTYPE>::N;
  float best = -INFINITY;
  int best_i = 0x7fffffff;   // loses every comparison: a thread with no element changes nothing
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) {
      const float f = tb_to_float(v[j].v[k]);
      if (tb_argmax_better(f, e + k, best, best_i)) {
        best = f;
        best_i = e + k;
      }
    });
#else
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float f = tb_to_float(v[j].v[k]);
      if (active && e + k < cols && tb_argmax_better(f, e + k, best, best_i)) {
        best = f;
        best_i = e + k;
      }
    }
#endif
  }
  tb_group_argmax<TPR>(best, best_i, red_v, red_i);
  if (active && t == 0) out[row] = best_i;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
argmax_cuda(const DTYPE *__restrict__ x, int64_t *__restrict__ out, int rows, int cols) {
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red_v[RPG][BLOCK / 32];   // one buffer pair per row
  __shared__ int red_i[RPG][BLOCK / 32];

  const int t = threadIdx.x % TPR;
  // Rows row0 .. row0 + RPG - 1; those at or past `rows` load and store nothing but still reach
  // every barrier.
  const long long row0 = ((long long)blockIdx.x * RPB + threadIdx.x / TPR) * RPG;
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x);
  tb_vec<DTYPE> v[RPG][NV];
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    tb_row_load<TPR, NV>(v[i], x + (active ? row0 + i : 0) * cols, t, cols, vec_ok, active);
  }
#pragma unroll
  for (int i = 0; i < RPG; ++i) argmax_row(v[i], row0 + i < rows, row0 + i, t, cols, out, red_v[i], red_i[i]);
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
argmax_stream(const DTYPE *__restrict__ x, int64_t *__restrict__ out, int rows, int cols) {
  static_assert(TPR == BLOCK, "the stream kernel is block-per-row");
  extern __shared__ __align__(128) unsigned char tb_dyn[];
  __shared__ float red_v[BLOCK / 32];
  __shared__ int red_i[BLOCK / 32];
  const int t = threadIdx.x;
  tb_row_stream<DTYPE, STAGES>(x, rows, cols, reinterpret_cast<DTYPE *>(tb_dyn), [&](const DTYPE *xs, long long r) {
    tb_vec<DTYPE> v[NV];
    tb_row_load<TPR, NV>(v, xs, t, cols, cols % tb_vec<DTYPE>::N == 0, true);
    argmax_row(v, true, r, t, cols, out, red_v, red_i);
  });
}
#endif
