// batch_normalization_ref.cu: the reference, one thread per channel c of x (N, C), in double: the
// mean, then the biased variance from the centred values (two passes), then
// y = (x - mean) / sqrt(var + eps) * gamma + beta, rounded once to DTYPE. Defines: DTYPE.
// Kernel: batch_normalization_ref.
#include "tb_common.cuh"

extern "C" __global__ void batch_normalization_ref(const DTYPE *x, const DTYPE *gamma, const DTYPE *beta, DTYPE *y,
                                                   int N, int C, float eps) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  double s = 0.0;
  for (long long n = 0; n < N; ++n) s += tb_to_float(x[n * C + c]);
  const double mean = s / N;
  double v = 0.0;
  for (long long n = 0; n < N; ++n) {
    const double d = tb_to_float(x[n * C + c]) - mean;
    v += d * d;
  }
  const double rstd = 1.0 / sqrt(v / N + (double)eps);
  const double g = tb_to_float(gamma[c]), b = tb_to_float(beta[c]);
  for (long long n = 0; n < N; ++n)
    y[n * C + c] = tb_from_float<DTYPE>((float)((tb_to_float(x[n * C + c]) - mean) * rstd * g + b));
}
