// weight_dequant_ref.cu: the reference, one thread per element of the flattened (M, N) X:
// Y[i, j] = X[i, j] * S[i / T, j / T] (S's row stride sn = ceil(N / T)), the product in fp32
// rounded once to DTYPE. Define: DTYPE. Kernel: weight_dequant_ref.
#include "tb_common.cuh"

extern "C" __global__ void weight_dequant_ref(const DTYPE *x, const DTYPE *s, DTYPE *y, long long n, long long cols,
                                              long long tile, long long sn) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n) return;
  const long long i = e / cols, j = e % cols;
  y[e] = tb_from_float<DTYPE>(__fmul_rn(tb_to_float(x[e]), tb_to_float(s[(i / tile) * sn + j / tile])));
}
