// swiglu_ref.cu: the reference, one thread per element of the flattened (M, N) inputs:
// s = round_DTYPE(x / (1 + expf(-x))) (F.silu in fp32), out = round_DTYPE(s * y).
// Define: DTYPE. Kernel: swiglu_ref.
#include "tb_common.cuh"

extern "C" __global__ void swiglu_ref(const DTYPE *x, const DTYPE *y, DTYPE *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xf = tb_to_float(x[i]);
  const float s = tb_round<DTYPE>(xf / (1.0f + expf(-xf)));
  out[i] = tb_from_float<DTYPE>(s * tb_to_float(y[i]));
}
