// moe_topk_gating_ref.cu: the reference, one thread per row. The order is tb_argmax_better's
// (tb_rows.cuh): NaN above everything, then the larger value, and among equal values the LOWER
// INDEX first; a total order, so the top k are unique. Pass s scans the row for the best element
// strictly below pick s-1 in that order (O(k E)). weights = softmax of the k picked values in
// double (exp(v_s - v_0) / sum), rounded once to DTYPE; indices int32.
// Defines: DTYPE, K (= k). Kernel: moe_topk_gating_ref.
#include "tb_rows.cuh"

extern "C" __global__ void moe_topk_gating_ref(const DTYPE *x, DTYPE *weights, int32_t *indices, int rows, int E) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const DTYPE *xr = x + r * E;
  float pv[K];
  int pi[K];
  for (int s = 0; s < K; ++s) {
    int bi = -1;
    float bv = 0.0f;
    for (int c = 0; c < E; ++c) {
      const float v = tb_to_float(xr[c]);
      if (s > 0 && !tb_argmax_better(pv[s - 1], pi[s - 1], v, c)) continue; // not below pick s-1
      if (bi < 0 || tb_argmax_better(v, c, bv, bi)) {
        bv = v;
        bi = c;
      }
    }
    pv[s] = bv;
    pi[s] = bi;
  }
  double sum = 0.0;
  for (int s = 0; s < K; ++s) sum += exp((double)pv[s] - (double)pv[0]);
  for (int s = 0; s < K; ++s) {
    weights[r * K + s] = tb_from_float<DTYPE>((float)(exp((double)pv[s] - (double)pv[0]) / sum));
    indices[r * K + s] = pi[s];
  }
}
