// fused_activation_ref.cu: the reference, one thread per element: z = x * gate + bias with each
// op rounded to fp32 (PyTorch eager: no FMA), out = z / (1 + expf(-z)) (accurate expf, IEEE
// division: F.silu's formula). Define: DTYPE (float). Kernel: fused_activation_ref.
#include "tb_common.cuh"

extern "C" __global__ void fused_activation_ref(const DTYPE *x, const DTYPE *gate, const DTYPE *bias, DTYPE *out,
                                                long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float z = __fadd_rn(__fmul_rn(tb_to_float(x[i]), tb_to_float(gate[i])), tb_to_float(bias[i]));
  out[i] = tb_from_float<DTYPE>(__fdiv_rn(z, __fadd_rn(1.0f, expf(-z))));
}
