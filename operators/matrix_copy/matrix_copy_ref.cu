// matrix_copy_ref.cu: the reference, one thread per element of the flattened (N, N) A:
// B[i] = A[i] + 0 (torch's `A + 0`: for floats the sum in fp32 rounded to DTYPE, which is A[i]
// itself except that -0.0 becomes +0.0; for int8 the value). Define: DTYPE. Kernel: matrix_copy_ref.
#include "tb_common.cuh"

extern "C" __global__ void matrix_copy_ref(const DTYPE *a, DTYPE *b, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if constexpr (tb_is_integer<DTYPE>::value) b[i] = a[i];
  else b[i] = tb_from_float<DTYPE>(tb_to_float(a[i]) + 0.0f);
}
