// interleave.cu: out[2i] = A[i], out[2i + 1] = B[i] for i < n, the `cuda` implementation on the
// point-wise schedule (tb_pointwise_ops): a vector is 16 bytes of A and the same elements of B
// (two LDG.E.128), which make 32 bytes of out (two STG.E.128). The interleave works on 32-bit
// words: 4-byte elements are renamed registers, 2-byte ones one PRMT per out word (a half of A's
// word and a half of B's), bytes one PRMT per out word too (two bytes of each). Vectors need A, B
// and out 16-byte aligned; the n % VE last elements, or all of them otherwise, go one by one.
// Defines: DTYPE, BLOCK, UNROLL. Kernel: interleave_cuda.
#include "tb_pointwise.cuh"

struct interleave_op {
  static constexpr int N = tb_vec<DTYPE>::N;
  const DTYPE *a, *b;
  DTYPE *out;

  struct regs { uint4 a, b; };
  TB_DEVICE void load(regs &r, long long v) const {
    r.a = __ldg(reinterpret_cast<const uint4 *>(a + v * N));
    r.b = __ldg(reinterpret_cast<const uint4 *>(b + v * N));
  }
  static TB_DEVICE uint32_t word(const uint4 &w, int p) { return p == 0 ? w.x : p == 1 ? w.y : p == 2 ? w.z : w.w; }
  // Out word p (0 .. 7) of the vector's 32 bytes.
  static TB_DEVICE uint32_t out_word(const regs &r, int p) {
    if constexpr (sizeof(DTYPE) == 4) return word((p & 1) ? r.b : r.a, p >> 1);       // a_k, b_k, ...
    else if constexpr (sizeof(DTYPE) == 2)                                            // (a_k, b_k)
      return __byte_perm(word(r.a, p >> 1), word(r.b, p >> 1), (p & 1) ? 0x7632 : 0x5410);
    else                                                                              // (a_k, b_k, a_k+1, b_k+1)
      return __byte_perm(word(r.a, p >> 1), word(r.b, p >> 1), (p & 1) ? 0x7362 : 0x5140);
  }
  TB_DEVICE void store(const regs &r, long long v) const {
    tb_vec<DTYPE> o0, o1;
    const uint4 w0 = make_uint4(out_word(r, 0), out_word(r, 1), out_word(r, 2), out_word(r, 3));
    const uint4 w1 = make_uint4(out_word(r, 4), out_word(r, 5), out_word(r, 6), out_word(r, 7));
    memcpy(&o0, &w0, sizeof w0);
    memcpy(&o1, &w1, sizeof w1);
    tb_stg_vec(out + 2 * v * N, o0);
    tb_stg_vec(out + 2 * v * N + N, o1);
  }
  TB_DEVICE void scalar(long long i) const {
    out[2 * i] = a[i];
    out[2 * i + 1] = b[i];
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
interleave_cuda(const DTYPE *a, const DTYPE *b, DTYPE *out, long long n) {
  const bool vec_ok = tb_aligned16(a) && tb_aligned16(b) && tb_aligned16(out);
  tb_pointwise_ops<BLOCK, UNROLL>(vec_ok ? n / interleave_op::N : 0, n, interleave_op{a, b, out});
}
