// fused_activation.cu: z = x * gate + bias, out = z / (1 + exp(-z)) (silu) for i < n, fp32, the
// `cuda` implementation. z rounds after the product and after the sum (PyTorch eager's two ops,
// not an FMA: __fmul_rn / __fadd_rn); silu uses the SFU (__expf, __fdividef) as sigmoid.cu does:
// within a few 1e-7 of the accurate value, far inside the 1e-4 tolerance. Three inputs, so the
// operator supplies its own vector to tb_pointwise_ops: a 16-byte vector of each input.
// Defines: DTYPE (float), BLOCK, UNROLL. Kernel: fused_activation_cuda.
#include "tb_pointwise.cuh"

struct fused_activation_op {
  static constexpr int N = tb_vec<DTYPE>::N;
  const DTYPE *x, *gate, *bias;
  DTYPE *out;
  struct regs { tb_vec<DTYPE> x, g, b; };

  static TB_DEVICE float f(float x, float g, float b) {
    const float z = __fadd_rn(__fmul_rn(x, g), b);
    return __fdividef(z, 1.0f + __expf(-z));
  }
  TB_DEVICE void load(regs &r, long long v) const {
    r.x = tb_ldg_vec(x + v * N);
    r.g = tb_ldg_vec(gate + v * N);
    r.b = tb_ldg_vec(bias + v * N);
  }
  TB_DEVICE void store(const regs &r, long long v) const {
    tb_vec<DTYPE> o;
#pragma unroll
    for (int k = 0; k < N; ++k)
      o.v[k] = tb_from_float<DTYPE>(f(tb_to_float(r.x.v[k]), tb_to_float(r.g.v[k]), tb_to_float(r.b.v[k])));
    tb_store_vec(out + v * N, o);
  }
  TB_DEVICE void scalar(long long i) const {
    out[i] = tb_from_float<DTYPE>(f(tb_to_float(x[i]), tb_to_float(gate[i]), tb_to_float(bias[i])));
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
fused_activation_cuda(const DTYPE *x, const DTYPE *gate, const DTYPE *bias, DTYPE *out, long long n) {
  const bool vec_ok = tb_aligned16(x) && tb_aligned16(gate) && tb_aligned16(bias) && tb_aligned16(out);
  const long long nvec = vec_ok ? n / fused_activation_op::N : 0;
  tb_pointwise_ops<BLOCK, UNROLL>(nvec, n, fused_activation_op{x, gate, bias, out});
}
