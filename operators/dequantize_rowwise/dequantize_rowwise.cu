// dequantize_rowwise.cu: out[r, c] = fp16((state_x[r] * x[r, c]) * (1.0f / 127)) over an int8
// (rows, cols) x flattened to n = rows * cols, the `cuda` implementation. Both products are fp32
// and rounded as PyTorch eager rounds them (the int8 value converts exactly); one rounding to
// fp16. A vector is 16 elements: one 16-byte load of int8, the row's scale (a 32-bit division of
// the vector index per 16 elements, the scale read through L1), the int8 turned into floats by
// PRMT and FADD (i8x4), two 16-byte stores of fp16. The vector path needs cols % 16 == 0 (a
// vector then never straddles rows) and 16-byte aligned x and out; otherwise every element goes
// through scalar(). Defines: DTYPE (int8_t), BLOCK, UNROLL.
// Kernel: dequantize_rowwise_cuda (tb_pointwise_ops).
#include "tb_pointwise.cuh"

struct dequantize_rowwise_op {
  static constexpr int N = 16;
  const int8_t *x;
  const float *scale;
  __half *out;
  long long cols;
  long long vpr;   // vectors per row: cols / 16
  bool narrow;     // vector indices fit 32 bits: the row by a 32-bit division

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

  struct regs { uint4 q; float s; };
  TB_DEVICE void load(regs &r, long long v) const {
    const long long row = narrow ? (long long)((unsigned)v / (unsigned)vpr) : v / vpr;
    r.q = __ldg(reinterpret_cast<const uint4 *>(x + v * N));
    r.s = __ldg(scale + row);
  }
  TB_DEVICE void store(const regs &r, long long v) const {
    const unsigned w[4] = { r.q.x, r.q.y, r.q.z, r.q.w };
    union { tb_vec<__half> h; __half2 h2[4]; } o[2];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float q[4];
      i8x4(w[j], q);
      o[j / 2].h2[(j % 2) * 2] = __floats2half2_rn(f(r.s, q[0]), f(r.s, q[1]));
      o[j / 2].h2[(j % 2) * 2 + 1] = __floats2half2_rn(f(r.s, q[2]), f(r.s, q[3]));
    }
    tb_store_vec(out + v * N, o[0].h);
    tb_store_vec(out + v * N + 8, o[1].h);
  }
  TB_DEVICE void scalar(long long i) const { out[i] = __float2half_rn(f(scale[i / cols], (float)x[i])); }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
dequantize_rowwise_cuda(const DTYPE *x, const float *state_x, __half *out, long long n, long long cols) {
  static_assert(sizeof(DTYPE) == 1, "dequantize_rowwise reads int8");
  const bool vec_ok = tb_aligned16(x) && tb_aligned16(out) && cols % dequantize_rowwise_op::N == 0;
  const long long nvec = vec_ok ? n / dequantize_rowwise_op::N : 0;
  const long long vpr = cols / dequantize_rowwise_op::N;
  tb_pointwise_ops<BLOCK, UNROLL>(nvec, n, dequantize_rowwise_op{x, state_x, out, cols, vpr, nvec <= 0xffffffffLL});
}
