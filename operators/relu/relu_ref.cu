// relu_ref.cu: the reference, one thread per element: out[i] = x[i] > 0 ? x[i] : 0, NaN kept
// (torch.relu). Define: DTYPE. Kernel: relu_ref.
#include "tb_common.cuh"

template <typename E> __device__ E relu(E a) {
  if constexpr (tb_is_integer<E>::value) {
    return a > 0 ? a : static_cast<E>(0);
  } else {
    const float f = tb_to_float(a);
    return isnan(f) || f > 0.0f ? a : tb_from_float<E>(0.0f);
  }
}

extern "C" __global__ void relu_ref(const DTYPE *x, DTYPE *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = relu(x[i]);
}
