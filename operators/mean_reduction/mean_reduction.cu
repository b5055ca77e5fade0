// mean_reduction.cu: out[r] = (1/N) * sum_c x[r, c] (x.mean(dim=1, dtype=torch.float32)), the
// `cuda` implementation: fp32 accumulation and an fp32 output for every input dtype.
// Two kernels share the per-row code (mean_reduction_row: per-vector partial sums, a group
// reduction by warp shuffles plus shared memory when TPR > 32, one store):
// - mean_reduction_cuda (registers): a group of TPR threads owns RPG consecutive rows; each thread
//   issues all its RPG x NV 16-byte loads before adding, then reduces the rows one by one, so the
//   reduction of a row overlaps the loads of the rows after it.
// - mean_reduction_stream (STAGES defined; sm_90): persistent blocks, a block per row (TPR =
//   BLOCK), rows streamed through STAGES shared-memory slots by cp.async.bulk (tb_row_stream), so
//   STAGES rows per block are in flight while one is reduced.
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV (vectors per thread:
// cdiv(cols, TPR * 16 / sizeof(DTYPE))), RPG (rows per group, default 1), STAGES (stream kernel).
#include "tb_common.cuh"

#ifndef RPG
#define RPG 1
#endif
#ifndef FULLVEC // 1: one bound check per whole vector (tb_for_elems); 0: per element, as measured
#define FULLVEC 0
#endif

// Thread t's part of one row held in registers (v from tb_row_load); writes out[row].
TB_DEVICE void mean_reduction_row(const tb_vec<DTYPE> (&v)[NV], bool active, long long row, int t, int cols,
                                  float *__restrict__ out, float *red) {
  constexpr int V = tb_vec<DTYPE>::N;
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    float sj = 0.0f;   // per-vector partial sums: shorter dependency chains
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) { sj += tb_to_float(v[j].v[k]); });
#else
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) sj += tb_to_float(v[j].v[k]);
#endif
    s += sj;
  }
  s = tb_group_sum<TPR>(s, red);
  if (active && t == 0) out[row] = s * (1.0f / cols);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
mean_reduction_cuda(const DTYPE *__restrict__ x, float *__restrict__ out, int rows, int cols) {
  constexpr int RPB = BLOCK / TPR;
  static_assert(BLOCK % TPR == 0, "TPR divides BLOCK");
  static_assert(RPG >= 1, "RPG: rows per group, at least 1");
  __shared__ float red[RPG][BLOCK / 32];   // one buffer per row: each reduction needs its own

  const int t = threadIdx.x % TPR;
  // Rows row0 .. row0 + RPG - 1; those at or past `rows` (the tail) load nothing and store
  // nothing, but their group still reaches every barrier.
  const long long row0 = ((long long)blockIdx.x * RPB + threadIdx.x / TPR) * RPG;
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x);
  tb_vec<DTYPE> v[RPG][NV];
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    tb_row_load<TPR, NV>(v[i], x + (active ? row0 + i : 0) * cols, t, cols, vec_ok, active);
  }
#pragma unroll
  for (int i = 0; i < RPG; ++i) mean_reduction_row(v[i], row0 + i < rows, row0 + i, t, cols, out, red[i]);
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
mean_reduction_stream(const DTYPE *__restrict__ x, float *__restrict__ out, int rows, int cols) {
  static_assert(TPR == BLOCK, "the stream kernel is block-per-row");
  extern __shared__ __align__(128) unsigned char tb_dyn[];
  __shared__ float red[BLOCK / 32];
  const int t = threadIdx.x;
  tb_row_stream<DTYPE, STAGES>(x, rows, cols, reinterpret_cast<DTYPE *>(tb_dyn), [&](const DTYPE *xs, long long r) {
    tb_vec<DTYPE> v[NV];
    tb_row_load<TPR, NV>(v, xs, t, cols, cols % tb_vec<DTYPE>::N == 0, true);
    mean_reduction_row(v, true, r, t, cols, out, red);
  });
}
#endif
