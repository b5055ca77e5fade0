// layernorm_ref.cu: the reference, one thread per row: mean and biased variance in double (two
// passes), y = (x - mean) / sqrt(var + eps) * w + b in double, rounded to DTYPE.
// Define: DTYPE. Kernel: layernorm_ref.
#include "tb_common.cuh"

extern "C" __global__ void layernorm_ref(const DTYPE *x, const DTYPE *w, const DTYPE *b, DTYPE *y,
                                         int rows, int cols, float eps) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const DTYPE *xr = x + r * cols;
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += tb_to_float(xr[c]);
  const double mean = s / cols;
  double d2 = 0.0;
  for (int c = 0; c < cols; ++c) {
    const double d = tb_to_float(xr[c]) - mean;
    d2 += d * d;
  }
  const double rstd = 1.0 / sqrt(d2 / cols + (double)eps);
  for (int c = 0; c < cols; ++c) {
    const double o = (tb_to_float(xr[c]) - mean) * rstd * tb_to_float(w[c]) + tb_to_float(b[c]);
    y[r * cols + c] = tb_from_float<DTYPE>((float)o);
  }
}
