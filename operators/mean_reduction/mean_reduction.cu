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
#include "tb_rows.cuh" // RPG and FULLVEC default to 1 and 0 there

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
  __shared__ float red[RPG][BLOCK / 32];   // one buffer per row: each reduction needs its own
  const int t = threadIdx.x % TPR;
  const long long row0 = tb_row0<BLOCK, TPR, RPG>();
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x);
  tb_vec<DTYPE> v[RPG][NV];
  tb_rows_load<TPR, NV, RPG>(v, x, rows, cols, t, row0, vec_ok);
#pragma unroll
  for (int i = 0; i < RPG; ++i) mean_reduction_row(v[i], row0 + i < rows, row0 + i, t, cols, out, red[i]);
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
mean_reduction_stream(const DTYPE *__restrict__ x, float *__restrict__ out, int rows, int cols) {
  __shared__ float red[BLOCK / 32];
  tb_rows_streamed<BLOCK, TPR, NV, STAGES>(x, rows, cols, [&](const tb_vec<DTYPE> (&v)[NV], bool, long long r, int t, int) {
    mean_reduction_row(v, true, r, t, cols, out, red);
  });
}
#endif
