// relu.cu: out[i] = max(x[i], 0) for i < n (torch.relu: NaN propagates), the `cuda`
// implementation. The input value itself is kept, so no rounding happens for any dtype.
// Defines: DTYPE (element type, ctx.ctype), BLOCK (threads per block), UNROLL (16-byte vectors per
// thread in flight). Kernel: relu_cuda (the grid-stride driver tb_pointwise).
#include "tb_pointwise.cuh"

struct relu_op {
  template <typename E> TB_DEVICE E operator()(E a) const {
    if constexpr (tb_is_integer<E>::value) {
      return a > 0 ? a : static_cast<E>(0);
    } else {
      const float f = tb_to_float(a);
      return (f > 0.0f || f != f) ? a : tb_from_float<E>(0.0f);
    }
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
relu_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ out, long long n) {
  tb_pointwise<1, DTYPE, BLOCK, UNROLL>(x, nullptr, out, n, relu_op());
}
