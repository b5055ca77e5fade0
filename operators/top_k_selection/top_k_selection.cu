// top_k_selection.cu: top_k_selection's `cuda` implementation (OPERATORS.md 44): the k largest of
// n fp32 values, descending, by radix select in four kernels:
//   topk_zero    clears the 4096-bin histogram and the two counters
//   topk_hist    one read of x: histogram of the keys' top 12 bits (tb_sort.cuh's order: NaN the
//                largest key), shared-memory counts, one global atomic a non-zero bin a block
//   topk_gather  every block finds the bin b holding the k-th largest key (the bins above hold
//                A < k keys, with b at least k), then one more read of x: keys of bins above b go
//                to `sel` (A of them), keys of bin b to `cand` (warp-aggregated atomic slots)
//   topk_final   one block: radix select among the candidates on the remaining 20 bits (8, 8, 4;
//                a warp finds each digit) gives the k-th largest key T and how many keys equal to
//                T belong in the output; sel, the candidates above T and those copies of T are
//                sorted descending in shared memory by a bitonic network and the first k stored.
// Duplicates keep their multiplicity (equal keys are equal values; NaN comes out as 0x7FC00000).
// Defines: SORT_KIND = 2, BLOCK (topk_hist, topk_gather), FBLOCK (topk_final), P (the final
// network's length: the power of two >= k).
// Workspace (uint32): hist[4096] | nsel | ncand.
#include "tb_sort.cuh"

#define BINS 4096
#define BIN_SHIFT 20
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef FBLOCK
#define FBLOCK 1024
#endif
#ifndef P
#define P 1024
#endif

extern "C" __global__ void topk_zero(uint32_t *__restrict__ ws) {
  for (int i = threadIdx.x; i < BINS + 2; i += blockDim.x) ws[i] = 0;
}

extern "C" __global__ void __launch_bounds__(BLOCK) topk_hist(const float *__restrict__ x, uint32_t *__restrict__ ws,
                                                             int64_t n) {
  __shared__ uint32_t s[BINS];
  for (int i = threadIdx.x; i < BINS; i += BLOCK) s[i] = 0;
  __syncthreads();
  const int64_t nv = n / 4, stride = (int64_t)gridDim.x * BLOCK;
  const float4 *v = reinterpret_cast<const float4 *>(x);
  for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < nv; i += stride) {
    float4 q = __ldg(v + i);
    atomicAdd(&s[tb_sort_key(q.x) >> BIN_SHIFT], 1u);
    atomicAdd(&s[tb_sort_key(q.y) >> BIN_SHIFT], 1u);
    atomicAdd(&s[tb_sort_key(q.z) >> BIN_SHIFT], 1u);
    atomicAdd(&s[tb_sort_key(q.w) >> BIN_SHIFT], 1u);
  }
  if (blockIdx.x == 0 && threadIdx.x < n - nv * 4) atomicAdd(&s[tb_sort_key(x[nv * 4 + threadIdx.x]) >> BIN_SHIFT], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < BINS; i += BLOCK)
    if (s[i]) atomicAdd(&ws[i], s[i]);
}

// Appends key to buf at a slot of counter, one atomic a warp for the lanes that append.
static __device__ __forceinline__ void warp_append(bool want, uint32_t key, uint32_t *counter, uint32_t *buf) {
  const uint32_t mask = __ballot_sync(0xFFFFFFFFu, want);
  if (mask == 0) return;
  const int lane = threadIdx.x & 31, leader = __ffs(mask) - 1;
  uint32_t base = 0;
  if (lane == leader) base = atomicAdd(counter, (uint32_t)__popc(mask));
  base = __shfl_sync(0xFFFFFFFFu, base, leader);
  if (want) buf[base + __popc(mask & ((1u << lane) - 1u))] = key;
}

// Finds the bin holding the k-th largest key: bin b with count(bins > b) < k <= count(bins >= b).
// Thread t owns BINS / BLOCK bins from the top; returns b (every thread), *above = count(bins > b).
static __device__ __forceinline__ int find_bin(const uint32_t *__restrict__ hist, uint32_t k, uint32_t *above) {
  constexpr int PER = BINS / BLOCK;
  __shared__ uint32_t s_sum[BLOCK];
  __shared__ int s_bin;
  __shared__ uint32_t s_above;
  const int t = threadIdx.x;
  const int hi = BINS - 1 - t * PER; // this thread's bins: hi, hi - 1, ..., hi - PER + 1
  uint32_t c[PER], sum = 0;
#pragma unroll
  for (int j = 0; j < PER; j++) { c[j] = hist[hi - j]; sum += c[j]; }
  s_sum[t] = sum;
  __syncthreads();
  // inclusive prefix over threads (top bins first), Hillis-Steele in shared memory
  for (int o = 1; o < BLOCK; o <<= 1) {
    uint32_t y = t >= o ? s_sum[t - o] : 0;
    __syncthreads();
    s_sum[t] += y;
    __syncthreads();
  }
  uint32_t run = s_sum[t] - sum; // keys in the bins above this thread's
  if (run < k && run + sum >= k) {
#pragma unroll
    for (int j = 0; j < PER; j++) {
      if (run + c[j] >= k) { s_bin = hi - j; s_above = run; break; }
      run += c[j];
    }
  }
  __syncthreads();
  *above = s_above;
  return s_bin;
}

extern "C" __global__ void __launch_bounds__(BLOCK) topk_gather(const float *__restrict__ x, uint32_t *__restrict__ ws,
                                                               uint32_t *__restrict__ sel, uint32_t *__restrict__ cand,
                                                               int64_t n, int k) {
  uint32_t above;
  const uint32_t b = (uint32_t)find_bin(ws, (uint32_t)k, &above);
  uint32_t *nsel = ws + BINS, *ncand = ws + BINS + 1;
  const int64_t stride = (int64_t)gridDim.x * BLOCK;
  // whole warps run every iteration (the warp-wide ballots), lanes past n append nothing
  const int64_t nv = n / 4;
  const float4 *v = reinterpret_cast<const float4 *>(x);
  for (int64_t i0 = blockIdx.x * (int64_t)BLOCK; i0 < nv; i0 += stride) {
    const int64_t i = i0 + threadIdx.x;
    float4 q = i < nv ? __ldg(v + i) : make_float4(0.f, 0.f, 0.f, 0.f);
    const float e[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const uint32_t key = tb_sort_key(e[j]), bin = key >> BIN_SHIFT;
      warp_append(i < nv && bin > b, key, nsel, sel);
      warp_append(i < nv && bin == b, key, ncand, cand);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < 32) { // the n % 4 tail: one warp
    const int64_t i = nv * 4 + threadIdx.x;
    const uint32_t key = i < n ? tb_sort_key(x[i]) : 0u, bin = key >> BIN_SHIFT;
    warp_append(i < n && bin > b, key, nsel, sel);
    warp_append(i < n && bin == b, key, ncand, cand);
  }
  (void)above;
}

// Warp 0: among counts h[0 .. 2^width) (digit d at h[d]), the digit holding the need-th largest
// key, counting from the top digit; returns it and, in *rest, need minus the keys of higher
// digits (the rank within the chosen digit). Only lane 0's results are meaningful.
static __device__ __forceinline__ uint32_t warp_pick(const uint32_t *h, int width, uint32_t need, uint32_t *rest) {
  const int lane = threadIdx.x & 31;
  const int nb = 1 << width, per = (nb + 31) / 32;
  const int hi = nb - 1 - lane * per; // this lane's digits from the top: hi .. hi - per + 1 (>= 0)
  uint32_t sum = 0;
  for (int j = 0; j < per; j++) if (hi - j >= 0) sum += h[hi - j];
  uint32_t incl = sum;
  for (int o = 1; o < 32; o <<= 1) {
    uint32_t y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += y;
  }
  uint32_t run = incl - sum, digit = 0, r = 0;
  const bool mine = run < need && incl >= need;
  if (mine) {
    for (int j = 0; j < per; j++) {
      const uint32_t c = h[hi - j];
      if (run + c >= need) { digit = hi - j; r = need - run; break; }
      run += c;
    }
  }
  const uint32_t who = __ballot_sync(0xFFFFFFFFu, mine);
  const int src = __ffs(who) - 1;
  digit = __shfl_sync(0xFFFFFFFFu, digit, src);
  r = __shfl_sync(0xFFFFFFFFu, r, src);
  *rest = r;
  return digit;
}

extern "C" __global__ void __launch_bounds__(FBLOCK) topk_final(const uint32_t *__restrict__ ws,
                                                               const uint32_t *__restrict__ sel,
                                                               const uint32_t *__restrict__ cand,
                                                               float *__restrict__ out, int k) {
  __shared__ uint32_t s_h[256];
  __shared__ uint32_t s_buf[P];
  __shared__ uint32_t s_prefix, s_need, s_fill;
  const int t = threadIdx.x;
  const uint32_t nsel = ws[BINS], ncand = ws[BINS + 1];
  if (t == 0) {
    s_prefix = ncand ? cand[0] >> BIN_SHIFT : 0; // every candidate shares the bin
    s_need = (uint32_t)k - nsel;                  // >= 1 and <= ncand
  }
  __syncthreads();
  // refine: digits of bits 19..12, 11..4, 3..0 under the prefix found so far
  const int widths[3] = {8, 8, 4};
  int low = BIN_SHIFT;
  for (int round = 0; round < 3; round++) {
    const int width = widths[round];
    low -= width;
    for (int i = t; i < 256; i += FBLOCK) s_h[i] = 0;
    __syncthreads();
    const uint32_t prefix = s_prefix;
    for (uint32_t i = t; i < ncand; i += FBLOCK) {
      const uint32_t key = cand[i];
      if ((key >> (low + width)) == prefix) atomicAdd(&s_h[(key >> low) & ((1u << width) - 1u)], 1u);
    }
    __syncthreads();
    if (t < 32) {
      uint32_t rest;
      const uint32_t d = warp_pick(s_h, width, s_need, &rest);
      if (t == 0) { s_prefix = (prefix << width) | d; s_need = rest; }
    }
    __syncthreads();
  }
  const uint32_t T = s_prefix, ties = s_need; // the k-th largest key; copies of it to take
  // the output's keys: sel (above T's bin), candidates above T, `ties` copies of T, padding
  for (uint32_t i = t; i < nsel; i += FBLOCK) s_buf[i] = sel[i];
  if (t == 0) s_fill = nsel;
  __syncthreads();
  for (uint32_t i = t; i < ncand; i += FBLOCK) {
    const uint32_t key = cand[i];
    if (key > T) s_buf[atomicAdd(&s_fill, 1u)] = key;
  }
  __syncthreads();
  const uint32_t filled = s_fill;
  for (uint32_t i = filled + t; i < P; i += FBLOCK) s_buf[i] = i < filled + ties ? T : 0u;
  __syncthreads();
  // bitonic network, descending: partner i ^ j, descending where (i & kk) == 0
  for (int kk = 2; kk <= P; kk <<= 1) {
    for (int j = kk >> 1; j > 0; j >>= 1) {
      for (int q = t; q < P / 2; q += FBLOCK) {
        const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1)), l = i | j;
        const uint32_t a = s_buf[i], c = s_buf[l];
        const bool desc = (i & kk) == 0;
        if (desc ? a < c : a > c) { s_buf[i] = c; s_buf[l] = a; }
      }
      __syncthreads();
    }
  }
  for (int i = t; i < k; i += FBLOCK) out[i] = tb_sort_value(s_buf[i]);
}

// Small inputs (n <= the SINGLE bound of operator.lua): everything in one block, one launch (the
// four kernels above are launch-bound there). The n keys and the final network live in dynamic
// shared memory (n + P keys); radix select over 12, 8, 8 and 4 bits of the keys held there, then
// the keys above T, `ties` copies of T and the descending network as in topk_final.
extern "C" __global__ void __launch_bounds__(FBLOCK) topk_single(const float *__restrict__ x, float *__restrict__ out,
                                                                int n, int k) {
  extern __shared__ uint32_t s_dyn[];
  uint32_t *s_keys = s_dyn, *s_buf = s_dyn + n;
  __shared__ uint32_t s_h[BINS];
  __shared__ uint32_t s_prefix, s_need, s_fill;
  const int t = threadIdx.x;
  for (int i = t; i < n; i += FBLOCK) s_keys[i] = tb_sort_key(x[i]);
  if (t == 0) { s_prefix = 0; s_need = (uint32_t)k; s_fill = 0; }
  const int widths[4] = {12, 8, 8, 4};
  int low = 32;
  for (int round = 0; round < 4; round++) {
    const int width = widths[round];
    low -= width;
    for (int i = t; i < (1 << width); i += FBLOCK) s_h[i] = 0;
    __syncthreads(); // also orders the keys' stores before the first round reads them
    const uint32_t prefix = s_prefix;
    for (int i = t; i < n; i += FBLOCK) {
      const uint32_t key = s_keys[i];
      if (round == 0 || (key >> (low + width)) == prefix) atomicAdd(&s_h[(key >> low) & ((1u << width) - 1u)], 1u);
    }
    __syncthreads();
    if (t < 32) {
      uint32_t rest;
      const uint32_t d = warp_pick(s_h, width, s_need, &rest);
      if (t == 0) { s_prefix = (prefix << width) | d; s_need = rest; }
    }
    __syncthreads();
  }
  const uint32_t T = s_prefix, ties = s_need;
  for (int i = t; i < n; i += FBLOCK) {
    const uint32_t key = s_keys[i];
    if (key > T) s_buf[atomicAdd(&s_fill, 1u)] = key;
  }
  __syncthreads();
  const uint32_t filled = s_fill;
  for (uint32_t i = filled + t; i < P; i += FBLOCK) s_buf[i] = i < filled + ties ? T : 0u;
  __syncthreads();
  for (int kk = 2; kk <= P; kk <<= 1) {
    for (int j = kk >> 1; j > 0; j >>= 1) {
      for (int q = t; q < P / 2; q += FBLOCK) {
        const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1)), l = i | j;
        const uint32_t a = s_buf[i], c = s_buf[l];
        if ((i & kk) == 0 ? a < c : a > c) { s_buf[i] = c; s_buf[l] = a; }
      }
      __syncthreads();
    }
  }
  for (int i = t; i < k; i += FBLOCK) out[i] = tb_sort_value(s_buf[i]);
}
