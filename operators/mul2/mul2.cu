// mul2.cu: out[i] = x[i] * 2 for i < n, the `cuda` implementation. Floats multiply in fp32 and
// round once to DTYPE (exact: doubling only moves the exponent); int8 multiplies in int and wraps.
// Defines: DTYPE (element type, ctx.ctype), BLOCK (threads per block), UNROLL (16-byte vectors per
// thread in flight). Kernel: mul2_cuda (the grid-stride driver tb_pointwise).
#include "tb_pointwise.cuh"

struct mul2_op {
  template <typename E> TB_DEVICE E operator()(E a) const {
    if constexpr (tb_is_integer<E>::value) return static_cast<E>(a * 2);
    else return tb_from_float<E>(tb_to_float(a) * 2.0f);
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
mul2_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ out, long long n) {
  tb_pointwise<1, DTYPE, BLOCK, UNROLL>(x, nullptr, out, n, mul2_op());
}
