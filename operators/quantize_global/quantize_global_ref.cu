// quantize_global_ref.cu: the reference, one thread per element: out[i] = __float2half_rn(x[i])
// (fp32 to fp16, round to nearest even: x.to(torch.float16)). Define: DTYPE (float, the input).
// Kernel: quantize_global_ref.
#include "tb_common.cuh"

extern "C" __global__ void quantize_global_ref(const DTYPE *x, __half *out, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half_rn(tb_to_float(x[i]));
}
