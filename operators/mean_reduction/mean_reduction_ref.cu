// mean_reduction_ref.cu: the reference, one thread per row: the sum in double, divided by N,
// stored as fp32. Define: DTYPE (input element type). Kernel: mean_reduction_ref.
#include "tb_common.cuh"

extern "C" __global__ void mean_reduction_ref(const DTYPE *x, float *out, int rows, int cols) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += tb_to_float(x[r * cols + c]);
  out[r] = (float)(s / cols);
}
