// dropout.cu: out[i] = round(round(x[i] * x_keep[i]) * scale) for i < n, the `cuda`
// implementation. The rounding points are PyTorch eager's for (x * x_keep) * (1 / (1 - p)): the
// mask product in fp32 rounded to DTYPE, then the fp32 scale (the Python float 1 / (1 - p) as
// float) multiplied and rounded again. The mask holds 0/1, so the first product is x or +-0
// exactly; with p = 0.5 the scale is 2 and the second is exact too. Defines: DTYPE, BLOCK,
// UNROLL. Kernel: dropout_cuda (tb_pointwise with two inputs).
#include "tb_pointwise.cuh"

struct dropout_op {
  float scale;
  template <typename E> TB_DEVICE E operator()(E a, E m) const {
    const float kept = tb_round<E>(tb_to_float(a) * tb_to_float(m));
    return tb_from_float<E>(kept * scale);
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
dropout_cuda(const DTYPE *__restrict__ x, const DTYPE *__restrict__ keep, DTYPE *__restrict__ out, long long n,
             float scale) {
  tb_pointwise<2, DTYPE, BLOCK, UNROLL>(x, keep, out, n, dropout_op{scale});
}
