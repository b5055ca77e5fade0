// sigmoid_ref.cu: the reference, one thread per element: out[i] = 1 / (1 + expf(-x[i])) in fp32
// (accurate expf, IEEE division: PyTorch's formula) rounded once to DTYPE. Define: DTYPE.
// Kernel: sigmoid_ref.
#include "tb_common.cuh"

extern "C" __global__ void sigmoid_ref(const DTYPE *x, DTYPE *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float f = tb_to_float(x[i]);
  out[i] = tb_from_float<DTYPE>(1.0f / (1.0f + expf(-f)));
}
