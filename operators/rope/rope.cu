// rope.cu: the rotate-half rotation, the `cuda` implementation. For row r = (b, s, h) of q
// (batch, seq, heads, D) and j < D/2, with c = cos[s, j], t = sin[s, j]:
//   out[r, j] = q[r, j] c - q[r, j + D/2] t,   out[r, j + D/2] = q[r, j + D/2] c + q[r, j] t,
// each product and the sum rounded to DTYPE (PyTorch eager's elementwise ops: fp32 math, a
// rounding per op; no FMA), so the kernel and the reference agree bit for bit. The elements are
// the n = batch * seq * heads * D/2 pairs (j, j + D/2); a vector is N = 16 / sizeof(DTYPE) pairs:
// one 16-byte load from each half of the row, and of cos and of sin (read-only path: every head
// reads the same cos/sin row, L1 and L2 hold it), two 16-byte stores. The vector path needs
// (D/2) % N == 0 and 16-byte aligned pointers; otherwise every pair goes through scalar(). The
// row and its seq index take 32-bit divisions per vector (64-bit past 2^32 vectors).
// Defines: DTYPE, BLOCK, UNROLL. Kernel: rope_cuda (tb_pointwise_ops).
#include "tb_pointwise.cuh"

template <typename A> struct rope_is_half { static constexpr bool value = false; };
template <> struct rope_is_half<__half> { static constexpr bool value = true; };

struct rope_op {
  static constexpr int N = tb_vec<DTYPE>::N;
  const DTYPE *q, *cs, *sn;
  DTYPE *out;
  long long seq, heads, dim, half;
  long long hv; // vectors per half row: half / N
  bool narrow;  // vector indices fit 32 bits

  // The pair (a, b) = (q[j], q[j + D/2]) rotated by (c, t): (a c - b t, b c + a t), rounded per op.
  static TB_DEVICE void rot(float a, float b, float c, float t, DTYPE &lo, DTYPE &hi) {
    lo = tb_from_float<DTYPE>(__fsub_rn(tb_round<DTYPE>(__fmul_rn(a, c)), tb_round<DTYPE>(__fmul_rn(b, t))));
    hi = tb_from_float<DTYPE>(__fadd_rn(tb_round<DTYPE>(__fmul_rn(b, c)), tb_round<DTYPE>(__fmul_rn(a, t))));
  }

  // fp16: the same roundings by packed half arithmetic. A correctly rounded fp16 product or sum
  // equals the fp32 one rounded to fp16 (fp32's 24 bits >= 2 x 11 + 2: double rounding is
  // innocuous for + - x), so HMUL2 (the .rn form: never fused into an FMA) and HADD2/HSUB2 give
  // rot()'s results bit for bit at a third of the instructions.
  static TB_DEVICE void rot2(__half2 a, __half2 b, __half2 c, __half2 t, __half2 &lo, __half2 &hi) {
    lo = __hsub2(__hmul2_rn(a, c), __hmul2_rn(b, t));
    hi = __hadd2(__hmul2_rn(b, c), __hmul2_rn(a, t));
  }

  struct regs { tb_vec<DTYPE> a, b, c, t; long long off; };
  TB_DEVICE void load(regs &r, long long v) const {
    long long row, jv, s;
    if (narrow) {
      const unsigned rw = (unsigned)v / (unsigned)hv;
      jv = (unsigned)v - rw * (unsigned)hv;
      s = (rw / (unsigned)heads) % (unsigned)seq;
      row = rw;
    } else {
      row = v / hv;
      jv = v - row * hv;
      s = row / heads % seq;
    }
    r.off = row * dim + jv * N;
    r.a = tb_ldg_vec(q + r.off);
    r.b = tb_ldg_vec(q + r.off + half);
    r.c = tb_ldg_vec(cs + s * half + jv * N);
    r.t = tb_ldg_vec(sn + s * half + jv * N);
  }
  TB_DEVICE void store(const regs &r, long long) const {
    union pack { tb_vec<DTYPE> v; __half2 h2[N / 2]; } lo, hi;
    if constexpr (rope_is_half<DTYPE>::value) {
      const pack a{r.a}, b{r.b}, c{r.c}, t{r.t};
#pragma unroll
      for (int k = 0; k < N / 2; ++k) rot2(a.h2[k], b.h2[k], c.h2[k], t.h2[k], lo.h2[k], hi.h2[k]);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k)
        rot(tb_to_float(r.a.v[k]), tb_to_float(r.b.v[k]), tb_to_float(r.c.v[k]), tb_to_float(r.t.v[k]), lo.v.v[k],
            hi.v.v[k]);
    }
    tb_stg_vec(out + r.off, lo.v);
    tb_stg_vec(out + r.off + half, hi.v);
  }
  TB_DEVICE void scalar(long long i) const {
    const long long row = i / half, j = i - row * half, s = row / heads % seq;
    const DTYPE *qr = q + row * dim;
    rot(tb_to_float(qr[j]), tb_to_float(qr[j + half]), tb_to_float(cs[s * half + j]), tb_to_float(sn[s * half + j]),
        out[row * dim + j], out[row * dim + j + half]);
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
rope_cuda(const DTYPE *q, const DTYPE *cos, const DTYPE *sin, DTYPE *out, long long n, long long seq,
          long long heads, long long dim) {
  constexpr int V = rope_op::N;
  const long long half = dim / 2;
  const bool vec_ok = tb_aligned16(q) && tb_aligned16(cos) && tb_aligned16(sin) && tb_aligned16(out) && half % V == 0;
  const long long nvec = vec_ok ? n / V : 0;
  tb_pointwise_ops<BLOCK, UNROLL>(nvec, n, rope_op{q, cos, sin, out, seq, heads, dim, half, half / V,
                                                   nvec <= 0xffffffffLL});
}
