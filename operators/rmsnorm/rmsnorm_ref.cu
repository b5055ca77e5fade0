// rmsnorm_ref.cu: the reference, one thread per row: mean of squares in double,
// rstd = 1 / sqrt(ms + eps); n = x * rstd, rounded to DTYPE when ROUND_BEFORE_WEIGHT (ATen's
// composite path), then y = n * w rounded to DTYPE. Defines: DTYPE, ROUND_BEFORE_WEIGHT.
// Kernel: rmsnorm_ref.
#include "tb_common.cuh"

extern "C" __global__ void rmsnorm_ref(const DTYPE *x, const DTYPE *w, DTYPE *y, int rows, int cols,
                                       float eps) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const DTYPE *xr = x + r * cols;
  double ss = 0.0;
  for (int c = 0; c < cols; ++c) {
    const double f = tb_to_float(xr[c]);
    ss += f * f;
  }
  const double rstd = 1.0 / sqrt(ss / cols + (double)eps);
  for (int c = 0; c < cols; ++c) {
    float nrm = (float)(tb_to_float(xr[c]) * rstd);
    if (ROUND_BEFORE_WEIGHT) nrm = tb_round<DTYPE>(nrm);
    y[r * cols + c] = tb_from_float<DTYPE>(nrm * tb_to_float(w[c]));
  }
}
