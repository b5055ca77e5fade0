// gaussian_blur_gen.cu: normalises the drawn kernel (rand in [0, 1), kr * kc values, in place) to
// sum 1 as TileBench's generator does (k / k.sum() in the dtype): the sum in fp32 rounded to
// DTYPE, each value divided in fp32 and rounded. One thread: kr * kc is 49 in the grid.
// Defines: DTYPE. Kernel: gaussian_blur_gen.
#include "tb_common.cuh"

extern "C" __global__ void gaussian_blur_gen(DTYPE *w, int n) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += tb_to_float(w[i]);
  s = tb_round<DTYPE>(s);
  for (int i = 0; i < n; ++i) w[i] = tb_from_float<DTYPE>(tb_to_float(w[i]) / s);
}
