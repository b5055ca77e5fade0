// interleave_ref.cu: the reference, one thread per element of out (2n): out[2i] = A[i],
// out[2i + 1] = B[i]. Define: DTYPE. Kernel: interleave_ref.
#include "tb_common.cuh"

extern "C" __global__ void interleave_ref(const DTYPE *a, const DTYPE *b, DTYPE *out, long long n) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= 2 * n) return;
  out[e] = (e & 1) ? b[e >> 1] : a[e >> 1];
}
