// jacobi_stencil_2d_ref.cu: the reference, one thread per element of out (rows, cols): boundary
// rows and columns copied, interior points 0.25 * (((up + down) + left) + right) in fp32 with every
// op rounded to DTYPE (PyTorch eager's order and rounding points, spelled out as tb_round).
// Defines: DTYPE. Kernel: jacobi_stencil_2d_ref.
#include "tb_common.cuh"

extern "C" __global__ void jacobi_stencil_2d_ref(const DTYPE *in, DTYPE *out, int rows, int cols) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * cols) return;
  const int r = (int)(i / cols), c = (int)(i % cols);
  if (r == 0 || r == rows - 1 || c == 0 || c == cols - 1) {
    out[i] = in[i];
    return;
  }
  float t = tb_round<DTYPE>(tb_to_float(in[i - cols]) + tb_to_float(in[i + cols]));
  t = tb_round<DTYPE>(t + tb_to_float(in[i - 1]));
  t = tb_round<DTYPE>(t + tb_to_float(in[i + 1]));
  out[i] = tb_from_float<DTYPE>(0.25f * t);
}
