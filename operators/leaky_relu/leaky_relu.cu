// leaky_relu.cu: out[i] = x[i] > 0 ? x[i] : 0.01f * x[i] for i < n (F.leaky_relu, the `cuda`
// implementation). As PyTorch's kernel: the slope is the float 0.01f, the product is formed in
// fp32 and rounded once to DTYPE; a positive x is kept as is; NaN fails x > 0 and propagates
// through the product. Defines: DTYPE, BLOCK, UNROLL. Kernel: leaky_relu_cuda (tb_pointwise).
#include "tb_pointwise.cuh"

struct leaky_relu_op {
  template <typename E> TB_DEVICE E operator()(E a) const {
    const float f = tb_to_float(a);
    return f > 0.0f ? a : tb_from_float<E>(f * 0.01f);
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
leaky_relu_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ out, long long n) {
  tb_pointwise<1, DTYPE, BLOCK, UNROLL>(x, nullptr, out, n, leaky_relu_op());
}
