// cross_entropy.cu: loss[r] = logsumexp(x[r, :]) - x[r, targets[r]] (F.cross_entropy, reduction
// "none"), the `cuda` implementation: fp32 arithmetic, the loss rounded once to DTYPE.
// logsumexp in base 2: m2 = max * log2e (rounded once per row), s = sum 2^(x * log2e - m2) (one
// FFMA and one ex2.approx.ftz per element, softmax's exp), lse = (m2 + log2(s)) * ln2. Rounding
// m2 shifts every term alike and log2(s) takes the same shift back, so only the per-term FFMA
// rounding remains (about 1e-7 relative; fp32's tolerance at a loss of 7 is 1.9e-5).
// The target logit is taken from the registers that hold the row (the element whose column is the
// target, selected in an unrolled loop: no indexed register access, no second read of memory); its
// owner thread writes the loss. A target outside [0, cols) (never drawn: torch would raise) writes
// NaN, as the reference does.
// Two kernels share that per-row code (cross_entropy_row), as in the row family (tb_rows.cuh):
// - cross_entropy_cuda (registers): a group of TPR threads owns RPG consecutive rows, every load
//   issued first; the rows' targets are read before the rows.
// - cross_entropy_stream (STAGES defined; sm_90): persistent blocks, a block per row, rows streamed
//   through STAGES shared-memory slots by cp.async.bulk (tb_row_stream).
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, RPG (default 1), FULLVEC, STAGES.
#include "tb_rows.cuh" // RPG and FULLVEC default to 1 and 0 there

TB_DEVICE float cross_entropy_exp2(float a) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}

// tgt: the row's target (any value; only in-range ones match a column).
TB_DEVICE void cross_entropy_row(const tb_vec<DTYPE> (&v)[NV], bool active, long long row, long long tgt, int t,
                                 int cols, DTYPE *__restrict__ loss, float *red_max, float *red_sum) {
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr float L = 1.4426950408889634f; // log2(e)
  float m = -INFINITY, xt = 0.0f;
  bool owner = false;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) {
      const float f = tb_to_float(v[j].v[k]);
      m = fmaxf(m, f);
      if (e + k == tgt) { xt = f; owner = true; }
    });
#else
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float f = tb_to_float(v[j].v[k]);
      if (active && e + k < cols) {
        m = fmaxf(m, f);
        if (e + k == tgt) { xt = f; owner = true; }
      }
    }
#endif
  }
  m = tb_group_max<TPR>(m, red_max);
  const float m2 = m * L;
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    float sj = 0.0f; // per-vector partial sums: shorter dependency chains
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) { sj += cross_entropy_exp2(fmaf(tb_to_float(v[j].v[k]), L, -m2)); });
#else
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) sj += cross_entropy_exp2(fmaf(tb_to_float(v[j].v[k]), L, -m2));
#endif
    s += sj;
  }
  s = tb_group_sum<TPR>(s, red_sum);
  const float lse = (m2 + log2f(s)) * 0.6931471805599453f;
  if (active && owner) loss[row] = tb_from_float<DTYPE>(lse - xt);
  // an out-of-range target has no owner: the group's first thread writes NaN
  if (active && t == 0 && (tgt < 0 || tgt >= cols)) loss[row] = tb_from_float<DTYPE>(__int_as_float(0x7fc00000));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
cross_entropy_cuda(const DTYPE *__restrict__ x, const int64_t *__restrict__ targets, DTYPE *__restrict__ loss,
                   int rows, int cols) {
  __shared__ float red_max[RPG][BLOCK / 32], red_sum[RPG][BLOCK / 32]; // one pair of buffers per row
  const int t = threadIdx.x % TPR;
  const long long row0 = tb_row0<BLOCK, TPR, RPG>();
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x);
  long long tgt[RPG];
#pragma unroll
  for (int i = 0; i < RPG; ++i) tgt[i] = row0 + i < rows ? targets[row0 + i] : -1;
  tb_vec<DTYPE> v[RPG][NV];
  tb_rows_load<TPR, NV, RPG>(v, x, rows, cols, t, row0, vec_ok);
#pragma unroll
  for (int i = 0; i < RPG; ++i)
    cross_entropy_row(v[i], row0 + i < rows, row0 + i, tgt[i], t, cols, loss, red_max[i], red_sum[i]);
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
cross_entropy_stream(const DTYPE *__restrict__ x, const int64_t *__restrict__ targets, DTYPE *__restrict__ loss,
                     int rows, int cols) {
  __shared__ float red_max[BLOCK / 32], red_sum[BLOCK / 32];
  tb_rows_streamed<BLOCK, TPR, NV, STAGES>(x, rows, cols, [&](const tb_vec<DTYPE> (&v)[NV], bool, long long r, int t, int) {
    cross_entropy_row(v, true, r, targets[r], t, cols, loss, red_max, red_sum);
  });
}
#endif
