// dequantize_rowwise_ref.cu: the reference, one thread per element of the flattened (rows, cols)
// x: out[i] = fp16((state_x[i / cols] * x[i]) * (1.0f / 127)), each product in fp32 rounded
// (PyTorch eager: int8 promoted by the fp32 scale, then the constant 1.0 / 127.0 as fp32), one
// rounding to fp16. Define: DTYPE (int8_t). Kernel: dequantize_rowwise_ref.
#include "tb_common.cuh"

extern "C" __global__ void dequantize_rowwise_ref(const DTYPE *x, const float *state_x, __half *out, long long n,
                                                  long long cols) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = __fmul_rn(__fmul_rn(state_x[i / cols], tb_to_float(x[i])), 1.0f / 127.0f);
  out[i] = __float2half_rn(v);
}
