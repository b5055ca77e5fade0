// gaussian_blur_mma.cu: y = x cross-correlated with w (KR x KC), "same" size, zero padding, on
// the tensor cores: fp16 by mma.sync m16n8k16 (products exact, fp32 accumulators), fp32 by TF32
// m16n8k8 (both operands rounded to TF32 with cvt.rna, fp32 accumulators: the rounding PyTorch's
// fp32 F.conv2d takes under its default cudnn.allow_tf32, as the convolutions' kernels,
// docs/CONV.md), the sums rounded once to DTYPE. docs/STENCILS.md has the why and the evidence.
//
// One kernel row i is a 1-D correlation of each input row with w[i, :], a product with a banded
// (Toeplitz) matrix. For 8 output columns o0 .. o0 + 7 with o0 = c - 4 (c a multiple of 8), the
// input columns they need (o0 - HL .. o0 + 7 + HR, HL and HR <= 4) lie in the aligned 16-column
// window c - 8 .. c + 7: so D (16 output rows x 8 output columns) += A (16 input rows x those 16
// columns) . T_i (16 x 8, T_i[k][n] = w[i][k - n - 4 + HL] inside the band, else 0). T_i is the
// same for every block of columns: each thread holds its fragments of the KR matrices in
// registers for the whole kernel. A is the tile of input rows shifted by i in shared memory;
// windows are 8-column chunks, and block b uses chunks b and b + 1, so each chunk is loaded (by
// ldmatrix) once per kernel row and serves two blocks.
//
// A block of BX threads computes TR = 16 BX / 32 output rows (16 a warp) x W = 8 NB output
// columns, C0 .. C0 + W - 1: it loads input rows R0 - KR / 2 .. R0 + TR + KR - KR / 2 - 2 and
// columns C0 - 8 .. C0 + W + 7 (cp.async, 16 bytes, zero outside the image) into shared memory,
// then each warp runs NB + 1 column blocks at C0 - 4 + 8 b (the first and last straddle the tile's
// edge: their outer halves are dropped), KR kernel rows each. The accumulators go through
// shared memory (the input tile's space, after a barrier) so that the stores are 16-byte and
// coalesced. cols must be a multiple of 16 bytes of DTYPE (every row 16-byte aligned, each
// 16-byte chunk of a row wholly inside or outside the image); the plan sends other shapes to
// gaussian_blur.cu.
// Defines: DTYPE (__half or float), KR, KC (KC / 2 <= 4 and KC - 1 - KC / 2 <= 4), BX (threads,
// a multiple of 32), NB (column blocks of 8 a tile), PIPE (0 if absent; 1: with STAGES, the
// pipelined kernel at the end of this file instead). Kernel: gaussian_blur_mma (PIPE = 0) or
// gaussian_blur_pipe (PIPE = 1).
#include "tb_common.cuh"

#ifndef PIPE
#define PIPE 0 // 1: gaussian_blur_pipe (below), STAGES defined too
#endif

constexpr bool F16 = sizeof(DTYPE) == 2;
constexpr int ES = (int)sizeof(DTYPE);
constexpr int EPC = 16 / ES;                 // elements a 16-byte chunk
constexpr int VL = KR / 2;                   // input rows above an output row
constexpr int HL = KC / 2;                   // input columns left of an output column
constexpr int HR = KC - 1 - KC / 2;          // and right
constexpr int W = 8 * NB;                    // output columns a tile
constexpr int TR = 16 * (BX / 32);           // output rows a tile
constexpr int IR = TR + KR - 1;              // input rows a tile
constexpr int IC = W + 16;                   // input columns a tile: C0 - 8 .. C0 + W + 7
constexpr int IP16 = (IC * ES / 16) | 1;     // input row pitch in 16-byte units, odd: each ldmatrix
constexpr int IP = IP16 * EPC;               // phase (8 rows of 16 bytes) hits 32 distinct banks
constexpr int OP = W + 8;                    // output row pitch (elements): the fragments' stores
                                             // (8 rows x 4 lanes) hit distinct banks
constexpr int IN_BYTES = IR * IP * ES, OUT_BYTES = TR * OP * ES;
constexpr int SMEM = IN_BYTES > OUT_BYTES ? IN_BYTES : OUT_BYTES;
static_assert(HL <= 4 && HR <= 4, "the 16-column window holds at most 4 columns either side");
static_assert(BX % 32 == 0, "whole warps");

TB_DEVICE uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared, asynchronously; ok false writes zeros (src is not read)
TB_DEVICE void cp16(uint32_t dst, const void *src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
}

// The band matrix's value T_i[k][n] as the operand's bits: w[i][j], j = k - n - 4 + HL, or 0.
TB_DEVICE float tap(const DTYPE *wk, int i, int k, int n) {
  const int j = k - n - 4 + HL;
  return j >= 0 && j < KC ? tb_to_float(wk[i * KC + j]) : 0.0f;
}
TB_DEVICE uint32_t pack_f16x2(float lo, float hi) { // lower half = lo, each rounded to nearest
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
TB_DEVICE uint32_t to_tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

// m16n8k16 (fp16) or m16n8k8 (TF32) with fp32 accumulators: c += a . b
TB_DEVICE void mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  if constexpr (F16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One chunk's A fragment part, by ldmatrix from this lane's row address p (the chunk's first
// column): fp16 (x2): rows 0-7 and 8-15 of 8 halves, a[0] = (row g, columns 2t, 2t + 1), a[1] =
// (row g + 8, the same); fp32 (x4, 32-bit elements as b16 pairs, rounded to TF32): a[0] = (g, t),
// a[1] = (g + 8, t), a[2] = (g, t + 4), a[3] = (g + 8, t + 4) (g = lane / 4, t = lane % 4).
TB_DEVICE void ldsm(uint32_t *a, uint32_t p) {
  if constexpr (F16) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(a[0]), "=r"(a[1]) : "r"(p));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(p));
#pragma unroll
    for (int q = 0; q < 4; ++q) a[q] = to_tf32(__uint_as_float(a[q]));
  }
}

#if !PIPE
static_assert(SMEM <= 48 * 1024, "static shared memory");

extern "C" __global__ void __launch_bounds__(BX)
    gaussian_blur_mma(const DTYPE *__restrict__ x, const DTYPE *__restrict__ wk, DTYPE *__restrict__ y, int rows,
                      int cols) {
  __shared__ __align__(128) unsigned char smem[SMEM];
  DTYPE *tile = reinterpret_cast<DTYPE *>(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int C0 = blockIdx.x * W, R0 = blockIdx.y * TR;

  // The input tile: IR rows x IC / EPC chunks, issued by all threads, zero outside the image.
  {
    constexpr int CPR = IC / EPC, N = IR * CPR;
    const uint32_t base = smem_addr(tile);
#pragma unroll 4
    for (int idx = tid; idx < N; idx += BX) {
      const int r = idx / CPR, ch = idx - r * CPR;
      const int gr = R0 - VL + r, gc = C0 - 8 + ch * EPC;
      const bool ok = gr >= 0 && gr < rows && gc >= 0 && gc < cols;
      cp16(base + (uint32_t)(r * IP + ch * EPC) * ES, ok ? x + (long long)gr * cols + gc : x, ok);
    }
    asm volatile("cp.async.commit_group;\n" ::);
  }

  // This thread's fragments of the KR band matrices (loaded while the tile is in flight):
  // fp16 b0 = (k 2t, 2t + 1; n g), b1 = (k 2t + 8, 2t + 9; n g); TF32 the low window (k < 8):
  // b0 = (k t, n g), b1 = (k t + 4, n g), and the high one (k + 8).
  uint32_t bf[KR][F16 ? 2 : 4];
#pragma unroll
  for (int i = 0; i < KR; ++i) {
    if constexpr (F16) {
      bf[i][0] = pack_f16x2(tap(wk, i, 2 * t, g), tap(wk, i, 2 * t + 1, g));
      bf[i][1] = pack_f16x2(tap(wk, i, 2 * t + 8, g), tap(wk, i, 2 * t + 9, g));
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) bf[i][q] = to_tf32(tap(wk, i, t + 4 * q, g));
    }
  }

  float acc[NB + 1][4];
#pragma unroll
  for (int b = 0; b <= NB; ++b)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[b][q] = 0.0f;

  asm volatile("cp.async.wait_all;\n" ::);
  __syncthreads();

  // This lane's ldmatrix row address for kernel row 0, chunk 0: fp16 (x2): lanes 0-15 give rows
  // 0-15 (lanes 16-31 the same, unused); fp32 (x4): lanes 8 q .. 8 q + 7 give rows (q & 1) 8 ..
  // + 7 at column 4 (q >> 1).
  const int lrow = F16 ? (lane & 15) : (lane & 7) + 8 * ((lane >> 3) & 1);
  const int lcol = F16 ? 0 : 4 * (lane >> 4);
  const uint32_t a0 = smem_addr(tile) + (uint32_t)((16 * warp + lrow) * IP + lcol) * ES;
  constexpr int CHUNK_BYTES = 8 * ES;        // an 8-column chunk
#pragma unroll
  for (int i = 0; i < KR; ++i) {
    const uint32_t ai = a0 + (uint32_t)(i * IP * ES);
    uint32_t lo[4], hi[4];
    ldsm(lo, ai);
#pragma unroll
    for (int b = 0; b <= NB; ++b) {
      ldsm(hi, ai + (uint32_t)((b + 1) * CHUNK_BYTES));
      if constexpr (F16) {
        const uint32_t a[4] = { lo[0], lo[1], hi[0], hi[1] };
        mma(acc[b], a, bf[i][0], bf[i][1]);
        lo[0] = hi[0];
        lo[1] = hi[1];
      } else {
        mma(acc[b], lo, bf[i][0], bf[i][1]);
        mma(acc[b], hi, bf[i][2], bf[i][3]);
#pragma unroll
        for (int q = 0; q < 4; ++q) lo[q] = hi[q];
      }
    }
  }
  __syncthreads(); // every warp is done with the input tile: its space takes the outputs

  // Block b's fragment: rows 16 warp + g (acc 0, 1) and + 8 (acc 2, 3), tile columns
  // 8 b - 4 + 2t, + 1 (a pair is wholly inside the tile's W columns or wholly outside).
#pragma unroll
  for (int b = 0; b <= NB; ++b) {
    const int c = 8 * b - 4 + 2 * t;
    if (c >= 0 && c < W) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        DTYPE *o = tile + (16 * warp + g + 8 * h) * OP + c;
        if constexpr (F16) *reinterpret_cast<uint32_t *>(o) = pack_f16x2(acc[b][2 * h], acc[b][2 * h + 1]);
        else *reinterpret_cast<float2 *>(o) = make_float2(acc[b][2 * h], acc[b][2 * h + 1]);
      }
    }
  }
  __syncthreads();

  // The output tile, 16 bytes a thread, rows and chunks inside the image only.
  {
    constexpr int CPR = W / EPC, N = TR * CPR;
#pragma unroll 4
    for (int idx = tid; idx < N; idx += BX) {
      const int r = idx / CPR, ch = idx - r * CPR;
      const int gr = R0 + r, gc = C0 + ch * EPC;
      if (gr < rows && gc < cols)
        *reinterpret_cast<uint4 *>(y + (long long)gr * cols + gc) = *reinterpret_cast<const uint4 *>(tile + r * OP + ch * EPC);
    }
  }
}
#endif // !PIPE

#if PIPE
// gaussian_blur_pipe (PIPE = 1): the same tensor-core arithmetic (the band fragments, ldsm, mma
// above), but a block walks a column strip down the image instead of computing one tile: its W
// columns, SEGB bands of TR output rows each, starting at row S0 = blockIdx.y SEGB TR. The input
// rows live in a ring of RING = STAGES TR + KR - 1 shared-memory rows (input row j, counted from
// S0 - VL, in slot j % RING): band k reads rows k TR .. k TR + TR + KR - 2, so the KR - 1 halo
// rows it shares with band k - 1 stay in the ring and are loaded once. Loads go in groups (one
// cp.async group each): group 0 is band 0's TR + KR - 1 rows, group m > 0 the TR rows band m adds;
// STAGES - 1 groups are in flight while the tensor cores work on a band. At band k a block waits
// for group k, passes a barrier (every warp is done with band k - 1), issues group k + STAGES - 1
// into the slots band k - 1 alone used, and computes band k. Each warp stages its own 16 x W
// outputs in two halves of 8 rows (its own shared memory: no block barrier) for 16-byte coalesced
// stores. Defines: as gaussian_blur_mma, and STAGES (2 or 3); the shared memory is dynamic
// (PIPE_SMEM bytes, the plan's `smem`). Kernel: gaussian_blur_pipe.
constexpr int RING = STAGES * TR + KR - 1;     // input rows held
constexpr int RING_BYTES = RING * IP * ES;
constexpr int SOP = W + 8;                     // staging pitch (elements), as OP
constexpr int STAGE_BYTES = 8 * SOP * ES;      // a warp's 8 staged output rows
constexpr int PIPE_SMEM = RING_BYTES + (BX / 32) * STAGE_BYTES;
static_assert(STAGES >= 2, "a group in flight while a band is computed");
static_assert(RING_BYTES % 16 == 0 && STAGE_BYTES % 16 == 0, "16-byte aligned parts");

extern "C" __global__ void __launch_bounds__(BX)
    gaussian_blur_pipe(const DTYPE *__restrict__ x, const DTYPE *__restrict__ wk, DTYPE *__restrict__ y, int rows,
                       int cols, int segb) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t ring = smem_addr(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int C0 = blockIdx.x * W, S0 = blockIdx.y * segb * TR;
  const int left = (rows - S0 + TR - 1) / TR;
  const int nb = segb < left ? segb : left;    // bands of this block

  // Group m: input rows lo .. hi - 1 (j counted from S0 - VL), zero outside the image; an empty
  // group past the last band keeps the count of groups in flight uniform.
  auto issue = [&](int m) {
    if (m < nb) {
      constexpr int CPR = IC / EPC;
      const int lo = m == 0 ? 0 : m * TR + KR - 1, n = (m == 0 ? TR + KR - 1 : TR) * CPR;
      const int slot0 = lo % RING;
#pragma unroll 4
      for (int idx = tid; idx < n; idx += BX) {
        const int r = idx / CPR, ch = idx - r * CPR;
        int slot = slot0 + r;
        if (slot >= RING) slot -= RING;        // a group is at most RING rows
        const int gr = S0 - VL + lo + r, gc = C0 - 8 + ch * EPC;
        const bool ok = gr >= 0 && gr < rows && gc >= 0 && gc < cols;
        cp16(ring + (uint32_t)(slot * IP + ch * EPC) * ES, ok ? x + (long long)gr * cols + gc : x, ok);
      }
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
#pragma unroll 1
  for (int m = 0; m < STAGES - 1; ++m) issue(m);

  uint32_t bf[KR][F16 ? 2 : 4];                // as gaussian_blur_mma's
#pragma unroll
  for (int i = 0; i < KR; ++i) {
    if constexpr (F16) {
      bf[i][0] = pack_f16x2(tap(wk, i, 2 * t, g), tap(wk, i, 2 * t + 1, g));
      bf[i][1] = pack_f16x2(tap(wk, i, 2 * t + 8, g), tap(wk, i, 2 * t + 9, g));
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) bf[i][q] = to_tf32(tap(wk, i, t + 4 * q, g));
    }
  }

  const int lrow = F16 ? (lane & 15) : (lane & 7) + 8 * ((lane >> 3) & 1);
  const int lcol = F16 ? 0 : 4 * (lane >> 4);
  const int wrow = 16 * warp + lrow;           // this lane's ldmatrix row in a band, kernel row 0
  DTYPE *stage = reinterpret_cast<DTYPE *>(smem + RING_BYTES + warp * STAGE_BYTES);
  constexpr int CHUNK_BYTES = 8 * ES;
  int sb = 0;                                  // band k's first row's slot: k TR % RING

#pragma unroll 1
  for (int k = 0; k < nb; ++k) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
    __syncthreads();
    issue(k + STAGES - 1);

    float acc[NB + 1][4];
#pragma unroll
    for (int b = 0; b <= NB; ++b)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[b][q] = 0.0f;
#pragma unroll
    for (int i = 0; i < KR; ++i) {
      int slot = sb + wrow + i;                // wrow + i < TR + KR - 1 <= RING: one wrap at most
      if (slot >= RING) slot -= RING;
      const uint32_t ai = ring + (uint32_t)(slot * IP + lcol) * ES;
      uint32_t lo[4], hi[4];
      ldsm(lo, ai);
#pragma unroll
      for (int b = 0; b <= NB; ++b) {
        ldsm(hi, ai + (uint32_t)((b + 1) * CHUNK_BYTES));
        if constexpr (F16) {
          const uint32_t a[4] = { lo[0], lo[1], hi[0], hi[1] };
          mma(acc[b], a, bf[i][0], bf[i][1]);
          lo[0] = hi[0];
          lo[1] = hi[1];
        } else {
          mma(acc[b], lo, bf[i][0], bf[i][1]);
          mma(acc[b], hi, bf[i][2], bf[i][3]);
#pragma unroll
          for (int q = 0; q < 4; ++q) lo[q] = hi[q];
        }
      }
    }
    sb += TR;
    if (sb >= RING) sb -= RING;

    // Rows 16 warp + 8 h + g of the band (acc[b][2h], [2h + 1]), columns 8 b - 4 + 2t, + 1, through
    // the warp's staging rows to 16-byte stores.
    const int rw = S0 + k * TR + 16 * warp;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int b = 0; b <= NB; ++b) {
        const int c = 8 * b - 4 + 2 * t;
        if (c >= 0 && c < W) {
          DTYPE *o = stage + g * SOP + c;
          if constexpr (F16) *reinterpret_cast<uint32_t *>(o) = pack_f16x2(acc[b][2 * h], acc[b][2 * h + 1]);
          else *reinterpret_cast<float2 *>(o) = make_float2(acc[b][2 * h], acc[b][2 * h + 1]);
        }
      }
      __syncwarp();
      constexpr int CPR = W / EPC, N = 8 * CPR;
#pragma unroll
      for (int idx = lane; idx < N; idx += 32) {
        const int r = idx / CPR, ch = idx - r * CPR;
        const int gr = rw + 8 * h + r, gc = C0 + ch * EPC;
        if (gr < rows && gc < cols)
          *reinterpret_cast<uint4 *>(y + (long long)gr * cols + gc) = *reinterpret_cast<const uint4 *>(stage + r * SOP + ch * EPC);
      }
      __syncwarp();                            // the staging rows are free again
    }
  }
}
#endif // PIPE
