// mul2_ref.cu: the reference, one thread per element: out[i] = x[i] * 2, in fp32 rounded once to
// DTYPE for floats, in int with wrap-around for int8. Define: DTYPE. Kernel: mul2_ref.
#include "tb_common.cuh"

template <typename E> __device__ E times2(E a) {
  if constexpr (tb_is_integer<E>::value) return static_cast<E>(a * 2);
  else return tb_from_float<E>(tb_to_float(a) * 2.0f);
}

extern "C" __global__ void mul2_ref(const DTYPE *x, DTYPE *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = times2(x[i]);
}
