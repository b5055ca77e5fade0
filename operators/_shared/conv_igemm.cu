// conv_igemm.cu: the convolution operators' `cuda` kernels (1d_conv, 2d_conv, 3d_conv; conv.lua,
// docs/CONV.md): a grouped cross-correlation as an implicit GEMM on tensor cores,
//   out[oc, n] = sum_{tap, ic} Wr[tap][oc][ic] * X[ic, pos(n) + tap]      (per batch entry, group)
// with M = output channels (BM a CTA), N = output positions (a TH x TW tile of one output plane z,
// BN = TH * TW), K = the group's input channels x the kernel's taps. Every rank is 3-D here: 1-D is
// D = H = 1 with a 1 x 1 x KW kernel (TH = 1), 2-D D = 1 with 1 x KH x KW.
//
// Why this shape: the input is NC(D)HW, positions contiguous. A tap shifts the positions by one
// element, which no 16-byte-aligned tensor-core load (ldmatrix) can follow in a position-major
// tile. So the input goes into shared memory position-major in channels ([pos][channel]: each
// region position a row of BC channels), where a tap's shift is a different row: ldmatrix takes
// one row address per lane, and the tile's every tap reads the same rows (halo reuse: the input is
// loaded from global memory once per K chunk, every tap of a kernel plane works on it).
//
// A K chunk (one pipeline stage) is BC input channels x one kernel plane a (KH x KW taps):
//   - the weights for the plane's taps, BM rows of BC channels a tap, one contiguous block of Wr
//     (conv_wprep): cp.async 16-byte copies into As (rows of BC + 16 bytes: ldmatrix phases on
//     distinct banks);
//   - the input region the tile needs from plane z = oz * S + a - PD: RH x RW positions
//     (RH = (TH - 1) S + KH, RW = (TW - 1) S + KW) of BC channels, as 16-byte aligned row pieces
//     (RV vectors a region row, zero-filled outside the input: the padding) by cp.async into a raw
//     buffer [channel][row][x] (VECLOAD, where W is a multiple of a vector), STAGES chunks in flight;
//   - before the chunk's MMAs the raw region is transposed into Bs [pos][channel] (two channels a
//     32-bit word for fp16, one tf32-rounded float for fp32), the shift to the region's start
//     applied at the store: one LDS and one STS a word, conflict-free (8 positions x 4 words a warp).
// Without VECLOAD (W not a multiple of a vector) the transpose reads the input directly (scalar,
// masked): the general path, slower.
// MMAs: fp16 mma.sync m16n8k16 (fp32 accumulators), fp32 as TF32 m16n8k8 (operands rounded to
// tf32 with cvt.rna; allowed because the fp32 reference, cuDNN, may itself run in TF32 and the
// tolerance is atol 1e-1 / 5e-1, rtol 1e-2). Both read 32 bytes of K a step, fragments by
// ldmatrix.x4 (for tf32, b16 pairs are the 32-bit elements: the same lane layout). Warps: WARPS_M
// x WARPS_N, a warp tile of 64 (M) x NF * 8 (N).
// Persistent CTAs: each takes tiles blockIdx.x, + gridDim.x, ... (a channel block's tiles are
// consecutive, so CTAs running together share weights in L2), and the cp.async pipeline runs
// across a CTA's tiles: the next tile's first chunks are in flight during this one's last chunks
// and its epilogue (one CTA an SM at the large tiles: nothing else would hide them).
// Epilogue: straight from the accumulator fragments (the stage buffers stay in flight): a pair of
// outputs a lane, one 4-byte (fp16) or 8-byte (fp32) store where OW is even, so a warp's store
// covers 8 output rows x 16 / 32 contiguous bytes (L2 merges the sectors), masked at the edges.
//
// Defines: DT (1 fp16, 0 fp32), BM (64, 128), WARPS (4, 8), TH, TW, KD, KH, KW, S, BCB (bytes of K
// a chunk: 32, 64), STAGES (>= 2), VECLOAD (0/1).
// Kernels:
//   conv_wprep(w, wr, G, cout_g, cin_g, mblocks, nch): the weights (Cout, Cin_g, taps) into
//     Wr[G][mblocks][nch][KD][NT2][BM][BC] (a chunk's block contiguous: one cp.async stream),
//     zero-padded to whole BM / BC blocks, fp32 rounded to tf32.
//   conv_igemm(in, wr, out, ..., ntiles): grid min(ntiles, resident CTAs), ntiles = (G x ocp / BM)
//     x batch x OD x (OH / TH) x (OW / TW) rounded up; block WARPS * 32; dynamic shared memory
//     STAGES x (As + raw) + Bs (conv.lua computes the same).
#include "tb_mma16.cuh"

#ifndef DT
#define DT 1
#endif
#if DT == 1
typedef uint16_t ELEM;
#define ESIZE 2
#else
typedef float ELEM;
#define ESIZE 4
#endif
#define VE (16 / ESIZE)               // elements a 16-byte vector
#define BC (BCB / ESIZE)              // input channels a K chunk
#define NT2 (KH * KW)                 // taps of one kernel plane (a chunk's)
#define RH ((TH - 1) * S + KH)        // the tile's input region, rows
#define RW ((TW - 1) * S + KW)        // and row length
#define RV ((VE - 1 + RW + VE - 1) / VE) // 16-byte vectors covering a region row from any start
#define BN (TH * TW)
#define RSB (BCB + 16)                // bytes a row of As and Bs
#define WARPS_M (BM / 64)
#define WARPS_N (WARPS / WARPS_M)
#define NF (BN / (8 * WARPS_N))       // n8 fragments a warp
#define THREADS (WARPS * 32)
// raw channel stride in elements: a whole number of vectors, = 8 (mod 32) so that the
// transpose's four channel words a warp fall on distinct banks
#define RAWC0 (RH * RV * VE)
#define RAWC (RAWC0 + ((40 - RAWC0 % 32) % 32))
#define AS_BYTES (NT2 * BM * RSB)
#define RAW_BYTES (VECLOAD ? BC * RAWC * ESIZE : 0)
#define STAGE_BYTES (AS_BYTES + RAW_BYTES)
#define BS_BYTES (RH * RW * RSB)
#ifndef OVERLAP
#define OVERLAP 0
#endif
#define TP_STEP (8 * (WARPS / (BCB / 16)))      // the transpose's positions between a thread's items
#define KT ((RH * RW + TP_STEP - 1) / TP_STEP)  // its items a thread
#define KPART ((KT + NT2 - 1) / NT2)             // OVERLAP: its items after each tap's MMAs

#if BM % 64 != 0 || WARPS % WARPS_M != 0 || NF < 2 || NF % 2 != 0 || BN % (16 * WARPS_N) != 0
#error "conv_igemm: BM must be 64 or 128 and BN a multiple of 16 x WARPS_N"
#endif
#if BCB != 32 && BCB != 64
#error "conv_igemm: BCB is 32 or 64 bytes"
#endif

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ uint32_t to_tf32(float f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}

extern "C" __global__ void conv_wprep(const ELEM *__restrict__ w, ELEM *__restrict__ wr, int G, int cout_g, int cin_g,
                                      int mblocks, int nch) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long total = (long long)G * mblocks * nch * KD * NT2 * BM * BC;
  if (i >= total) return;
  const int ch = (int)(i % BC);
  long long r = i / BC;
  const int m = (int)(r % BM);
  r /= BM;
  const int tap = (int)(r % NT2);
  r /= NT2;
  const int a = (int)(r % KD);
  r /= KD;
  const int c = (int)(r % nch);
  r /= nch;
  const int mb = (int)(r % mblocks);
  const int g = (int)(r / mblocks);
  const int oc = mb * BM + m, ic = c * BC + ch;
  ELEM v = (ELEM)0;
  if (oc < cout_g && ic < cin_g) v = w[(((long long)g * cout_g + oc) * cin_g + ic) * (KD * NT2) + a * NT2 + tap];
#if DT == 0
  v = __uint_as_float(to_tf32(v));
#endif
  wr[i] = v;
}

__device__ __forceinline__ void mma_step(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
#if DT == 1
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ void ldsm4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// Where a CTA works: batch b, output plane oz, tile origin (oy0, ox0), group g, channel block m0.
struct Tile {
  int b, oz, oy0, ox0, g, m0;
  int xa, lead; // the raw rows start at input column xa (a vector multiple); the region at xa + lead
};

// Issues the cp.async copies of chunk `it` of tile t (channels chunk it / KD, kernel plane it % KD)
// into stage buffer `st`. Index arithmetic is 32-bit from a 64-bit base: it is issued every chunk.
__device__ __forceinline__ void load_chunk(unsigned char *st, const ELEM *__restrict__ in, const ELEM *__restrict__ wr,
                                           const Tile &t, int it, int tid, int Cin, int cin_g, int D, int H, int W,
                                           int PD, int PH, int mblocks, int NIT) {
  // weights: the chunk's block of Wr, NT2 * BM rows of BCB bytes, contiguous
  {
    const ELEM *src = wr + ((long long)((t.g * mblocks + t.m0 / BM) * NIT + it)) * (NT2 * BM * BC);
    constexpr int CH = BCB / 16, N = NT2 * BM * CH, K = (N + THREADS - 1) / THREADS;
    static_assert(THREADS % CH == 0, "conv_igemm: a thread keeps its 16-byte column of the weight rows");
    // trip count and offsets known at compile time: one LDGSTS with immediate offsets an item
    const uint32_t d0 = smem_u32(st + (tid / CH) * RSB + (tid % CH) * 16);
    const ELEM *s0 = src + tid * VE;
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (N % THREADS == 0 || tid + k * THREADS < N) tb_cp16(d0 + k * (THREADS / CH) * RSB, s0 + k * THREADS * VE, true);
  }
#if VECLOAD
  // the input region: BC channels x RH rows x RV vectors, zeros outside
  {
    const int c0 = (it / KD) * BC, a = it % KD;
    unsigned char *raw = st + AS_BYTES;
    const int z = t.oz * S + a - PD;
    const int y0 = t.oy0 * S - PH;
    const int chans = z >= 0 && z < D ? cin_g - c0 : 0; // channels of this chunk that exist (none off the volume)
    const int cstride = D * H * W;                      // < 2^31: conv.lua checks
    const ELEM *base = in + (((long long)t.b * Cin + (long long)t.g * cin_g + c0) * D + z) * (long long)(H * W);
    constexpr int N = BC * RH * RV, K = (N + THREADS - 1) / THREADS;
#pragma unroll
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

// The chunk's input region into Bs [RH * RW][BC] (row RSB bytes), 32-bit words: two channels
// (fp16) or one tf32 (fp32). A warp's lanes: 8 positions x 4 words, so that LDS (raw rows 8
// (mod 32) words apart) and STS (Bs rows 12 or 20 words apart) are both conflict-free.
__device__ __forceinline__ void transpose_chunk(unsigned char *bs, const unsigned char *st, const ELEM *__restrict__ in,
                                                const Tile &t, int it, int tid, int Cin, int cin_g, int D, int H,
                                                int W, int PD, int PH, int kbeg, int kend) {
  constexpr int P = 4 / ESIZE;          // channels a word
  constexpr int NW = BC / P;            // words a position (8 or 16)
  constexpr int NP = RH * RW;           // region positions
  constexpr int NWB = NW / 4;           // blocks of 4 words (a warp: 8 positions x 4 words)
  constexpr int PSTEP = 8 * (WARPS / NWB); // positions between a thread's items
  static_assert(WARPS % NWB == 0, "conv_igemm: the warps share a position's words evenly");
  // items [kbeg, kend) of the KT a thread has (OVERLAP: a share after each tap's MMAs)
#if VECLOAD
  const ELEM *raw = (const ELEM *)(st + AS_BYTES);
#else
  const int c0 = (it / KD) * BC, a = it % KD;
  const int z = t.oz * S + a - PD;
  const bool zok = z >= 0 && z < D;
  const long long plane = (long long)H * W;
#endif
  // a thread keeps one word (its channels) and walks the positions: no index arithmetic but the
  // region row (a constant division, none in 1-D)
  const int warp = tid >> 5, w = (warp % NWB) * 4 + ((tid >> 3) & 3);
#if VECLOAD
  const ELEM *wsrc = raw + w * P * RAWC + t.lead;
#endif
  unsigned char *wdst = bs + w * 4;
  const int p0 = (warp / NWB) * 8 + (tid & 7);
#pragma unroll 4
  for (int k = kbeg; k < kend; ++k) {
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
    const int y = t.oy0 * S - PH + rr, xx = t.xa + t.lead + x;
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
    *(uint32_t *)(wdst + p * RSB) = word;
  }
}

// The tile (batch, plane, origin, group, channel block) of tile index `tile` (32-bit: a 64-bit
// division is a subroutine of about a hundred instructions).
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
  const int ix0 = t.ox0 * S - PW;
  t.xa = ix0 >= 0 ? ix0 / VE * VE : -((-ix0 + VE - 1) / VE) * VE;
  t.lead = ix0 - t.xa;
  return t;
}

// Persistent: CTA c works on tiles c, c + gridDim.x, ...; the pipeline runs across its tiles (the
// next tile's first chunks load during this one's last), and each tile's accumulators go straight
// from registers to global memory (no shared memory: the stages stay in flight).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
conv_igemm(const ELEM *__restrict__ in, const ELEM *__restrict__ wr, ELEM *__restrict__ out, int B, int Cin, int Cout,
           int G, int D, int H, int W, int OD, int OH, int OW, int PD, int PH, int PW, int ocp, int icp, int ntx,
           int nty, int ntiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char *bs = smem + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;
  const int cin_g = Cin / G, cout_g = Cout / G;
  const int mblocks = ocp / BM;
  const int ntiles_xy = B * OD * nty * ntx;
  const int NIT = (icp / BC) * KD;
  // this CTA's tiles and K chunks in all (the plan keeps tiles x chunks within 32 bits)
  const int mine = (int)blockIdx.x < ntiles ? (ntiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  const int total = mine * NIT;

  // per lane: the Bs row of each n16 pair's position (ldmatrix row addresses), the As row offset
  const int mi = lane >> 3, r8 = lane & 7;
  int brow[NF / 2];
#pragma unroll
  for (int j = 0; j < NF / 2; ++j) {
    const int n = wn * NF * 8 + j * 16 + (mi >> 1) * 8 + r8;
    brow[j] = (n / TW) * S * RW + (n % TW) * S;
  }
  const int arow = wm * 64 + (mi & 1) * 8 + r8, akb = (mi >> 1) * 16, bkb = (mi & 1) * 16;

  float acc[4][NF][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < NF; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

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
#if OVERLAP
  // Bs twice: chunk git + 1 is transposed, in shares after each tap's MMAs, while chunk git's
  // MMAs run (its raw region landed a chunk earlier: STAGES >= 3), so the tensor cores are not
  // idle during the transpose; one barrier a chunk.
  static_assert(STAGES >= 3, "conv_igemm: OVERLAP transposes the next chunk, which must have landed");
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
    transpose_chunk(bs, smem, in, tt, 0, tid, Cin, cin_g, D, H, W, PD, PH, 0, KT);
    tr_advance();
  }
  for (int git = 0; git < total; ++git) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 3));
    __syncthreads(); // chunk git's Bs and chunk git + 1's region complete; chunk git - 1 done with
    const bool next = git + 1 < total;
    const unsigned char *st = smem + slot * STAGE_BYTES;
    if (++slot == STAGES) slot = 0;
    const unsigned char *stn = smem + tr_slot * STAGE_BYTES;
    unsigned char *bsn = bs + ((git + 1) & 1) * BS_BYTES;
    const uint32_t bs_u = smem_u32(bs + (git & 1) * BS_BYTES);
#else
  for (int git = 0; git < total; ++git) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
    __syncthreads(); // chunk git landed for every thread; every warp is done with chunk git - 1
    load_next();     // chunk git + STAGES - 1, into the stage chunk git - 1 used
    const unsigned char *st = smem + slot * STAGE_BYTES;
    if (++slot == STAGES) slot = 0;
    transpose_chunk(bs, st, in, t, it, tid, Cin, cin_g, D, H, W, PD, PH, 0, KT);
    __syncthreads();
    const uint32_t bs_u = smem_u32(bs);
#endif
    const uint32_t as_u = smem_u32(st);
#pragma unroll 1
    for (int tap = 0; tap < NT2; ++tap) {
      const int off = (tap / KW) * RW + tap % KW;
#pragma unroll
      for (int ks = 0; ks < BCB / 32; ++ks) {
        uint32_t af[4][4], bf[NF][2];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          ldsm4(af[i][0], af[i][1], af[i][2], af[i][3],
                as_u + (tap * BM + arow + i * 16) * RSB + ks * 32 + akb);
#pragma unroll
        for (int j = 0; j < NF / 2; ++j)
          ldsm4(bf[2 * j][0], bf[2 * j][1], bf[2 * j + 1][0], bf[2 * j + 1][1],
                bs_u + (brow[j] + off) * RSB + ks * 32 + bkb);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < NF; ++j) mma_step(acc[i][j], af[i], bf[j][0], bf[j][1]);
      }
#if OVERLAP
      if (tap == 0) load_next(); // chunk git + STAGES - 1, into the stage chunk git - 1 used
      if (next) {
        const int kb = tap * KPART, ke = kb + KPART < KT ? kb + KPART : KT;
        if (kb < ke) transpose_chunk(bsn, stn, in, tt, tr_it, tid, Cin, cin_g, D, H, W, PD, PH, kb, ke);
      }
#endif
    }
#if OVERLAP
    if (next) tr_advance();
#endif
    if (++it == NIT) {
      // the tile's outputs, from the fragments: acc[i][j][0..1] at row wm*64 + 16i + lane/4,
      // columns wn*NF*8 + 8j + 2(lane%4) + {0,1}; [2..3] at row + 8. A pair is one 4-byte (fp16) /
      // 8-byte (fp32) store where both are inside the output row and it is aligned (OW even); a
      // warp's store covers 8 rows x 16 (32) contiguous bytes.
      const long long oplane = (long long)OH * OW;
      const long long obase = ((long long)t.b * Cout + (long long)t.g * cout_g + t.m0) * OD * oplane +
                              (long long)t.oz * oplane;
#pragma unroll
      for (int j = 0; j < NF; ++j) {
        const int n = wn * NF * 8 + j * 8 + (lane & 3) * 2;
        const int oy = t.oy0 + n / TW, ox = t.ox0 + n % TW;
        if (oy >= OH || ox >= OW) continue;
        const bool pair = ox + 1 < OW && (OW & 1) == 0;
        const long long pbase = obase + (long long)oy * OW + ox;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int m = wm * 64 + i * 16 + (lane >> 2) + h * 8;
            if (t.m0 + m >= cout_g) continue;
            ELEM *dst = out + pbase + (long long)m * OD * oplane;
            const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
#if DT == 1
            const uint32_t pk = tb_pack_f16x2(v0, v1);
            if (pair) *(uint32_t *)dst = pk;
            else {
              dst[0] = (ELEM)(pk & 0xffff);
              if (ox + 1 < OW) dst[1] = (ELEM)(pk >> 16); // n + 1 is the next position of the row (TW even)
            }
#else
            if (pair) *(float2 *)dst = make_float2(v0, v1);
            else {
              dst[0] = v0;
              if (ox + 1 < OW) dst[1] = v1;
            }
#endif
          }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < NF; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
      it = 0;
      tile += gridDim.x;
      if (git + 1 < total) t = tile_of(tile, ntx, nty, OD, ntiles_xy, mblocks, PW);
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
}
