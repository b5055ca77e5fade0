// quantize_global.cu: out[i] = (half)x[i] for i < n, fp32 in and fp16 out, round to nearest even
// (x.to(torch.float16)), the `cuda` implementation. A vector is 8 elements: two 16-byte loads of
// fp32 and one 16-byte store of fp16 (__floats2half2_rn converts two at once), so both sides move
// whole 16-byte accesses. Defines: DTYPE (float, the input), BLOCK, UNROLL.
// Kernel: quantize_global_cuda (tb_pointwise_ops).
#include "tb_pointwise.cuh"

struct quantize_global_op {
  static constexpr int N = 8;
  const float *x;
  __half *out;
  struct regs { tb_vec<float> lo, hi; };

  TB_DEVICE void load(regs &r, long long v) const {
    r.lo = tb_ldg_vec(x + v * N);
    r.hi = tb_ldg_vec(x + v * N + 4);
  }
  TB_DEVICE void store(const regs &r, long long v) const {
    union { tb_vec<__half> h; __half2 h2[4]; } o;
    o.h2[0] = __floats2half2_rn(r.lo.v[0], r.lo.v[1]);
    o.h2[1] = __floats2half2_rn(r.lo.v[2], r.lo.v[3]);
    o.h2[2] = __floats2half2_rn(r.hi.v[0], r.hi.v[1]);
    o.h2[3] = __floats2half2_rn(r.hi.v[2], r.hi.v[3]);
    tb_store_vec(out + v * N, o.h);
  }
  TB_DEVICE void scalar(long long i) const { out[i] = __float2half_rn(x[i]); }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
quantize_global_cuda(const DTYPE *x, __half *out, long long n) {
  static_assert(sizeof(DTYPE) == 4, "quantize_global reads fp32");
  const long long nvec = tb_aligned16(x) && tb_aligned16(out) ? n / quantize_global_op::N : 0;
  tb_pointwise_ops<BLOCK, UNROLL>(nvec, n, quantize_global_op{x, out});
}
