// rope_ref.cu: the reference, one thread per element pair (j, j + D/2) of a row r = (b, s, h) of
// q: with c = cos[s, j], t = sin[s, j], out[r, j] = q[r, j] c - q[r, j + D/2] t and out[r, j + D/2]
// = q[r, j + D/2] c + q[r, j] t, each product and the sum in fp32 rounded to DTYPE (PyTorch
// eager's elementwise ops, no FMA). n = batch * seq * heads * D/2 pairs.
// Define: DTYPE. Kernel: rope_ref.
#include "tb_common.cuh"

__device__ float rnd(float v) { return tb_round<DTYPE>(v); }

extern "C" __global__ void rope_ref(const DTYPE *q, const DTYPE *cos, const DTYPE *sin, DTYPE *out, long long n,
                                    long long seq, long long heads, long long dim) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long half = dim / 2;
  const long long row = i / half, j = i % half, s = (row / heads) % seq;
  const float a = tb_to_float(q[row * dim + j]), b = tb_to_float(q[row * dim + j + half]);
  const float c = tb_to_float(cos[s * half + j]), t = tb_to_float(sin[s * half + j]);
  out[row * dim + j] = tb_from_float<DTYPE>(__fsub_rn(rnd(__fmul_rn(a, c)), rnd(__fmul_rn(b, t))));
  out[row * dim + j + half] = tb_from_float<DTYPE>(__fadd_rn(rnd(__fmul_rn(b, c)), rnd(__fmul_rn(a, t))));
}
