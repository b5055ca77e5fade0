// radix_sort.cu: radix_sort's `cuda` implementation (OPERATORS.md 43): an LSD radix sort of int32
// keys, 8-bit digits, four passes, onesweep (one read and one write of the keys a pass):
//   radix_sort_zero   clears the digit histograms and the counters
//   radix_sort_hist   one read of the input: the four passes' 256-bin digit histograms at once
//                     (shared-memory counts, one global atomic a non-zero bin a block); the last
//                     block to finish turns them into exclusive digit prefixes. It also clears
//                     the look-back status words of the four passes.
//   radix_sort_pass   one pass: each block takes the next tile (an atomic counter, so a tile waits
//                     only on tiles whose blocks already run) and
//                       1. loads its TILE = BLOCK x ITEMS keys warp-striped and counts their
//                          digits (per-warp shared counters: the "early counts");
//                       2. publishes the tile's 256 digit counts as status words (a 30-bit count
//                          with a 2-bit flag, aggregate or inclusive prefix, in one word, so no
//                          fence orders a count and its flag), before ranking, so later tiles'
//                          look-backs rarely wait on it;
//                       3. turns the counts into each warp's first slot per digit in the tile
//                          (exclusive over digits, then over warps) and ranks every key: its
//                          peers in the warp by 8 ballots, the highest peer lane reserves the run
//                          with one shared atomic; the key goes straight to its slot in shared
//                          memory (the tile in digit order);
//                       4. looks back over earlier tiles' status words (one thread a digit, LB
//                          tiles loaded at once, until an inclusive prefix) and publishes its
//                          inclusive prefix;
//                       5. writes the tile out: consecutive threads, consecutive slots, so each
//                          digit's run goes out coalesced.
// Stable: a tile's keys keep their index order within a digit (warp, then round, then lane: the
// order they were loaded in), tiles keep theirs through the look-back; LSD passes need nothing else.
// Keys past n in the last tile are padded with TB_SORT_PAD (digit 255 in every pass, ranked after
// every real key of digit 255), so they take the tile's last slots, which are not written; the
// last tile's published counts include them, but no tile reads the last tile's status.
// Forward progress: a tile waits only on tiles with smaller ids, whose blocks took their id earlier
// and so are running; a wait that lasts 10 s (a kernel bug) traps instead of hanging the launch.
// Defines: SORT_KIND = 1 (tb_sort.cuh), BLOCK (a multiple of 32, >= 256: one thread a digit),
// ITEMS (keys a thread), LB (status words a digit's look-back loads at once, >= 1).
// Workspace (uint32): status[4][ntiles][256] | hist[4][256] | counters[4] | done; n < 2^30.
#include "tb_sort.cuh"

#define RADIX 256
#define PASSES 4
#define FLAG_AGG 0x40000000u
#define FLAG_INCL 0x80000000u
#define FLAGS (FLAG_AGG | FLAG_INCL)
#define VALUE_MASK 0x3FFFFFFFu

#ifndef BLOCK
#define BLOCK 384
#endif
#ifndef ITEMS
#define ITEMS 20
#endif
#ifndef LB
#define LB 4
#endif
#define WARPS (BLOCK / 32)
#define TILE (BLOCK * ITEMS)
#define HIST_THREADS 256
#define HIST_VECS 4 // 16-byte vectors a hist thread loads before counting them

#if BLOCK % 32 != 0 || BLOCK < RADIX
#error "radix_sort.cu: BLOCK must be a multiple of 32 and at least 256 (one thread a digit)"
#endif
#if LB < 1
#error "radix_sort.cu: LB must be at least 1"
#endif

static __device__ __forceinline__ uint32_t *hist_of(uint32_t *ws, int ntiles) {
  return ws + (size_t)PASSES * ntiles * RADIX;
}

extern "C" __global__ void radix_sort_zero(uint32_t *__restrict__ ws, int ntiles) {
  uint32_t *h = hist_of(ws, ntiles);
  for (int i = threadIdx.x; i < PASSES * RADIX + PASSES + 1; i += blockDim.x) h[i] = 0;
}

// Exclusive sums over threads 0..255 of V values a thread (thread t holds digit t of V tables).
// Every thread of the block calls it (it synchronises the block once); threads >= 256 pass zeros
// and get a meaningless result. Once a block: s_wsum is read after the barrier and not rewritten.
template <int V>
static __device__ __forceinline__ void scan256(uint32_t (&x)[V], uint32_t (*s_wsum)[8]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t in[V];
#pragma unroll
  for (int v = 0; v < V; v++) in[v] = x[v];
#pragma unroll
  for (int o = 1; o < 32; o <<= 1)
#pragma unroll
    for (int v = 0; v < V; v++) {
      const uint32_t y = __shfl_up_sync(0xFFFFFFFFu, x[v], o);
      if (lane >= o) x[v] += y;
    }
  if (lane == 31 && warp < 8)
#pragma unroll
    for (int v = 0; v < V; v++) s_wsum[v][warp] = x[v];
  __syncthreads();
#pragma unroll
  for (int v = 0; v < V; v++) {
    uint32_t before = 0;
    for (int w = 0; w < warp && w < 8; w++) before += s_wsum[v][w];
    x[v] = before + x[v] - in[v];
  }
}

// Blocks of 256 threads, grid-strided over 16-byte vectors of keys, HIST_VECS loads in flight a
// thread (n % 4 tail by block 0), back to front: the input's front, which pass 0's first tiles
// read, is what the L2 holds when this kernel ends (the input is 80 MB at n = 2e7, the L2 50).
// Block b's counts go to the global histograms with one atomic a non-zero bin; the last block to
// finish (a counter after a fence, as in CUDA's threadfence reduction) replaces the four
// histograms by their exclusive prefixes: each pass's digit bases.
extern "C" __global__ void __launch_bounds__(HIST_THREADS) radix_sort_hist(const tb_sort_t *__restrict__ in,
                                                                          uint32_t *__restrict__ ws, int n,
                                                                          int ntiles) {
  __shared__ uint32_t s[PASSES * RADIX];
  __shared__ uint32_t s_wsum[PASSES][8];
  __shared__ int s_last;
  const int tid = threadIdx.x;
  for (int i = tid; i < PASSES * RADIX; i += HIST_THREADS) s[i] = 0;
  // the status words of the four passes, read by radix_sort_pass's look-back, start at zero
  const size_t words = (size_t)PASSES * ntiles * RADIX;
  const size_t tstride = (size_t)gridDim.x * HIST_THREADS;
  for (size_t i = (size_t)blockIdx.x * HIST_THREADS + tid; i < words / 4; i += tstride)
    reinterpret_cast<uint4 *>(ws)[i] = make_uint4(0, 0, 0, 0);
  __syncthreads();
  const int nv = n / 4;
  const int4 *v = reinterpret_cast<const int4 *>(in);
  const int stride = gridDim.x * HIST_THREADS;
  for (int i0 = blockIdx.x * HIST_THREADS * HIST_VECS + tid; i0 < nv; i0 += stride * HIST_VECS) {
    int4 q[HIST_VECS];
#pragma unroll
    for (int u = 0; u < HIST_VECS; u++) {
      const int i = i0 + u * HIST_THREADS;
      q[u] = i < nv ? __ldg(v + (nv - 1 - i)) : make_int4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < HIST_VECS; u++) {
      if (i0 + u * HIST_THREADS >= nv) continue;
      const uint32_t k[4] = {tb_sort_key(q[u].x), tb_sort_key(q[u].y), tb_sort_key(q[u].z), tb_sort_key(q[u].w)};
#pragma unroll
      for (int e = 0; e < 4; e++)
#pragma unroll
        for (int p = 0; p < PASSES; p++) atomicAdd(&s[p * RADIX + ((k[e] >> (8 * p)) & 0xFF)], 1u);
    }
  }
  if (blockIdx.x == 0 && tid < n - nv * 4) {
    const uint32_t k = tb_sort_key(in[nv * 4 + tid]);
#pragma unroll
    for (int p = 0; p < PASSES; p++) atomicAdd(&s[p * RADIX + ((k >> (8 * p)) & 0xFF)], 1u);
  }
  __syncthreads();
  uint32_t *h = hist_of(ws, ntiles);
  for (int i = tid; i < PASSES * RADIX; i += HIST_THREADS)
    if (s[i]) atomicAdd(&h[i], s[i]);
  __threadfence(); // this block's counts are in h before its arrival at the counter
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(&h[PASSES * RADIX + PASSES], 1u) == gridDim.x - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  uint32_t x[PASSES];
#pragma unroll
  for (int p = 0; p < PASSES; p++) x[p] = *(volatile uint32_t *)&h[p * RADIX + tid];
  scan256<PASSES>(x, s_wsum);
#pragma unroll
  for (int p = 0; p < PASSES; p++) h[p * RADIX + tid] = x[p];
}

// Bits [shift, shift + 8) of k, two ways: the counting takes byte `pass` with a byte permute, the
// rank and the write-out shift and mask. Two different instructions, so the compiler does not keep
// the digits the counting computed alive through the rank (ITEMS more registers: NVRTC gave
// 384 x 20 81 registers with one form, two blocks an SM instead of three).
static __device__ __forceinline__ uint32_t digit_prmt(uint32_t k, uint32_t sel) { return __byte_perm(k, 0u, sel); }
static __device__ __forceinline__ uint32_t digit_of(uint32_t k, int shift) { return (k >> shift) & 0xFF; }

// The look-back's status words: device-scope relaxed accesses (each word is its own message, a
// count with its flag; nothing else is ordered by it), where volatile gives system scope.
static __device__ __forceinline__ uint32_t load_status(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
static __device__ __forceinline__ void store_status(uint32_t *p, uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

static __device__ __forceinline__ uint32_t lanemask_le() {
  uint32_t m;
  asm("mov.u32 %0, %%lanemask_le;" : "=r"(m));
  return m;
}

// The lanes of the warp whose d (8 bits) equals this lane's: 8 ballots (CUB's MatchAny, in its
// PTX form: a bit's predicate straight from an and, the ballot inverted under it; 4 instructions
// a bit, where the C form compiled to up to 7; the hardware match.any is slower for so few bits).
static __device__ __forceinline__ uint32_t match8(uint32_t d) {
  uint32_t peers = 0xFFFFFFFFu;
#pragma unroll
  for (int b = 0; b < 8; b++) {
    uint32_t m;
    asm("{\n\t.reg .pred p;\n\t"
        "and.b32 %0, %1, %2;\n\t"
        "setp.ne.u32 p, %0, 0;\n\t"
        "vote.sync.ballot.b32 %0, p, 0xffffffff;\n\t"
        "@!p not.b32 %0, %0;\n\t}"
        : "=r"(m)
        : "r"(d), "r"(1u << b));
    peers &= m;
  }
  return peers;
}

// Digit `d`'s count in tiles 0..tile-1: walks back from tile - 1, LB status words at a time,
// summing aggregates until an inclusive prefix (tile 0 always publishes one). A word still zero
// (its tile not yet counted) stops the window there and is read again; 10 s of that traps.
static __device__ __forceinline__ uint32_t look_back(const uint32_t *status, int tile, int d) {
  uint32_t excl = 0;
  int j = tile - 1;
  unsigned long long t0 = 0;
  for (;;) {
    uint32_t s[LB];
#pragma unroll
    for (int w = 0; w < LB; w++)
      s[w] = j - w >= 0 ? load_status(status + (size_t)(j - w) * RADIX + d) : FLAG_INCL;
    int used = 0;
    bool go = true, done = false;
#pragma unroll
    for (int w = 0; w < LB; w++) {
      const bool ok = go && (s[w] & FLAGS) != 0;
      if (ok) {
        excl += s[w] & VALUE_MASK;
        used++;
        done = (s[w] & FLAG_INCL) != 0;
      }
      go = ok && !done;
    }
    if (done) return excl;
    if (used == 0) {
      unsigned long long now;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      if (t0 == 0) t0 = now;
      else if (now - t0 > 10000000000ull) __trap();
    } else {
      t0 = 0;
    }
    j -= used;
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK) radix_sort_pass(const tb_sort_t *__restrict__ src,
                                                                   tb_sort_t *__restrict__ dst,
                                                                   uint32_t *__restrict__ ws, int n, int ntiles,
                                                                   int pass) {
  extern __shared__ uint32_t s_keys[]; // TILE keys in digit order
  __shared__ uint32_t s_wo[WARPS * RADIX]; // per warp and digit: the count, then the next free slot
  __shared__ int s_gbase[RADIX];           // per digit: output index of the tile's slot 0
  __shared__ uint32_t s_wsum[1][8];
  __shared__ int s_tile;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int shift = 8 * pass;
  const uint32_t sel = 0x4440u | pass; // __byte_perm: byte `pass` of k, then three zero bytes
  uint32_t *status = ws + (size_t)pass * ntiles * RADIX;
  const uint32_t *gprefix = hist_of(ws, ntiles) + pass * RADIX;
  uint32_t *counter = hist_of(ws, ntiles) + PASSES * RADIX + pass;

  uint32_t *wo = s_wo + warp * RADIX;
#pragma unroll
  for (int i = lane; i < RADIX; i += 32) wo[i] = 0;
  if (tid == 0) s_tile = atomicAdd(counter, 1u);
  __syncthreads();
  const int tile = s_tile;

  // 1. load: warp w holds keys [w * 32 * ITEMS, (w + 1) * 32 * ITEMS) of the tile, round r lane l
  // key r * 32 + l of those: index order is (warp, round, lane); then the warp's digit counts
  uint32_t k[ITEMS];
  const int tile_n = min(TILE, n - tile * TILE);
  const tb_sort_t *in = src + (size_t)tile * TILE + warp * 32 * ITEMS + lane;
  if (tile_n == TILE) {
#pragma unroll
    for (int r = 0; r < ITEMS; r++) k[r] = tb_sort_key(in[r * 32]);
  } else {
    const int left = tile_n - warp * 32 * ITEMS - lane;
#pragma unroll
    for (int r = 0; r < ITEMS; r++) k[r] = r * 32 < left ? tb_sort_key(in[r * 32]) : TB_SORT_PAD;
  }
#pragma unroll
  for (int r = 0; r < ITEMS; r++) atomicAdd(&wo[digit_prmt(k[r], sel)], 1u);
  __syncthreads();

  // 2. per digit (thread d): the tile's count, each warp's exclusive count; publish the count
  uint32_t count = 0;
  if (tid < RADIX) {
#pragma unroll 4
    for (int w = 0; w < WARPS; w++) {
      const uint32_t c = s_wo[w * RADIX + tid];
      s_wo[w * RADIX + tid] = count;
      count += c;
    }
    store_status(status + (size_t)tile * RADIX + tid, (tile == 0 ? FLAG_INCL : FLAG_AGG) | count);
  }
  // 3. the digits' first slots in the tile; each warp's first slot per digit; rank and place
  uint32_t start[1] = {tid < RADIX ? count : 0u};
  scan256<1>(start, s_wsum);
  if (tid < RADIX)
#pragma unroll 4
    for (int w = 0; w < WARPS; w++) s_wo[w * RADIX + tid] += start[0];
  __syncthreads();
  const uint32_t le = lanemask_le();
#pragma unroll
  for (int r = 0; r < ITEMS; r++) {
    const uint32_t d = digit_of(k[r], shift);
    const uint32_t peers = match8(d);
    const int leader = 31 - __clz(peers);
    const uint32_t below = __popc(peers & le); // this key's place among its peers, from 1
    uint32_t slot = 0;
    if (lane == leader) slot = atomicAdd(&wo[d], below);
    slot = __shfl_sync(0xFFFFFFFFu, slot, leader);
    s_keys[slot + below - 1] = k[r];
  }

  // 4. look back (one thread a digit) and publish the inclusive prefix
  if (tid < RADIX) {
    const uint32_t excl = tile == 0 ? 0u : look_back(status, tile, tid);
    if (tile > 0) store_status(status + (size_t)tile * RADIX + tid, FLAG_INCL | (excl + count));
    s_gbase[tid] = (int)(gprefix[tid] + excl) - (int)start[0];
  }
  __syncthreads();

  // 5. slots out: slot i of digit d goes to s_gbase[d] + i
#pragma unroll 4
  for (int r = 0; r < ITEMS; r++) {
    const int i = tid + r * BLOCK;
    const uint32_t key = s_keys[i];
    if (tile_n == TILE || i < tile_n) dst[s_gbase[(key >> shift) & 0xFF] + i] = tb_sort_value(key);
  }
}
