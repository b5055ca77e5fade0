// moe_topk_gating_gen.cu: the operator's input generator (OPERATORS.md 22, TileBench's newest):
// each row of logits (rows, E) becomes a random permutation of linspace(-3, 3, E) rounded to
// DTYPE. keys (rows, E) are seeded uniform floats; element i of a row takes the linspace value of
// its key's rank, rank_i = #{j : key_j < key_i or (key_j == key_i and j < i)} (a permutation even
// where two keys are equal). linspace as torch computes it in fp32: start + step * i for the
// first half, end - step * (E - 1 - i) for the second. One block per row, O(E^2): run once per
// case. Defines: DTYPE. Kernel: moe_topk_gating_gen.
#include "tb_common.cuh"

extern "C" __global__ void moe_topk_gating_gen(const float *keys, DTYPE *logits, int rows, int E) {
  const float *kr = keys + (long long)blockIdx.x * E;
  const float step = (3.0f - -3.0f) / (float)(E > 1 ? E - 1 : 1);
  for (int i = threadIdx.x; i < E; i += blockDim.x) {
    const float ki = kr[i];
    int rank = 0;
    for (int j = 0; j < E; ++j) rank += (kr[j] < ki || (kr[j] == ki && j < i)) ? 1 : 0;
    // __fmul_rn / __fadd_rn: no FMA contraction, so the GPU check can reproduce every value
    const float v = rank < E / 2 ? __fadd_rn(-3.0f, __fmul_rn(step, (float)rank))
                                 : __fsub_rn(3.0f, __fmul_rn(step, (float)(E - 1 - rank)));
    logits[(long long)blockIdx.x * E + i] = tb_from_float<DTYPE>(v);
  }
}
