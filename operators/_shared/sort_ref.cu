// sort_ref.cu: the sorting operators' reference (radix_sort, top_k_selection, bitonic_sort): a
// plain bitonic network over keys in global memory, one launch per compare-exchange step, as
// OPERATORS.md 42 describes bitonic_sort's reference: the n keys (tb_sort.cuh's order, NaN the
// largest) padded with TB_SORT_PAD to the next power of two p, partner i ^ j, ascending where
// (i & k) == 0, swapped only when strictly out of order; then the first n back as values
// (ascending) or the last `count` of the n in reverse (descending: top_k_selection).
// Simple on purpose: O(n log^2 n) and p / 2 threads a step, each step its own launch, so the
// network's correctness does not depend on shared memory or synchronisation inside a kernel.
// Defines: SORT_KIND (tb_sort.cuh).
#include "tb_sort.cuh"

extern "C" __global__ void sort_ref_keys(const tb_sort_t *__restrict__ x, uint32_t *__restrict__ keys,
                                         int64_t n, int64_t p) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p; i += (int64_t)gridDim.x * blockDim.x)
    keys[i] = i < n ? tb_sort_key(x[i]) : TB_SORT_PAD;
}

// One step (k, j) of the network: thread t owns the pair (i, i ^ j) with bit j of i clear.
extern "C" __global__ void sort_ref_step(uint32_t *__restrict__ keys, int64_t p, int64_t j, int64_t k) {
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < p / 2; t += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = ((t & ~(j - 1)) << 1) | (t & (j - 1)); // t with a 0 inserted at bit log2(j)
    int64_t l = i | j;
    uint32_t a = keys[i], b = keys[l];
    bool asc = (i & k) == 0;
    if (asc ? a > b : a < b) {
      keys[i] = b;
      keys[l] = a;
    }
  }
}

// out[i] = the i-th smallest (i < count): the first `count` keys in ascending order.
extern "C" __global__ void sort_ref_store(const uint32_t *__restrict__ keys, tb_sort_t *__restrict__ out,
                                          int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = tb_sort_value(keys[i]);
}

// out[i] = the i-th largest of the n real keys (i < count): descending order (top-k).
extern "C" __global__ void sort_ref_store_desc(const uint32_t *__restrict__ keys, tb_sort_t *__restrict__ out,
                                               int64_t n, int64_t count) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = tb_sort_value(keys[n - 1 - i]);
}
