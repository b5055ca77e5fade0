// linear_self_attention_ref.cu: the reference, in two kernels with double accumulation (phi in
// fp32: x + 1 for x > 0, expf(x) otherwise, as the operator defines it):
// - lsa_ref_kv: one thread per entry (i, j) of [S | Z] (D x (D + 1)): S[i, j] = sum_m phi(K[m, i])
//   V[m, j], Z[i] = sum_m phi(K[m, i]) (column j = D), stored as fp32 in kv (D, D + 1);
// - lsa_ref_out: one thread per out[m, j] = sum_i phi(Q[m, i]) S[i, j] / (sum_i phi(Q[m, i]) Z[i]
//   + eps).
// Kernels: lsa_ref_kv(K, V, kv, M, D), lsa_ref_out(Q, kv, out, M, D, eps).
__device__ __forceinline__ float lsa_ref_phi(float x) { return x > 0.0f ? x + 1.0f : expf(x); }

extern "C" __global__ void lsa_ref_kv(const float *K, const float *V, float *kv, int M, int D) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= D * (D + 1)) return;
  const int i = e / (D + 1), j = e % (D + 1);
  double acc = 0.0;
  for (int m = 0; m < M; ++m) {
    const double p = lsa_ref_phi(K[(long long)m * D + i]);
    acc += j < D ? p * V[(long long)m * D + j] : p;
  }
  kv[e] = (float)acc;
}

extern "C" __global__ void lsa_ref_out(const float *Q, const float *kv, float *out, int M, int D, float eps) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= (long long)M * D) return;
  const long long m = e / D;
  const int j = (int)(e % D);
  double num = 0.0, den = 0.0;
  for (int i = 0; i < D; ++i) {
    const double p = lsa_ref_phi(Q[m * D + i]);
    num += p * kv[i * (D + 1) + j];
    den += p * kv[i * (D + 1) + D];
  }
  out[e] = (float)(num / (den + (double)eps));
}
