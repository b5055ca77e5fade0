// swiglu.cu: out = silu(x) * y elementwise over the (M, N) inputs, the `cuda` implementation.
// Rounding as PyTorch's F.silu(x) * y: s = x / (1 + expf(-x)) in fp32, rounded to DTYPE, then
// s * y in fp32 rounded to DTYPE. The silu uses the same accurate expf and IEEE division as the
// reference, so both round the same fp32 value: a faster exp would flip the intermediate fp16
// rounding now and then and, through the second rounding, cost up to 2 ulps of the output.
// Defines: DTYPE, BLOCK, UNROLL. Kernel: swiglu_cuda (tb_pointwise over M*N elements).
#include "tb_pointwise.cuh"

struct swiglu_op {
  template <typename E> TB_DEVICE E operator()(E a, E b) const {
    const float x = tb_to_float(a);
    const float s = tb_round<E>(x / (1.0f + expf(-x)));
    return tb_from_float<E>(s * tb_to_float(b));
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
swiglu_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ y, DTYPE *__restrict__ out,
            long long n) {
  tb_pointwise<2, DTYPE, BLOCK, UNROLL>(x, y, out, n, swiglu_op());
}
