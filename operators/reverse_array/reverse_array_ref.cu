// reverse_array_ref.cu: the reference, one thread per element: out[i] = x[n - 1 - i].
// Define: DTYPE. Kernel: reverse_array_ref.
#include "tb_common.cuh"

extern "C" __global__ void reverse_array_ref(const DTYPE *x, DTYPE *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[n - 1 - i];
}
