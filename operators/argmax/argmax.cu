// argmax.cu: out[r] = the index of the first maximum of row r (torch.argmax(x, dim=1); NaN
// counts as the maximum), as int64, the `cuda` implementation. Values compare as floats (exact
// for fp16/bf16). Two kernels share the per-row code (argmax_row: each thread scans its elements
// in increasing index order, then the group reduces (value, index) pairs, ties going to the lower
// index, by warp shuffles plus shared memory when TPR > 32):
// - argmax_cuda (registers): a group of TPR threads owns RPG consecutive rows; each thread issues
//   all its RPG x NV 16-byte loads first, so a row's reduction overlaps the loads of the next.
// - argmax_stream (STAGES defined; sm_90): persistent blocks, a block per row (TPR = BLOCK), rows
//   streamed through STAGES shared-memory slots by cp.async.bulk (tb_row_stream).
// With FULLVEC = 1, fp16/bf16 threads find their maximum with packed max.NaN.x2 (NaN wins) and
// then the first of their elements equal to it (the first NaN if it is NaN) with packed compares:
// argmax_thread_pairs, about 2 instructions per element instead of a conversion and a
// compare-and-select per element.
// Defines: DTYPE, BLOCK, TPR (power of two 32..BLOCK), NV, RPG (rows per group, default 1),
// STAGES (stream kernel), FULLVEC (1: bound checks per vector, packed pairs for fp16/bf16).
#include "tb_rows.cuh" // RPG and FULLVEC default to 1 and 0 there

// Packed pairs of a half-precision dtype: max with NaN propagation, and lane masks (0xffff per
// lane) of equality and of NaN. ok = false: no packed path (fp32, or bf16 before sm_90).
template <typename tb_T> struct argmax_pair { static constexpr bool ok = false; };
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <> struct argmax_pair<__half> {
  static constexpr bool ok = true;
  static constexpr unsigned short neg_inf = 0xfc00u;
  static TB_DEVICE unsigned max(unsigned a, unsigned b) {
    unsigned r;
    asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  static TB_DEVICE unsigned eq(unsigned a, unsigned b) {
    unsigned r;
    asm("set.eq.u32.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  static TB_DEVICE unsigned nan(unsigned a) {
    unsigned r;
    asm("set.nan.u32.f16x2 %0, %1, %1;" : "=r"(r) : "r"(a));
    return r;
  }
  static TB_DEVICE float lo(unsigned p) { return __half2float(__ushort_as_half((unsigned short)(p & 0xffffu))); }
};
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 // set.*.bf16x2
template <> struct argmax_pair<__nv_bfloat16> {
  static constexpr bool ok = true;
  static constexpr unsigned short neg_inf = 0xff80u;
  static TB_DEVICE unsigned max(unsigned a, unsigned b) {
    unsigned r;
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  static TB_DEVICE unsigned eq(unsigned a, unsigned b) {
    unsigned r;
    asm("set.eq.u32.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
  }
  static TB_DEVICE unsigned nan(unsigned a) {
    unsigned r;
    asm("set.nan.u32.bf16x2 %0, %1, %1;" : "=r"(r) : "r"(a));
    return r;
  }
  static TB_DEVICE float lo(unsigned p) { return __uint_as_float(p << 16); }
};
#endif

// The index of thread t's first element whose lane of mask(pair) is set; one must be. Vectors are
// scanned last to first, keeping the latest vector with a match; its element lanes are gathered
// into bytes (PRMT) and the lowest set byte is the element.
template <typename tb_F>
TB_DEVICE int argmax_first(const unsigned (&w)[NV][4], int t, tb_F mask) {
  int hit = 0;
  unsigned lo = 0, hi = 0;
#pragma unroll
  for (int j = NV - 1; j >= 0; --j) {
    const unsigned l = __byte_perm(mask(w[j][0]), mask(w[j][1]), 0x6420); // elements 0..3, a byte each
    const unsigned h = __byte_perm(mask(w[j][2]), mask(w[j][3]), 0x6420); // elements 4..7
    if ((l | h) != 0) {
      hit = j;
      lo = l;
      hi = h;
    }
  }
  const int k = lo != 0 ? (__ffs(lo) - 1) >> 3 : 4 + ((__ffs(hi) - 1) >> 3);
  return (hit * TPR + t) * 8 + k;
}

// Thread t's (value, index) of its first maximum, by packed pairs (8 elements per vector). Lanes past
// the row (only in its last, partial vector, or all of an absent or inactive one) become -inf and
// come after every element of the row, so they are found only where the thread has no element:
// then the result is the original's (-inf, INT_MAX).
template <typename tb_T>
TB_DEVICE void argmax_thread_pairs(const tb_vec<tb_T> (&v)[NV], bool active, int t, int cols, float &best,
                                   int &best_i) {
  using P = argmax_pair<tb_T>;
  constexpr int V = tb_vec<tb_T>::N;
  static_assert(V == 8, "packed pairs: 2-byte dtypes");
  unsigned w[NV][4];
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
    memcpy(w[j], &v[j], 16);
    if (!(active && e + V <= cols)) {
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (!(active && e + k < cols))
          w[j][k / 2] = k % 2 ? (w[j][k / 2] & 0xffffu) | ((unsigned)P::neg_inf << 16)
                              : (w[j][k / 2] & 0xffff0000u) | P::neg_inf;
    }
  }
  unsigned m2[4] = {w[0][0], w[0][1], w[0][2], w[0][3]};
#pragma unroll
  for (int j = 1; j < NV; ++j)
#pragma unroll
    for (int p = 0; p < 4; ++p) m2[p] = P::max(m2[p], w[j][p]);
  unsigned m = P::max(P::max(m2[0], m2[1]), P::max(m2[2], m2[3]));
  m = P::max(m, __byte_perm(m, 0, 0x1032)); // the thread's maximum in both lanes
  const int i = P::nan(m) != 0 ? argmax_first(w, t, [](unsigned x) { return P::nan(x); })
                               : argmax_first(w, t, [m](unsigned x) { return P::eq(x, m); });
  const bool found = active && i < cols;
  best = found ? P::lo(m) : -INFINITY;
  best_i = found ? i : 0x7fffffff;
}

TB_DEVICE void argmax_row(const tb_vec<DTYPE> (&v)[NV], bool active, long long row, int t, int cols,
                          int64_t *__restrict__ out, float *red_v, int *red_i) {
  constexpr int V = tb_vec<DTYPE>::N;
  float best = -INFINITY;
  int best_i = 0x7fffffff;   // loses every comparison: a thread with no element changes nothing
#if FULLVEC
  if constexpr (argmax_pair<DTYPE>::ok) {
    argmax_thread_pairs(v, active, t, cols, best, best_i);
  } else {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int e = (j * TPR + t) * V;
      tb_for_elems<V>(active, e, cols, [&](int k) {
        const float f = tb_to_float(v[j].v[k]);
        if (tb_argmax_better(f, e + k, best, best_i)) {
          best = f;
          best_i = e + k;
        }
      });
    }
  }
#else
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float f = tb_to_float(v[j].v[k]);
      if (active && e + k < cols && tb_argmax_better(f, e + k, best, best_i)) {
        best = f;
        best_i = e + k;
      }
    }
  }
#endif
  tb_group_argmax<TPR>(best, best_i, red_v, red_i);
  if (active && t == 0) out[row] = best_i;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
argmax_cuda(const DTYPE *__restrict__ x, int64_t *__restrict__ out, int rows, int cols) {
  __shared__ float red_v[RPG][BLOCK / 32];   // one buffer pair per row
  __shared__ int red_i[RPG][BLOCK / 32];
  const int t = threadIdx.x % TPR;
  const long long row0 = tb_row0<BLOCK, TPR, RPG>();
  const bool vec_ok = cols % tb_vec<DTYPE>::N == 0 && tb_aligned16(x);
  tb_vec<DTYPE> v[RPG][NV];
  tb_rows_load<TPR, NV, RPG>(v, x, rows, cols, t, row0, vec_ok);
#pragma unroll
  for (int i = 0; i < RPG; ++i) argmax_row(v[i], row0 + i < rows, row0 + i, t, cols, out, red_v[i], red_i[i]);
}

#ifdef STAGES
extern "C" __global__ void __launch_bounds__(BLOCK)
argmax_stream(const DTYPE *__restrict__ x, int64_t *__restrict__ out, int rows, int cols) {
  __shared__ float red_v[BLOCK / 32];
  __shared__ int red_i[BLOCK / 32];
  tb_rows_streamed<BLOCK, TPR, NV, STAGES>(x, rows, cols, [&](const tb_vec<DTYPE> (&v)[NV], bool, long long r, int t, int) {
    argmax_row(v, true, r, t, cols, out, red_v, red_i);
  });
}
#endif
