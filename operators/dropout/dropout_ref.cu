// dropout_ref.cu: the reference, one thread per element: out[i] = round(round(x[i] * x_keep[i])
// * scale), each product in fp32 and rounded to DTYPE (PyTorch eager's (x * x_keep) * (1 / (1 -
// p)), the scale passed as the fp32 value of 1 / (1 - p)). Define: DTYPE. Kernel: dropout_ref.
#include "tb_common.cuh"

extern "C" __global__ void dropout_ref(const DTYPE *x, const DTYPE *keep, DTYPE *out, long long n, float scale) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float kept = tb_round<DTYPE>(__fmul_rn(tb_to_float(x[i]), tb_to_float(keep[i])));
  out[i] = tb_from_float<DTYPE>(__fmul_rn(kept, scale));
}
