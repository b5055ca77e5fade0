// cross_entropy_ref.cu: the reference, one thread per row, in double: m = max, s = sum exp(x - m),
// loss = m + log(s) - x[target], rounded once to DTYPE. A target outside [0, cols) (never drawn:
// torch would raise) gives NaN. Defines: DTYPE. Kernel: cross_entropy_ref.
#include "tb_common.cuh"

extern "C" __global__ void cross_entropy_ref(const DTYPE *x, const int64_t *targets, DTYPE *loss, int rows, int cols) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const DTYPE *xr = x + r * cols;
  double m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, (double)tb_to_float(xr[c]));
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += exp((double)tb_to_float(xr[c]) - m);
  const int64_t t = targets[r];
  const double l = (t >= 0 && t < cols) ? m + log(s) - (double)tb_to_float(xr[t]) : (double)__int_as_float(0x7fc00000);
  loss[r] = tb_from_float<DTYPE>((float)l);
}
