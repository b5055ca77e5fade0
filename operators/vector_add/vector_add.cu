// vector_add.cu: out[i] = x[i] + y[i] for i < n, the `cuda` implementation. Floats add in fp32 and
// round once to DTYPE (torch's `+` on half types); int8 adds in int and wraps like torch.
// Defines: DTYPE (element type, ctx.ctype), BLOCK (threads per block), UNROLL (16-byte vectors per
// thread and input in flight). Kernel: vector_add_cuda (the grid-stride driver tb_pointwise).
#include "tb_pointwise.cuh"

struct add_op {
  template <typename E> TB_DEVICE E operator()(E a, E b) const {
    if constexpr (tb_is_integer<E>::value) return static_cast<E>(a + b);
    else return tb_from_float<E>(tb_to_float(a) + tb_to_float(b));
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
vector_add_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ y, DTYPE *__restrict__ out,
                long long n) {
  tb_pointwise<2, DTYPE, BLOCK, UNROLL>(x, y, out, n, add_op());
}
