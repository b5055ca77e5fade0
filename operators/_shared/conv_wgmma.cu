// conv_wgmma.cu: the convolutions' `cuda` kernel on Hopper (VARIANT wgmma, sm_90a; conv.lua,
// docs/CONV.md): the implicit GEMM of conv_igemm.cu with its MMAs on wgmma,
//   out[oc, n] = sum_{tap, ic} Wr[tap][oc][ic] * X[ic, pos(n) + tap]      (per batch entry, group)
// M = output channels (BM a CTA: 64 or 128), N = output positions of a TH x TW tile of one output
// plane, K = input channels x taps; stride 1 only (conv.lua picks VARIANT mma for other strides).
//
// Why "virtual" positions: wgmma reads B from shared memory in 8 x 16-byte core matrices whose
// 8 rows (8 positions) are 16 bytes apart, and the core matrices along N a constant SBO apart. So
// the input region (RH x RW positions, RW = TW + KW - 1) lies in Bs as [channel block of 16 bytes]
// [region position][16 bytes], every region row RW positions after the last, and the tile's N
// index is the region's linear position: n = y RW + x, x < RW. Tap (dy, dx) of output n is region
// position n + dy RW + dx: for every tap the N range is one contiguous run of Bs rows, a
// descriptor that starts dy RW + dx rows (16-byte multiples) further. Columns x >= TW are computed
// and dropped (KW - 1 of every RW: 1 % at TW 160, 3 x 3), nothing else is wasted. The columns
// are independent in a GEMM, so the rows past the region that dropped columns read (never written:
// shared memory as it was) touch nothing kept.
//
// A K chunk (one pipeline stage, as conv_igemm.cu): BC input channels x one kernel plane (KH x KW
// taps): the plane's weights As[tap][channel block][BM][16 bytes] (conv_wgmma_wprep orders Wr so
// that this is one contiguous block: 16-byte cp.async), and the input region by cp.async into a
// raw buffer [channel][row][x] (VECLOAD: 16-byte pieces, zero-filled outside the input), STAGES
// chunks in flight; the raw region is transposed into Bs (one LDS and one STS a 32-bit word, 8
// positions x 4 words a warp: both conflict-free). fp32 is rounded to tf32 on the way in (weights
// by the prep kernel, the input in the transpose): TF32 wgmma, as cuDNN under PyTorch's default
// allow_tf32 and within the operators' tolerances (docs/CONV.md).
//
// The chunk loop (every thread loads and transposes; the two warpgroups each issue their wgmmas):
//   wait for chunks git and git + 1 to land (cp.async.wait_group), fence.proxy.async (the generic
//   writes, cp.async and the transpose's STS, become visible to wgmma's async proxy), barrier;
//   issue chunk git's KH KW (BCB / 32) wgmmas (32 bytes of K each: m64nNk16 fp16, m64nNk8 tf32) as
//   one group; wait for this warpgroup's chunk git - 1 (wgmma.wait_group 1) and barrier: every
//   warpgroup is done with chunk git - 1's stage and Bs; then, while chunk git computes, load chunk
//   git + STAGES - 1 into git - 1's stage and transpose chunk git + 1 into git - 1's Bs (Bs twice).
//   The tensor cores get chunk git + 1 while chunk git runs: two barriers a chunk, none of them
//   waiting for the tensor cores except at a tile's end (the accumulators go out: wait_group 0).
// No mbarrier and no spin loop: every wait is a barrier or a hardware wait on work already issued,
// so nothing can hang on a lost arrival.
// Warpgroups: BM 128: warpgroup w computes output channels 64w.., every position (N = NV);
// BM 64: both the same 64 channels, positions halved (N = NV / 2). Accumulators N / 2 a thread.
// Persistent CTAs, the cp.async pipeline across a CTA's tiles and the tile order: conv_igemm.cu's.
// Epilogue: from the accumulators (wgmma's m64nN layout: per n8 block, rows lane / 4 (+ 8), columns
// 2 (lane % 4) + {0, 1}) to global memory; a pair of outputs is one 4-byte (fp16) / 8-byte (fp32)
// store where both are in the same output row, kept, and aligned.
//
// Defines: DT (1 fp16, 0 fp32), BM (64, 128), TH, TW, KD, KH, KW, BCB (bytes of K a chunk: 32, 64),
// STAGES (>= 3), VECLOAD (0/1), NV (the tile's virtual positions: >= (TH - 1) RW + TW, a multiple
// of 8 x the warpgroups sharing N). 256 threads (two warpgroups).
// Kernels:
//   conv_wgmma_wprep(w, wr, G, cout_g, cin_g, mblocks, nch): the weights (Cout, Cin_g, taps) into
//     Wr[G][mblocks][nch][KD][NT2][BC / VE][BM][VE], zero-padded, fp32 rounded to tf32.
//   conv_wgmma(in, wr, out, ..., ntiles): grid min(ntiles, SMs), block 256, dynamic shared memory
//     STAGES x (As + raw) + 2 Bs (conv.lua computes the same).
#include "tb_mma16.cuh"
typedef unsigned long long uint64_t;

#ifndef DT
#define DT 1
#endif
#if DT == 1
typedef uint16_t ELEM;
#define ESIZE 2
#define CW_KTYPE "k16.f32.f16.f16"
#define CW_IMM "p, 1, 1, 0, 0"
#else
typedef float ELEM;
#define ESIZE 4
#define CW_KTYPE "k8.f32.tf32.tf32"
#define CW_IMM "p, 1, 1"
#endif
#define VE (16 / ESIZE)               // elements a 16-byte vector
#define BC (BCB / ESIZE)              // input channels a K chunk
#define KB (BCB / 16)                 // 16-byte channel blocks a chunk (core matrices along K)
#define NT2 (KH * KW)                 // taps of one kernel plane (a chunk's)
#define RH (TH + KH - 1)              // the tile's input region, rows
#define RW (TW + KW - 1)              // and row length (the virtual positions' row pitch)
#define RV ((VE - 1 + RW + VE - 1) / VE) // 16-byte vectors covering a region row from any start
#define THREADS 256
#define WGM (BM / 64)                 // warpgroups along M
#define WGN (2 / WGM)                 // and along N
#define CW_N (NV / WGN)               // positions a warpgroup (the wgmma's N)
#define NPB (NV + (KH - 1) * RW + KW - 1) // Bs rows: the last tap's reach from the last position
#define RAWC0 (RH * RV * VE)
#define RAWC (RAWC0 + ((40 - RAWC0 % 32) % 32)) // raw channel stride: = 8 (mod 32) words apart
#define AS_BYTES (NT2 * BM * BCB)
#define RAW_BYTES (VECLOAD ? BC * RAWC * ESIZE : 0)
#define STAGE_BYTES (AS_BYTES + RAW_BYTES)
#define BS_BYTES (KB * NPB * 16)

#if BM != 64 && BM != 128
#error "conv_wgmma: BM is 64 or 128"
#endif
#if BCB != 32 && BCB != 64
#error "conv_wgmma: BCB is 32 or 64 bytes"
#endif
#if STAGES < 3
#error "conv_wgmma: STAGES >= 3 (chunk git + 1 is transposed while chunk git computes)"
#endif
#if NV % (8 * WGN) != 0 || NV < (TH - 1) * RW + TW
#error "conv_wgmma: NV covers the tile's positions in whole n8 blocks a warpgroup"
#endif
#include "conv_wgmma_ops.cuh"

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ uint32_t to_tf32(float f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}

// A no-swizzle (interleaved) shared-memory matrix descriptor: 8 x 16-byte core matrices, lbo bytes
// apart along K, sbo bytes apart along M / N (layout type 0 at bits 62-63). Adding (bytes >> 4) to
// it moves the start (14 bits: shared memory stays below 256 KiB, no carry).
__device__ __forceinline__ uint64_t cw_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
         ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32);
}

// Keeps the compiler from moving accesses of the accumulators across an in-flight wgmma.
template <int N> __device__ __forceinline__ void cw_fence(float *d) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

extern "C" __global__ void conv_wgmma_wprep(const ELEM *__restrict__ w, ELEM *__restrict__ wr, int G, int cout_g,
                                            int cin_g, int mblocks, int nch) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long total = (long long)G * mblocks * nch * KD * NT2 * BM * BC;
  if (i >= total) return;
  const int e = (int)(i % VE);
  long long r = i / VE;
  const int m = (int)(r % BM);
  r /= BM;
  const int kb = (int)(r % KB);
  r /= KB;
  const int tap = (int)(r % NT2);
  r /= NT2;
  const int a = (int)(r % KD);
  r /= KD;
  const int c = (int)(r % nch);
  r /= nch;
  const int mb = (int)(r % mblocks);
  const int g = (int)(r / mblocks);
  const int oc = mb * BM + m, ic = c * BC + kb * VE + e;
  ELEM v = (ELEM)0;
  if (oc < cout_g && ic < cin_g) v = w[(((long long)g * cout_g + oc) * cin_g + ic) * (KD * NT2) + a * NT2 + tap];
#if DT == 0
  v = __uint_as_float(to_tf32(v));
#endif
  wr[i] = v;
}

// Where a CTA works: batch b, output plane oz, tile origin (oy0, ox0), group g, channel block m0.
struct Tile {
  int b, oz, oy0, ox0, g, m0;
  int xa, lead; // the raw rows start at input column xa (a vector multiple); the region at xa + lead
};

// The tile of index `tile` (32-bit: a 64-bit division is a long subroutine); conv_igemm.cu's order.
__device__ __forceinline__ Tile tile_of(int tile, int ntx, int nty, int OD, int ntiles_xy, int mblocks, int PW) {
  Tile t;
  const int xy = tile % ntiles_xy; // tiles of one channel block are consecutive: the same weights
  const int mb = tile / ntiles_xy;
  int r = xy;
  const int tx = r % ntx;
  r /= ntx;
  const int ty = r % nty;
  r /= nty;
  t.oz = r % OD;
  t.b = r / OD;
  t.oy0 = ty * TH;
  t.ox0 = tx * TW;
  t.g = mb / mblocks;
  t.m0 = (mb % mblocks) * BM;
  const int ix0 = t.ox0 - PW;
  t.xa = ix0 >= 0 ? ix0 / VE * VE : -((-ix0 + VE - 1) / VE) * VE;
  t.lead = ix0 - t.xa;
  return t;
}

// The cp.async copies of chunk `it` of tile t (channel chunk it / KD, kernel plane it % KD) into
// stage buffer st: the weights' block (contiguous, As's layout already) and the raw region.
__device__ __forceinline__ void load_chunk(unsigned char *st, const ELEM *__restrict__ in, const ELEM *__restrict__ wr,
                                           const Tile &t, int it, int tid, int Cin, int cin_g, int D, int H, int W,
                                           int PD, int PH, int mblocks, int NIT) {
  {
    const ELEM *src = wr + ((long long)((t.g * mblocks + t.m0 / BM) * NIT + it)) * (NT2 * BM * BC);
    constexpr int N = NT2 * BM * KB, K = (N + THREADS - 1) / THREADS;
    const uint32_t d0 = smem_u32(st + tid * 16);
    const ELEM *s0 = src + tid * VE;
#pragma unroll 1 // (unrolled, ptxas keeps each copy's 64-bit source in registers: see the region's)
    for (int k = 0; k < K; ++k)
      if (N % THREADS == 0 || tid + k * THREADS < N) tb_cp16(d0 + k * THREADS * 16, s0 + k * THREADS * VE, true);
  }
#if VECLOAD
  {
    const int c0 = (it / KD) * BC, a = it % KD;
    unsigned char *raw = st + AS_BYTES;
    const int z = t.oz + a - PD;
    const int y0 = t.oy0 - PH;
    const int chans = z >= 0 && z < D ? cin_g - c0 : 0; // channels of this chunk that exist (none off the volume)
    const int cstride = D * H * W;                      // < 2^31: conv.lua checks
    const ELEM *base = in + (((long long)t.b * Cin + (long long)t.g * cin_g + c0) * D + z) * (long long)(H * W);
    constexpr int N = BC * RH * RV, K = (N + THREADS - 1) / THREADS;
    // not unrolled: unrolled, ptxas keeps every item's offsets in registers across the loop
    // (about 20 at the 3-D default), which the accumulators need (N 248: 124 a thread)
#pragma unroll 1
    for (int k = 0; k < K; ++k) {
      const unsigned i = tid + k * THREADS; // unsigned: divisions by constants without sign fix-ups
      if (N % THREADS != 0 && i >= N) break;
      const int v = (int)(i % RV), rr = (int)((i / RV) % RH), ch = (int)(i / (RV * RH));
      const int y = y0 + rr, x = t.xa + v * VE;
      const bool ok = ch < chans && (unsigned)y < (unsigned)H && (unsigned)x < (unsigned)W;
      tb_cp16(smem_u32(raw + (ch * RAWC + rr * RV * VE + v * VE) * ESIZE), ok ? base + ch * cstride + y * W + x : in, ok);
    }
  }
#endif
}

// The chunk's input region into Bs [KB][NPB][16 bytes], 32-bit words (two fp16 channels or one
// tf32): word w of position p at ((w / 4) NPB + p) 16 + (w % 4) 4. A warp's lanes: 8 positions x
// 4 words, so the LDS (raw rows 8 (mod 32) words apart) and the STS (128 contiguous bytes) are
// conflict-free. Items [kbeg, kend) of the thread's.
__device__ __forceinline__ void transpose_chunk(unsigned char *bs, const unsigned char *st, const ELEM *__restrict__ in,
                                                const Tile &t, int it, int tid, int Cin, int cin_g, int D, int H,
                                                int W, int PD, int PH) {
  constexpr int P = 4 / ESIZE;          // channels a word
  constexpr int NWD = BC / P;           // words a position (8 or 16)
  constexpr int NP = RH * RW;           // region positions
  constexpr int NWB = NWD / 4;          // 16-byte blocks a position
  constexpr int PSTEP = 8 * (THREADS / 32 / NWB); // positions between a thread's items
  constexpr int KT = (NP + PSTEP - 1) / PSTEP;
  static_assert((THREADS / 32) % NWB == 0, "conv_wgmma: the warps share a position's words evenly");
#if VECLOAD
  const ELEM *raw = (const ELEM *)(st + AS_BYTES);
#else
  const int c0 = (it / KD) * BC, a = it % KD;
  const int z = t.oz + a - PD;
  const bool zok = z >= 0 && z < D;
  const long long plane = (long long)H * W;
#endif
  const int warp = tid >> 5, w = (warp % NWB) * 4 + ((tid >> 3) & 3);
#if VECLOAD
  const ELEM *wsrc = raw + w * P * RAWC + t.lead;
#endif
  unsigned char *wdst = bs + (w >> 2) * (NPB * 16) + (w & 3) * 4;
  const int p0 = (warp / NWB) * 8 + (tid & 7);
#pragma unroll 1
  for (int k = 0; k < KT; ++k) {
    const int p = p0 + k * PSTEP;
    if (p >= NP) break;
    const int rr = RH == 1 ? 0 : (int)((unsigned)p / RW), x = RH == 1 ? p : (int)((unsigned)p % RW);
    uint32_t word;
#if VECLOAD
    const ELEM *src = wsrc + rr * RV * VE + x;
#if DT == 1
    word = (uint32_t)src[0] | ((uint32_t)src[RAWC] << 16);
#else
    word = to_tf32(src[0]);
#endif
#else
    const int y = t.oy0 - PH + rr, xx = t.xa + t.lead + x;
    const bool ok = zok && y >= 0 && y < H && xx >= 0 && xx < W;
    ELEM v[P];
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int cg = c0 + w * P + j;
      v[j] = (ELEM)0;
      if (ok && cg < cin_g)
        v[j] = in[(((long long)t.b * Cin + (long long)t.g * cin_g + cg) * D + z) * plane + (long long)y * W + xx];
    }
#if DT == 1
    word = (uint32_t)v[0] | ((uint32_t)v[1] << 16);
#else
    word = to_tf32(v[0]);
#endif
#endif
    *(uint32_t *)(wdst + p * 16) = word;
  }
}

// One output (virtual position n of the tile, channel row m) or a pair (n, n + 1) into out.
__device__ __forceinline__ void store_pair(ELEM *__restrict__ out, const Tile &t, long long obase, long long mstride,
                                           int m, int n, float v0, float v1, int OH, int OW) {
  const int y0 = n / RW, x0 = n % RW, y1 = (n + 1) / RW, x1 = (n + 1) % RW;
  const bool k0 = y0 < TH && x0 < TW && t.oy0 + y0 < OH && t.ox0 + x0 < OW;
  const bool k1 = y1 < TH && x1 < TW && t.oy0 + y1 < OH && t.ox0 + x1 < OW;
  ELEM *d0 = out + obase + m * mstride + (long long)(t.oy0 + y0) * OW + t.ox0 + x0;
  const bool pair = k0 && k1 && y0 == y1 && ((t.ox0 + x0) & 1) == 0 && (OW & 1) == 0;
#if DT == 1
  const uint32_t pk = tb_pack_f16x2(v0, v1);
  if (pair) {
    *(uint32_t *)d0 = pk;
    return;
  }
  if (k0) *d0 = (ELEM)(pk & 0xffff);
  if (k1) out[obase + m * mstride + (long long)(t.oy0 + y1) * OW + t.ox0 + x1] = (ELEM)(pk >> 16);
#else
  if (pair) {
    *(float2 *)d0 = make_float2(v0, v1);
    return;
  }
  if (k0) *d0 = v0;
  if (k1) out[obase + m * mstride + (long long)(t.oy0 + y1) * OW + t.ox0 + x1] = v1;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
conv_wgmma(const ELEM *__restrict__ in, const ELEM *__restrict__ wr, ELEM *__restrict__ out, int B, int Cin, int Cout,
           int G, int D, int H, int W, int OD, int OH, int OW, int PD, int PH, int PW, int ocp, int icp, int ntx,
           int nty, int ntiles) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char *bs = smem + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wg = warp >> 2, wq = warp & 3, wgm = wg % WGM, wgn = wg / WGM;
  const int cin_g = Cin / G, cout_g = Cout / G;
  const int mblocks = ocp / BM;
  const int ntiles_xy = B * OD * nty * ntx;
  const int NIT = (icp / BC) * KD;
  const int mine = (int)blockIdx.x < ntiles ? (ntiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  const int total = mine * NIT;

  float acc[CW_N / 2];
#pragma unroll
  for (int i = 0; i < CW_N / 2; ++i) acc[i] = 0.0f;

  // the loader's cursor: the next chunk to load (its tile, its chunk in the tile, its stage)
  int ld_tile = blockIdx.x, ld_it = 0, ld_slot = 0, ld_left = total;
  Tile lt = tile_of(ld_tile, ntx, nty, OD, ntiles_xy, mblocks, PW);
  auto load_next = [&]() {
    if (ld_left > 0) {
      load_chunk(smem + ld_slot * STAGE_BYTES, in, wr, lt, ld_it, tid, Cin, cin_g, D, H, W, PD, PH, mblocks, NIT);
      --ld_left;
      if (++ld_slot == STAGES) ld_slot = 0;
      if (++ld_it == NIT) {
        ld_it = 0;
        ld_tile += gridDim.x;
        if (ld_left > 0) lt = tile_of(ld_tile, ntx, nty, OD, ntiles_xy, mblocks, PW);
      }
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
#pragma unroll 1
  for (int s = 0; s < STAGES - 1; ++s) load_next();

  int tile = blockIdx.x, it = 0, slot = 0; // the chunk computed now
  Tile t = tile_of(tile, ntx, nty, OD, ntiles_xy, mblocks, PW);
  int tr_it = 0, tr_slot = 0, tr_tile = blockIdx.x; // the chunk transposed next
  Tile tt = t;
  auto tr_advance = [&]() {
    if (++tr_slot == STAGES) tr_slot = 0;
    if (++tr_it == NIT) {
      tr_it = 0;
      tr_tile += gridDim.x;
      if (tr_tile < ntiles) tt = tile_of(tr_tile, ntx, nty, OD, ntiles_xy, mblocks, PW);
    }
  };
  asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
  __syncthreads();
  if (total > 0) {
    transpose_chunk(bs, smem, in, tt, 0, tid, Cin, cin_g, D, H, W, PD, PH);
    tr_advance();
  }
  // descriptors: A (this warpgroup's 64 rows of As) and B (its N run of Bs), at stage 0 / Bs 0
  const uint64_t da0 = cw_desc(smem_u32(smem) + wgm * 64 * 16, BM * 16, 128);
  const uint64_t db0 = cw_desc(smem_u32(bs) + wgn * CW_N * 16, NPB * 16, 128);
  const long long mstride = (long long)OD * OH * OW;
#pragma unroll 1
  for (int git = 0; git < total; ++git) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 3)); // chunks git and git + 1 landed
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads(); // chunk git's As and Bs, chunk git + 1's raw region: complete for everyone
    const uint64_t da = da0 + (uint64_t)((slot * STAGE_BYTES) >> 4);
    const uint64_t db = db0 + (uint64_t)(((git & 1) * BS_BYTES) >> 4);
    if (++slot == STAGES) slot = 0;
    // (no operand fence here: chunk git - 1's wgmmas may still be writing acc, and the wgmmas of
    // one warpgroup chain their accumulators in order; an asm touching acc would make ptxas wait)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    // a kernel row's taps unrolled, the rows not: all the taps' descriptors at once (9 or 25 64-bit
    // values) took the registers the accumulators need (ptxas spilled at N 248)
#pragma unroll 1
    for (int dy = 0; dy < KH; ++dy) {
#pragma unroll
      for (int dx = 0; dx < KW; ++dx) {
        const int tap = dy * KW + dx, off = dy * RW + dx; // the tap's shift, in Bs rows
#pragma unroll
        for (int ks = 0; ks < KB / 2; ++ks)
          cw_wgmma(acc, da + (uint64_t)(((tap * KB + 2 * ks) * BM * 16) >> 4),
                   db + (uint64_t)(((2 * ks * NPB + off) * 16) >> 4));
      }
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); // this warpgroup's chunk git - 1
    __syncthreads(); // every warpgroup is done with chunk git - 1's stage and Bs
    load_next();     // chunk git + STAGES - 1, into the stage chunk git - 1 used
    if (git + 1 < total) {
      transpose_chunk(bs + ((git + 1) & 1) * BS_BYTES, smem + tr_slot * STAGE_BYTES, in, tt, tr_it, tid, Cin, cin_g,
                      D, H, W, PD, PH);
      tr_advance();
    }
    if (++it == NIT) { // the tile's last chunk: its accumulators go out (the next chunk is ready)
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      cw_fence<CW_N / 2>(acc);
      // acc[4j + r]: channel row wgm 64 + 16 wq + lane / 4 + 8 (r / 2), virtual position
      // wgn CW_N + 8j + 2 (lane % 4) + r % 2
      const long long obase = ((long long)t.b * Cout + (long long)t.g * cout_g + t.m0) * mstride +
                              (long long)t.oz * OH * OW;
#pragma unroll
      for (int j = 0; j < CW_N / 8; ++j) {
        const int n = wgn * CW_N + j * 8 + (lane & 3) * 2;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int m = wgm * 64 + wq * 16 + (lane >> 2) + h * 8;
          if (t.m0 + m < cout_g) store_pair(out, t, obase, mstride, m, n, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], OH, OW);
        }
      }
#pragma unroll
      for (int i = 0; i < CW_N / 2; ++i) acc[i] = 0.0f;
      it = 0;
      tile += gridDim.x;
      if (git + 1 < total) t = tile_of(tile, ntx, nty, OD, ntiles_xy, mblocks, PW);
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
#else
  // Built for an architecture without wgmma (not sm_90a): fail loudly rather than compute nothing.
  __trap();
#endif
}
