// dequantize_rowwise.cu: out[r, c] = fp16((state_x[r] * x[r, c]) * (1.0f / 127)) over an int8
// (rows, cols) x flattened to n = rows * cols, the `cuda` implementation. Both products are fp32
// and rounded as PyTorch eager rounds them (the int8 value converts exactly); one rounding to
// fp16. Defines: DTYPE (int8_t), BLOCK, UNROLL. Kernel: dequantize_rowwise_cuda (tb_pointwise_ops).
//
// A vector is 16 elements taken as two pieces of 8, laid out so that every warp-wide access is
// one contiguous span: the 32 vectors 32g .. 32g+31 cover the 512 elements from 512g, vector
// 32g + l (lane l of the warp) owning elements 512g + 8l .. +7 (its low piece) and 512g + 256 +
// 8l .. +7 (its high piece). A piece is one 8-byte load of int8 (the warp reads 256 contiguous
// bytes) and one 16-byte store of fp16 (the warp writes 512 contiguous bytes). The earlier
// layout (16 adjacent int8 a thread, its two 16-byte stores at +0 and +16) made each warp-wide
// store instruction cover 1 KiB with a 16-byte hole in every 32-byte sector: twice the store
// sectors for the same bytes, on the side that carries two thirds of the traffic (H200: 0.0392
// ms at 8192 x 4096 where Triton's kernel, which stages its output through shared memory to
// store whole 512-byte warp spans, took 0.0237; docs/KERNELS.md).
// Each piece lies in one row when cols % 8 == 0; the row of the low piece comes from a 32-bit
// division of its piece index (64-bit only if the piece count does not fit 32 bits), the high
// piece's (32 pieces further) from that one: the same row, or the next when the low piece is
// within 32 pieces of the row's end and rows are at least 32 pieces long, a second division
// otherwise (a uniform branch: cols is the same for the whole grid). The scale is read by __ldg
// (L1 holds it for the row's other pieces). The int8 become floats without I2F (i8x4). Whole
// groups of 512 elements take the vector path when cols % 8 == 0 and x and out are 16-byte
// aligned; the rest (at most 511 elements, or all of them) go through scalar().
#include "tb_pointwise.cuh"

struct dequantize_rowwise_op {
  static constexpr int N = 16;
  const int8_t *x;
  const float *scale;
  __half *out;
  long long cols;
  long long ppr;   // pieces (8 elements) per row: cols / 8
  bool narrow;     // piece indices fit 32 bits: rows by 32-bit divisions

  static TB_DEVICE float f(float s, float q) { return __fmul_rn(__fmul_rn(s, q), 1.0f / 127.0f); }

  // The four int8 of a word as exact floats without I2F (a quarter-rate conversion, which would
  // take half the conversion pipe at full bandwidth beside the fp16 packs): byte b is
  // (b ^ 0x80) - 128; PRMT puts b ^ 0x80 under the exponent of 2^23 (0x4B000000), giving the
  // float 2^23 + (b ^ 0x80), and one FADD subtracts 2^23 + 128, exactly (integers below 2^24).
  static TB_DEVICE void i8x4(unsigned w, float q[4]) {
    const unsigned u = w ^ 0x80808080u;
    q[0] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7440)) - 8388736.0f;
    q[1] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7441)) - 8388736.0f;
    q[2] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7442)) - 8388736.0f;
    q[3] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7443)) - 8388736.0f;
  }

  // Vector v's low piece index: 64 pieces per group of 32 vectors, the lane's from the group's start.
  static TB_DEVICE long long piece_lo(long long v) { return (v >> 5) * 64 + (v & 31); }

  struct regs { uint2 lo, hi; float s_lo, s_hi; };
  TB_DEVICE void load(regs &r, long long v) const {
    const long long p = piece_lo(v);
    long long row_lo, row_hi;
    if (narrow) {
      const unsigned up = (unsigned)p, uppr = (unsigned)ppr;
      const unsigned rl = up / uppr;
      row_lo = rl;
      row_hi = ppr >= 32 ? rl + (up - rl * uppr + 32u >= uppr ? 1u : 0u) : (up + 32u) / uppr;
    } else {
      row_lo = p / ppr;
      row_hi = ppr >= 32 ? row_lo + (p - row_lo * ppr + 32 >= ppr ? 1 : 0) : (p + 32) / ppr;
    }
    r.lo = __ldg(reinterpret_cast<const uint2 *>(x + p * 8));
    r.hi = __ldg(reinterpret_cast<const uint2 *>(x + (p + 32) * 8));
    r.s_lo = __ldg(scale + row_lo);
    r.s_hi = __ldg(scale + row_hi);
  }
  // Eight int8 (two words) scaled by s into one 16-byte store of fp16 at out + e.
  TB_DEVICE void piece(uint2 q8, float s, long long e) const {
    const unsigned w[2] = { q8.x, q8.y };
    union { tb_vec<__half> h; __half2 h2[4]; } o;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      float q[4];
      i8x4(w[j], q);
      o.h2[j * 2] = __floats2half2_rn(f(s, q[0]), f(s, q[1]));
      o.h2[j * 2 + 1] = __floats2half2_rn(f(s, q[2]), f(s, q[3]));
    }
    tb_store_vec(out + e, o.h);
  }
  TB_DEVICE void store(const regs &r, long long v) const {
    const long long p = piece_lo(v);
    piece(r.lo, r.s_lo, p * 8);
    piece(r.hi, r.s_hi, (p + 32) * 8);
  }
  TB_DEVICE void scalar(long long i) const { out[i] = __float2half_rn(f(scale[i / cols], (float)x[i])); }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
dequantize_rowwise_cuda(const DTYPE *x, const float *state_x, __half *out, long long n, long long cols) {
  static_assert(sizeof(DTYPE) == 1, "dequantize_rowwise reads int8");
  static_assert(BLOCK % 32 == 0, "a warp's 32 vectors form one group of 512 elements");
  const bool vec_ok = tb_aligned16(x) && tb_aligned16(out) && cols % 8 == 0;
  const long long nvec = vec_ok ? n / 512 * 32 : 0; // whole groups of 32 vectors only
  const long long ppr = cols / 8;
  tb_pointwise_ops<BLOCK, UNROLL>(nvec, n, dequantize_rowwise_op{x, state_x, out, cols, ppr, n / 8 + 32 <= 0xffffffffLL});
}
