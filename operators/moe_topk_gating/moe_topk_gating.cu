// moe_topk_gating.cu: per row of x (rows, E): the K best elements in tb_argmax_better's order (NaN
// first, then the larger value, equal values by the LOWER INDEX: torch.topk's values, with ties
// resolved by a stated rule), weights = softmax of those K values in fp32 (expf, IEEE division)
// rounded to DTYPE, indices int32. The `cuda` implementation.
// A group of TPR threads (a power of two up to a warp) owns a row; thread t loads its NV 16-byte
// vectors (tb_row_load: vector j at element (j * TPR + t) * N) and keeps its own best K in a
// register list, each element inserted by K unrolled compare-and-swap steps (no indexed register
// access). Then K rounds of a group argmax over the lists' heads by xor shuffles inside the group
// (the order is total, indices unique): round s's winner is pick s, and its owner pops its head.
// The group's first thread writes the K weights and indices.
// Defines: DTYPE, BLOCK (a multiple of TPR), TPR (1..32, power of two), NV, K.
#include "tb_rows.cuh"

TB_DEVICE void moe_swap(float &a, float &b) { const float t = a; a = b; b = t; }
TB_DEVICE void moe_swap(int &a, int &b) { const int t = a; a = b; b = t; }

extern "C" __global__ void __launch_bounds__(BLOCK)
moe_topk_gating_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ weights, int32_t *__restrict__ indices, int rows,
                     int E) {
  static_assert(TPR >= 1 && TPR <= 32 && (TPR & (TPR - 1)) == 0 && BLOCK % TPR == 0, "TPR: 1..32, dividing BLOCK");
  constexpr int V = tb_vec<DTYPE>::N;
  constexpr int EMPTY = 0x7fffffff; // an empty slot: value -inf, index past every column (worst)
  const int t = threadIdx.x % TPR;
  const long long row = (long long)blockIdx.x * (BLOCK / TPR) + threadIdx.x / TPR;
  const bool active = row < rows;
  const bool vec_ok = E % V == 0 && tb_aligned16(x);
  tb_vec<DTYPE> v[NV];
  tb_row_load<TPR, NV>(v, x + (active ? row : 0) * E, t, E, vec_ok, active);

  float tv[K];
  int ti[K];
#pragma unroll
  for (int s = 0; s < K; ++s) {
    tv[s] = -INFINITY;
    ti[s] = EMPTY;
  }
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int e = (j * TPR + t) * V;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (active && e + k < E) {
        float cv = tb_to_float(v[j].v[k]);
        int ci = e + k;
#pragma unroll
        for (int s = 0; s < K; ++s) {
          if (tb_argmax_better(cv, ci, tv[s], ti[s])) {
            moe_swap(cv, tv[s]);
            moe_swap(ci, ti[s]);
          }
        }
      }
    }
  }

  float pv[K];
  int pi[K];
#pragma unroll
  for (int s = 0; s < K; ++s) {
    float bv = tv[0];
    int bi = ti[0];
#pragma unroll
    for (int o = TPR / 2; o > 0; o >>= 1) tb_argmax_shfl(bv, bi, o);
    pv[s] = bv;
    pi[s] = bi;
    if (ti[0] == bi) { // the owner pops its head
#pragma unroll
      for (int q = 0; q + 1 < K; ++q) {
        tv[q] = tv[q + 1];
        ti[q] = ti[q + 1];
      }
      tv[K - 1] = -INFINITY;
      ti[K - 1] = EMPTY;
    }
  }

  if (active && t == 0) {
    float ex[K], sum = 0.0f;
#pragma unroll
    for (int s = 0; s < K; ++s) {
      ex[s] = expf(pv[s] - pv[0]);
      sum += ex[s];
    }
#pragma unroll
    for (int s = 0; s < K; ++s) {
      weights[row * K + s] = tb_from_float<DTYPE>(__fdiv_rn(ex[s], sum));
      indices[row * K + s] = pi[s];
    }
  }
}
