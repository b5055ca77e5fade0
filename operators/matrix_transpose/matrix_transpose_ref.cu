// matrix_transpose_ref.cu: the reference, one thread per element of out (n, m): out[j, i] =
// x[i, j] for x (m, n). Define: DTYPE. Kernel: matrix_transpose_ref.
#include "tb_common.cuh"

extern "C" __global__ void matrix_transpose_ref(const DTYPE *x, DTYPE *out, long long m, long long n) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= m * n) return;
  const long long j = e / m, i = e % m;
  out[e] = x[i * n + j];
}
