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
// exp(x - max) is 2^(x * log2e - max * log2e): one FFMA and one ex2.approx.ftz (softmax_exp2).
// max * log2e is rounded once per row, which scales every term of the row alike and cancels in
// y = e / sum; the arguments are at most ~0, so ftz only flushes terms below 2^-126 to 0.
// Defines: DTYPE, BLOCK (threads per block), TPR (threads per row, power of two 32..BLOCK),
// NV (vectors per thread: cdiv(cols, TPR * 16 / sizeof(DTYPE))), RPG (rows per group, default 1),
// STAGES (stream kernel), FULLVEC (1: bound checks per vector, and fp16/bf16 rows take their max
// by packed pairs).
#include "tb_rows.cuh" // RPG and FULLVEC default to 1 and 0 there

// 2^a on the SFU, one instruction. Without fast-math __expf adds a range test and two predicated
// scalings around MUFU.EX2 to keep denormal results; here a <= ~0 and a term below 2^-126 is far
// below any output's tolerance.
TB_DEVICE float softmax_exp2(float a) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}

// Packed pairs of a half-precision dtype (sm_80+): max of two pairs lane by lane with fmaxf's
// rule (a NaN loses to a number), the float value of each lane. ok = false: no packed path.
template <typename tb_T> struct softmax_pair { static constexpr bool ok = false; };
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> struct softmax_pair<__half> {
  static constexpr bool ok = true;
  static constexpr unsigned lowest = 0xfc00fc00u; // (-inf, -inf)
  static TB_DEVICE unsigned max(unsigned a, unsigned b) {
    unsigned r;
    asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  static TB_DEVICE float lo(unsigned p) { return __half2float(__ushort_as_half((unsigned short)(p & 0xffffu))); }
  static TB_DEVICE float hi(unsigned p) { return __half2float(__ushort_as_half((unsigned short)(p >> 16))); }
};
template <> struct softmax_pair<__nv_bfloat16> {
  static constexpr bool ok = true;
  static constexpr unsigned lowest = 0xff80ff80u;
  static TB_DEVICE unsigned max(unsigned a, unsigned b) {
    unsigned r;
    asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  static TB_DEVICE float lo(unsigned p) { return __uint_as_float(p << 16); }
  static TB_DEVICE float hi(unsigned p) { return __uint_as_float(p & 0xffff0000u); }
};
#endif

// Thread t's largest element of the row (-inf if none; NaNs lose, as with fmaxf).
// (A template, so that the discarded branch of `if constexpr` is not compiled for other dtypes.)
template <typename tb_T> TB_DEVICE float softmax_thread_max(const tb_vec<tb_T> (&v)[NV], bool active, int t, int cols) {
  constexpr int V = tb_vec<tb_T>::N;
  float m = -INFINITY;
#if FULLVEC
  if constexpr (softmax_pair<tb_T>::ok) {
    // Whole vectors by pairs, V / 2 max.x2 per vector into one accumulator per pair slot (max is
    // exact, so the order does not matter); the row's last, partial vector element by element.
    using P = softmax_pair<tb_T>;
    unsigned m2[V / 2];
#pragma unroll
    for (int p = 0; p < V / 2; ++p) m2[p] = P::lowest;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      const unsigned *w = reinterpret_cast<const unsigned *>(v[j].v);
      if (active && e + V <= cols) {
#pragma unroll
        for (int p = 0; p < V / 2; ++p) m2[p] = P::max(m2[p], w[p]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k)
          if (active && e + k < cols) m = fmaxf(m, tb_to_float(v[j].v[k]));
      }
    }
#pragma unroll
    for (int p = 1; p < V / 2; ++p) m2[0] = P::max(m2[0], m2[p]);
    m = fmaxf(m, fmaxf(P::lo(m2[0]), P::hi(m2[0])));
  } else {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      tb_for_elems<V>(active, e, cols, [&](int k) { m = fmaxf(m, tb_to_float(v[j].v[k])); });
    }
  }
#else
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) m = fmaxf(m, tb_to_float(v[j].v[k]));
  }
#endif
  return m;
}

// Thread t's part of one row in registers; yr is the row's output (vec_ok: 16-byte stores allowed).
TB_DEVICE void softmax_row(const tb_vec<DTYPE> (&v)[NV], bool active, DTYPE *__restrict__ yr, int t, int cols,
                           bool vec_ok, float *red_max, float *red_sum) {
  constexpr int V = tb_vec<DTYPE>::N;
  const float m = tb_group_max<TPR>(softmax_thread_max(v, active, t, cols), red_max);
  constexpr float L = 1.4426950408889634f; // log2(e)
  const float mL = m * L;

  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) { s += softmax_exp2(fmaf(tb_to_float(v[j].v[k]), L, -mL)); });
#else
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (active && e + k < cols) s += softmax_exp2(fmaf(tb_to_float(v[j].v[k]), L, -mL));
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
      for (int k = 0; k < V; ++k) o.v[k] = tb_from_float<DTYPE>(softmax_exp2(fmaf(tb_to_float(v[j].v[k]), L, -mL)) * inv);
      tb_store_part(yr, e, cols, vec_ok, o);
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols) {
  __shared__ float red_max[RPG][BLOCK / 32], red_sum[RPG][BLOCK / 32];   // one pair per row
  const int t = threadIdx.x % TPR;
  const long long row0 = tb_row0<BLOCK, TPR, RPG>();
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x) && tb_aligned16(y);
  tb_vec<DTYPE> v[RPG][NV];
  tb_rows_load<TPR, NV, RPG>(v, x, rows, cols, t, row0, vec_ok);
#pragma unroll
  for (int i = 0; i < RPG; ++i) {
    const bool active = row0 + i < rows;
    softmax_row(v[i], active, y + (active ? row0 + i : 0) * cols, t, cols, vec_ok, red_max[i], red_sum[i]);
  }
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_stream(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int rows, int cols) {
  __shared__ float red_max[BLOCK / 32], red_sum[BLOCK / 32];
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(y);
  tb_rows_streamed<BLOCK, TPR, NV, STAGES>(x, rows, cols, [&](const tb_vec<DTYPE> (&v)[NV], bool, long long r, int t, int) {
    softmax_row(v, true, y + r * cols, t, cols, vec_ok, red_max, red_sum);
  });
}
#endif
