// radix_sort.cu: radix_sort's `cuda` implementation (OPERATORS.md 43): an LSD radix sort of int32
// keys, 8-bit digits, four passes, onesweep-style (one read and one write of the keys a pass):
//   radix_sort_zero   clears the digit histograms and the tile counters
//   radix_sort_hist   one read of the input: the four passes' 256-bin digit histograms at once
//                     (shared-memory counts, one global atomic a non-zero bin a block), and clears
//                     the look-back status words of the four passes
//   radix_sort_pass   one pass: each block takes the next tile (an atomic counter, so a tile waits
//                     only on tiles whose blocks already run), ranks its TILE = BLOCK x ITEMS keys
//                     stably by digit (per-warp counters, peers found with 8 ballots), publishes
//                     its digit counts, then looks back over earlier tiles' status words (decoupled
//                     look-back: a 30-bit count with a 2-bit flag, aggregate or inclusive prefix,
//                     in one word, so no fence orders a count and its flag), scatters the keys into
//                     shared memory in digit order and writes them out in coalesced runs.
// Stable: a tile's keys keep their index order within a digit (warp, then round, then lane, the
// order they were loaded in), tiles keep theirs through the look-back; LSD passes need nothing else.
// Keys past n in the last tile are padded with TB_SORT_PAD (digit 255 of every pass, after every
// real key of digit 255), so their positions are >= n and are not written.
// Defines: SORT_KIND = 1 (tb_sort.cuh), BLOCK (a multiple of 256's divisors: 256, 512, 1024), ITEMS.
// Workspace (uint32): status[4][ntiles][256] | hist[4][256] | counters[4]; n < 2^30.
#include "tb_sort.cuh"

#define RADIX 256
#define PASSES 4
#define FLAG_AGG 0x40000000u
#define FLAG_INCL 0x80000000u
#define VALUE_MASK 0x3FFFFFFFu

#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef ITEMS
#define ITEMS 16
#endif
#define WARPS (BLOCK / 32)
#define TILE (BLOCK * ITEMS)

static __device__ __forceinline__ uint32_t *hist_of(uint32_t *ws, int64_t ntiles) {
  return ws + (int64_t)PASSES * ntiles * RADIX;
}

extern "C" __global__ void radix_sort_zero(uint32_t *__restrict__ ws, int64_t ntiles) {
  uint32_t *h = hist_of(ws, ntiles);
  for (int i = threadIdx.x; i < PASSES * RADIX + PASSES; i += blockDim.x) h[i] = 0;
}

// Block of 256 threads; grid-strided over 16-byte vectors of keys (n % 4 tail by block 0).
extern "C" __global__ void __launch_bounds__(256) radix_sort_hist(const tb_sort_t *__restrict__ in,
                                                                 uint32_t *__restrict__ ws, int64_t n,
                                                                 int64_t ntiles) {
  __shared__ uint32_t s[PASSES * RADIX];
  for (int i = threadIdx.x; i < PASSES * RADIX; i += 256) s[i] = 0;
  // the status words of the four passes, read by radix_sort_pass's look-back, start at zero
  const int64_t words = (int64_t)PASSES * ntiles * RADIX;
  const int64_t stride = (int64_t)gridDim.x * 256;
  for (int64_t i = blockIdx.x * 256 + threadIdx.x; i < words / 4; i += stride)
    reinterpret_cast<uint4 *>(ws)[i] = make_uint4(0, 0, 0, 0);
  __syncthreads();
  const int64_t nv = n / 4;
  const int4 *v = reinterpret_cast<const int4 *>(in);
  for (int64_t i = blockIdx.x * 256 + threadIdx.x; i < nv; i += stride) {
    int4 q = __ldg(v + i);
    uint32_t k[4] = {tb_sort_key(q.x), tb_sort_key(q.y), tb_sort_key(q.z), tb_sort_key(q.w)};
#pragma unroll
    for (int e = 0; e < 4; e++)
#pragma unroll
      for (int p = 0; p < PASSES; p++) atomicAdd(&s[p * RADIX + ((k[e] >> (8 * p)) & 0xFF)], 1u);
  }
  if (blockIdx.x == 0 && threadIdx.x < n - nv * 4) {
    uint32_t k = tb_sort_key(in[nv * 4 + threadIdx.x]);
#pragma unroll
    for (int p = 0; p < PASSES; p++) atomicAdd(&s[p * RADIX + ((k >> (8 * p)) & 0xFF)], 1u);
  }
  __syncthreads();
  uint32_t *h = hist_of(ws, ntiles);
  for (int i = threadIdx.x; i < PASSES * RADIX; i += 256)
    if (s[i]) atomicAdd(&h[i], s[i]);
}

// Exclusive prefix sum of v over threads 0..255 (digit d = thread d); every thread of the block
// calls it (it synchronises), threads >= 256 pass 0 and get a meaningless result.
static __device__ __forceinline__ uint32_t scan256(uint32_t v, uint32_t *s_wsum) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    uint32_t y = __shfl_up_sync(0xFFFFFFFFu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31 && warp < 8) s_wsum[warp] = x;
  __syncthreads();
  uint32_t before = 0;
  for (int w = 0; w < warp && w < 8; w++) before += s_wsum[w];
  __syncthreads(); // s_wsum may be reused by the next call
  return before + x - v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) radix_sort_pass(const tb_sort_t *__restrict__ src,
                                                                   tb_sort_t *__restrict__ dst,
                                                                   uint32_t *__restrict__ ws, int64_t n,
                                                                   int64_t ntiles, int pass) {
  extern __shared__ uint32_t s_keys[]; // TILE keys in digit order
  __shared__ uint32_t s_warp[WARPS * RADIX];
  __shared__ uint32_t s_start[RADIX];
  __shared__ long long s_gbase[RADIX];
  __shared__ uint32_t s_wsum[8];
  __shared__ uint32_t s_tile;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int shift = 8 * pass;
  uint32_t *status = ws + (int64_t)pass * ntiles * RADIX;
  uint32_t *hist = hist_of(ws, ntiles) + pass * RADIX;
  uint32_t *counter = hist_of(ws, ntiles) + PASSES * RADIX + pass;

  for (int i = tid; i < WARPS * RADIX; i += BLOCK) s_warp[i] = 0;
  if (tid == 0) s_tile = atomicAdd(counter, 1u);
  __syncthreads();
  const int64_t tile = s_tile;

  // load: warp w holds keys [w * 32 * ITEMS, (w + 1) * 32 * ITEMS) of the tile, round r lane l
  // key r * 32 + l of those: index order is (warp, round, lane)
  uint32_t k[ITEMS], pos[ITEMS];
  const int64_t base = tile * TILE + (int64_t)warp * 32 * ITEMS + lane;
#pragma unroll
  for (int r = 0; r < ITEMS; r++) {
    int64_t i = base + r * 32;
    k[r] = i < n ? tb_sort_key(src[i]) : TB_SORT_PAD;
  }

  // rank within the warp: pos = how many earlier keys of the warp share the digit
  uint32_t *wh = s_warp + warp * RADIX;
  const uint32_t lt = (1u << lane) - 1u;
#pragma unroll
  for (int r = 0; r < ITEMS; r++) {
    const uint32_t d = (k[r] >> shift) & 0xFF;
    uint32_t peers = 0xFFFFFFFFu;
#pragma unroll
    for (int b = 0; b < 8; b++) {
      const bool bit = (d >> b) & 1;
      const uint32_t bal = __ballot_sync(0xFFFFFFFFu, bit);
      peers &= bit ? bal : ~bal;
    }
    const uint32_t pre = wh[d];
    __syncwarp();
    if (lane == __ffs(peers) - 1) wh[d] = pre + __popc(peers);
    __syncwarp();
    pos[r] = pre + __popc(peers & lt);
  }
  __syncthreads();

  // per digit: exclusive prefix over the warps, the tile's count; publish it, then look back
  uint32_t count = 0;
  if (tid < RADIX) {
    for (int w = 0; w < WARPS; w++) {
      uint32_t c = s_warp[w * RADIX + tid];
      s_warp[w * RADIX + tid] = count;
      count += c;
    }
    volatile uint32_t *st = status + tile * RADIX + tid;
    *st = (tile == 0 ? FLAG_INCL : FLAG_AGG) | count;
  }
  const uint32_t start = scan256(tid < RADIX ? count : 0, s_wsum);
  const uint32_t gstart = scan256(tid < RADIX ? hist[tid < RADIX ? tid : 0] : 0, s_wsum);
  if (tid < RADIX) {
    uint32_t excl = 0;
    for (int64_t t = tile - 1; t >= 0; t--) {
      const volatile uint32_t *st = status + t * RADIX + tid;
      uint32_t s;
      do { s = *st; } while ((s & (FLAG_AGG | FLAG_INCL)) == 0);
      excl += s & VALUE_MASK;
      if (s & FLAG_INCL) break;
    }
    if (tile > 0) *(volatile uint32_t *)(status + tile * RADIX + tid) = FLAG_INCL | (excl + count);
    s_start[tid] = start;
    s_gbase[tid] = (long long)gstart + excl - start;
  }
  __syncthreads();

  // scatter into shared memory in digit order (stable), then out in runs of one digit
#pragma unroll
  for (int r = 0; r < ITEMS; r++) {
    const uint32_t d = (k[r] >> shift) & 0xFF;
    s_keys[s_start[d] + wh[d] + pos[r]] = k[r];
  }
  __syncthreads();
#pragma unroll 4
  for (int i = tid; i < TILE; i += BLOCK) {
    const uint32_t key = s_keys[i];
    const long long g = s_gbase[(key >> shift) & 0xFF] + i;
    if (g < n) dst[g] = tb_sort_value(key);
  }
}
