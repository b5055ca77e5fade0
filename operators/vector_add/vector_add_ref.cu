// vector_add_ref.cu: the reference, one thread per element: out[i] = x[i] + y[i], computed in
// fp32 and rounded once to DTYPE for floats (torch's `+` on half types), in int with wrap-around
// for int8. Define: DTYPE (the element type). Kernel: vector_add_ref.
#include "tb_common.cuh"

template <typename E> __device__ E add(E a, E b) {
  if constexpr (tb_is_integer<E>::value) return static_cast<E>(a + b);
  else return tb_from_float<E>(tb_to_float(a) + tb_to_float(b));
}

extern "C" __global__ void vector_add_ref(const DTYPE *x, const DTYPE *y, DTYPE *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = add(x[i], y[i]);
}
