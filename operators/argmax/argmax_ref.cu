// argmax_ref.cu: the reference, one thread per row: a left-to-right scan keeping the first
// strictly larger value (the first NaN wins and ends the scan), as int64. Define: DTYPE.
// Kernel: argmax_ref.
#include "tb_common.cuh"

extern "C" __global__ void argmax_ref(const DTYPE *x, int64_t *out, int rows, int cols) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const DTYPE *xr = x + r * cols;
  float best = tb_to_float(xr[0]);
  long long best_i = 0;
  for (int c = 1; c < cols && !isnan(best); ++c) {
    const float f = tb_to_float(xr[c]);
    if (isnan(f) || f > best) {
      best = f;
      best_i = c;
    }
  }
  out[r] = best_i;
}
