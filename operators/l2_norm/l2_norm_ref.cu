// l2_norm_ref.cu: the reference, one thread per row: the sum of squares in double,
// rstd = 1 / sqrt(ss + eps); y = x * rstd rounded once to DTYPE. Defines: DTYPE.
// Kernel: l2_norm_ref.
#include "tb_common.cuh"

extern "C" __global__ void l2_norm_ref(const DTYPE *x, DTYPE *y, int rows, int cols, float eps) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const DTYPE *xr = x + r * cols;
  double ss = 0.0;
  for (int c = 0; c < cols; ++c) {
    const double f = tb_to_float(xr[c]);
    ss += f * f;
  }
  const double rstd = 1.0 / sqrt(ss + (double)eps);
  for (int c = 0; c < cols; ++c) y[r * cols + c] = tb_from_float<DTYPE>((float)(tb_to_float(xr[c]) * rstd));
}
