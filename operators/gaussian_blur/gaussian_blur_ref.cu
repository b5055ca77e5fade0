// gaussian_blur_ref.cu: the reference, one thread per output element: the kr x kc products with
// the zero-padded image summed in double, rounded once to DTYPE (F.conv2d's result up to its own
// summation order). Defines: DTYPE. Kernel: gaussian_blur_ref.
#include "tb_common.cuh"

extern "C" __global__ void gaussian_blur_ref(const DTYPE *x, const DTYPE *w, DTYPE *y, int rows, int cols, int kr,
                                             int kc) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * cols) return;
  const int r = (int)(i / cols), c = (int)(i % cols);
  double s = 0.0;
  for (int a = 0; a < kr; ++a) {
    const int rr = r + a - kr / 2;
    if (rr < 0 || rr >= rows) continue;
    for (int b = 0; b < kc; ++b) {
      const int cc = c + b - kc / 2;
      if (cc < 0 || cc >= cols) continue;
      s += (double)tb_to_float(x[(long long)rr * cols + cc]) * (double)tb_to_float(w[a * kc + b]);
    }
  }
  y[i] = tb_from_float<DTYPE>((float)s);
}
