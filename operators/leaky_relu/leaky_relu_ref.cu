// leaky_relu_ref.cu: the reference, one thread per element: out[i] = x[i] if x[i] > 0, else
// x[i] * 0.01f in fp32 rounded once to DTYPE (F.leaky_relu; NaN propagates). Define: DTYPE.
// Kernel: leaky_relu_ref.
#include "tb_common.cuh"

extern "C" __global__ void leaky_relu_ref(const DTYPE *x, DTYPE *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float f = tb_to_float(x[i]);
  out[i] = f > 0.0f ? x[i] : tb_from_float<DTYPE>(__fmul_rn(f, 0.01f));
}
