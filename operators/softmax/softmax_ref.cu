// softmax_ref.cu: the reference, one thread per row: max, then sum of expf(x - max) accumulated
// in double, then y = expf(x - max) / sum rounded to DTYPE (PyTorch's fp32 formula, with a more
// accurate sum). Define: DTYPE. Kernel: softmax_ref.
#include "tb_common.cuh"

extern "C" __global__ void softmax_ref(const DTYPE *x, DTYPE *y, int rows, int cols) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const DTYPE *xr = x + r * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, tb_to_float(xr[c]));
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += (double)expf(tb_to_float(xr[c]) - m);
  for (int c = 0; c < cols; ++c)
    y[r * cols + c] = tb_from_float<DTYPE>((float)((double)expf(tb_to_float(xr[c]) - m) / s));
}
