// block_sparse_attention.cu: causal block-sparse attention with GQA, fp16 in and out, fp32
// accumulation (the `cuda` implementation): flash_attention.cu's FlashAttention-2 forward on
// mma.sync m16n8k16, walking only the key blocks the CSR layout lists for the CTA's query rows.
//
// Semantics (OPERATORS.md 26): query head h reads kv head h / (H / H_kv); key n is admissible
// for query m iff n <= m and key block (m / BLOCK_M, n / BLOCK_N) is listed in the layout (one
// layout for every head: num_layout = 1); out = softmax over admissible n of q . k_n / sqrt(D),
// applied to v_n.
//
// CTA: HPC query heads of one kv group x RM = 16 x WM rows of one layout row block (RM divides
// BLOCK_M), so every warp of the CTA walks the same CSR list and the K and V tiles in shared
// memory serve HPC x RM query rows (GQA: the HPC heads share their kv head). Grid (M / RM row
// tiles (rounded up), B x H / HPC), x fastest: neighbouring CTAs are the neighbouring row tiles
// of one head, which read the same key blocks (each block is listed by 3 row blocks) from L2.
// Warp w holds 16 rows of head h0 + w / WM. Tiles of BN keys (BN = min(BLOCK_N, 64); a listed
// block is BLOCK_N / BN tiles) come in by cp.async (two buffers each for K and V, 16-byte chunks,
// keys past M zero-filled), rows padded to HEAD_DIM + 8 halves so every ldmatrix phase hits 32
// distinct banks; the next tile's copies are issued before the current tile's products. Per tile,
// as flash_attention.cu: S = Q K^T (Q fragments in registers), scale into the log2 domain, mask
// (key > query, key >= M) on tiles that cross the diagonal or M, online softmax in fp32, P to fp16
// from the accumulators, O += P V (V by ldmatrix.trans). On the diagonal tile a warp computes only
// the key octets up to its last row (the rest are masked: their P is 0), which saves about a fifth
// of a row block's products at BLOCK 64 (2 + 5/8 tiles of work instead of 3).
// Defines: HEAD_DIM (a multiple of 16, at most 128), WM (warps per head), HPC (heads per CTA), BN
// (16, 32 or 64, dividing BLOCK_N). Kernel: block_sparse_attention_cuda(Q, K, V, O, row_ptr,
// col_idx, M, H, H_kv, BLOCK_M, BLOCK_N, scale_log2); block 32 x WM x HPC, dynamic shared memory
// (16 WM HPC + 4 BN) x (HEAD_DIM + 8) x 2 bytes.
#include "tb_mma16.cuh" // tb_cp16, tb_load_rows16, tb_ldsm_x4(_t), tb_mma16816, tb_pack_f16x2, tb_exp2_approx
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#define BS_RM (16 * WM)              // query rows of one head a CTA
#define BS_WARPS (WM * HPC)
#define BS_THREADS (32 * BS_WARPS)
#define BS_P (HEAD_DIM + 8)          // smem row stride, halves
#define BS_NS (BN / 8)               // n8 tiles of a score row block
#define BS_NO (HEAD_DIM / 8)         // n8 tiles of an output row block
#define BS_KD (HEAD_DIM / 16)        // k16 steps over the head dimension

extern "C" __global__ void __launch_bounds__(BS_THREADS)
block_sparse_attention_cuda(const uint16_t *__restrict__ Q, const uint16_t *__restrict__ K,
                            const uint16_t *__restrict__ V, uint16_t *__restrict__ O, const int *__restrict__ row_ptr,
                            const int *__restrict__ col_idx, int M, int H, int H_kv, int BLOCK_M, int BLOCK_N,
                            float scale_log2) {
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t *sQ = smem;                    // HPC heads x RM rows
  uint16_t *sK = sQ + HPC * BS_RM * BS_P; // 2 buffers of BN rows
  uint16_t *sV = sK + 2 * BN * BS_P;      // 2 buffers of BN rows
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.x * BS_RM;
  const int groups = H / HPC;
  const int b = blockIdx.y / groups, h0 = (blockIdx.y % groups) * HPC;
  const int hk = h0 / (H / H_kv); // the HPC heads share it (HPC divides H / H_kv)
  const long long qstride = (long long)M * HEAD_DIM; // one head
  const uint16_t *Qh = Q + ((long long)b * H + h0) * qstride;
  K += ((long long)b * H_kv + hk) * qstride;
  V += ((long long)b * H_kv + hk) * qstride;
  const int r = m0 / BLOCK_M; // RM divides BLOCK_M: one layout row for the whole CTA
  const int c0 = row_ptr[r];
  const int sub = BLOCK_N / BN;
  const int tiles = (row_ptr[r + 1] - c0) * sub;
  const int q0 = m0 + (warp % WM) * 16;        // this warp's first row
  const int qa = q0 + g, qb = q0 + g + 8;      // the two rows this thread holds

#pragma unroll
  for (int hp = 0; hp < HPC; ++hp) tb_load_rows16<BS_RM, BS_THREADS, HEAD_DIM>(sQ + hp * BS_RM * BS_P, Qh + hp * qstride, m0, M, tid);
  if (tiles > 0) {
    const int n0 = col_idx[c0] * BLOCK_N;
    tb_load_rows16<BN, BS_THREADS, HEAD_DIM>(sK, K, n0, M, tid);
    tb_load_rows16<BN, BS_THREADS, HEAD_DIM>(sV, V, n0, M, tid);
  }
  asm volatile("cp.async.commit_group;\n" ::);

  uint32_t qf[BS_KD][4];
  float o[BS_NO][4];
#pragma unroll
  for (int j = 0; j < BS_NO; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float ma = -INFINITY, mb = -INFINITY, la = 0.0f, lb = 0.0f;

  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
#pragma unroll
  for (int kd = 0; kd < BS_KD; ++kd)
    tb_ldsm_x4(qf[kd], sQ + (warp * 16 + (lane & 15)) * BS_P + kd * 16 + (lane >> 4) * 8);

  for (int it = 0; it < tiles; ++it) {
    if (it > 0) {
      asm volatile("cp.async.wait_group 0;\n" ::);
      __syncthreads(); // tile it is visible; every warp is done with the other buffer
    }
    if (it + 1 < tiles) {
      const int nb = (it + 1) & 1;
      const int nn = col_idx[c0 + (it + 1) / sub] * BLOCK_N + ((it + 1) % sub) * BN;
      tb_load_rows16<BN, BS_THREADS, HEAD_DIM>(sK + nb * BN * BS_P, K, nn, M, tid);
      tb_load_rows16<BN, BS_THREADS, HEAD_DIM>(sV + nb * BN * BS_P, V, nn, M, tid);
    }
    asm volatile("cp.async.commit_group;\n" ::);
    const int n0 = col_idx[c0 + it / sub] * BLOCK_N + (it % sub) * BN;
    if (n0 > q0 + 15) continue; // every key of this tile is after every row of this warp
    const int jlim = q0 + 15 - n0; // keys past it are after every row of this warp
    const uint16_t *k = sK + (it & 1) * BN * BS_P;
    const uint16_t *v = sV + (it & 1) * BN * BS_P;

    // ---- S = Q K^T (fp32), key octets up to jlim ----
    float s[BS_NS][4];
#pragma unroll
    for (int j = 0; j < BS_NS; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int j = 0; j < BS_NS; j += 2) { // keys 8j .. 8j + 15
      if (8 * j <= jlim) {
#pragma unroll
        for (int kd = 0; kd < BS_KD; ++kd) {
          uint32_t bf[4];
          tb_ldsm_x4(bf, k + (j * 8 + (lane >> 4) * 8 + (lane & 7)) * BS_P + kd * 16 + ((lane >> 3) & 1) * 8);
          tb_mma16816(s[j], qf[kd], bf[0], bf[1]);
          tb_mma16816(s[j + 1], qf[kd], bf[2], bf[3]);
        }
      }
    }
    // ---- scale, mask, online softmax (log2 domain) ----
    const bool edge = n0 + BN > M || n0 + BN - 1 > q0;
    float ta = -INFINITY, tb = -INFINITY;
#pragma unroll
    for (int j = 0; j < BS_NS; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e] * scale_log2;
        if (edge) {
          const int key = n0 + j * 8 + 2 * t + (e & 1), q = e < 2 ? qa : qb;
          if (key >= M || key > q) x = -INFINITY;
        }
        s[j][e] = x;
      }
      ta = fmaxf(ta, fmaxf(s[j][0], s[j][1]));
      tb = fmaxf(tb, fmaxf(s[j][2], s[j][3]));
    }
    ta = fmaxf(ta, __shfl_xor_sync(0xffffffffu, ta, 1));
    ta = fmaxf(ta, __shfl_xor_sync(0xffffffffu, ta, 2));
    tb = fmaxf(tb, __shfl_xor_sync(0xffffffffu, tb, 1));
    tb = fmaxf(tb, __shfl_xor_sync(0xffffffffu, tb, 2));
    const float na = fmaxf(ma, ta), nbm = fmaxf(mb, tb);
    // a row with no admissible key yet (rows past M): keep everything at 0
    const float ua = na == -INFINITY ? 0.0f : na, ub = nbm == -INFINITY ? 0.0f : nbm;
    const float ca = tb_exp2_approx(ma - ua), cb = tb_exp2_approx(mb - ub); // ma = -inf: 0 (O and l are 0)
    ma = na; mb = nbm;
    la *= ca; lb *= cb;
#pragma unroll
    for (int j = 0; j < BS_NO; ++j) { o[j][0] *= ca; o[j][1] *= ca; o[j][2] *= cb; o[j][3] *= cb; }
    uint32_t p[BS_NS / 2][4]; // A fragments of P, one per k16 step over the tile's keys
#pragma unroll
    for (int j = 0; j < BS_NS; ++j) {
      const float p0 = tb_exp2_approx(s[j][0] - ua), p1 = tb_exp2_approx(s[j][1] - ua);
      const float p2 = tb_exp2_approx(s[j][2] - ub), p3 = tb_exp2_approx(s[j][3] - ub);
      la += p0 + p1;
      lb += p2 + p3;
      p[j >> 1][(j & 1) * 2 + 0] = tb_pack_f16x2(p0, p1); // row g: keys 8j + 2t, +1
      p[j >> 1][(j & 1) * 2 + 1] = tb_pack_f16x2(p2, p3); // row g + 8
    }
    // ---- O += P V, key k16 steps up to jlim (P is 0 past it) ----
#pragma unroll
    for (int kk = 0; kk < BS_NS / 2; ++kk) { // keys 16kk .. 16kk + 15
      if (16 * kk <= jlim) {
        // A fragment order: a0 (g, k 2t), a1 (g + 8, k 2t), a2 (g, k 2t + 8), a3 (g + 8, k 2t + 8)
        const uint32_t a[4] = { p[kk][0], p[kk][1], p[kk][2], p[kk][3] };
#pragma unroll
        for (int j = 0; j < BS_NO; j += 2) { // d 8j .. 8j + 15
          uint32_t bf[4];
          tb_ldsm_x4_t(bf, v + (kk * 16 + (lane & 15)) * BS_P + j * 8 + (lane >> 4) * 8);
          tb_mma16816(o[j], a, bf[0], bf[1]);
          tb_mma16816(o[j + 1], a, bf[2], bf[3]);
        }
      }
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);

  la += __shfl_xor_sync(0xffffffffu, la, 1);
  la += __shfl_xor_sync(0xffffffffu, la, 2);
  lb += __shfl_xor_sync(0xffffffffu, lb, 1);
  lb += __shfl_xor_sync(0xffffffffu, lb, 2);
  const float ia = la > 0.0f ? 1.0f / la : 0.0f, ib = lb > 0.0f ? 1.0f / lb : 0.0f;
  uint16_t *Ow = O + ((long long)b * H + h0 + warp / WM) * qstride;
#pragma unroll
  for (int j = 0; j < BS_NO; ++j) {
    const int col = j * 8 + 2 * t;
    if (qa < M) *reinterpret_cast<uint32_t *>(Ow + (long long)qa * HEAD_DIM + col) = tb_pack_f16x2(o[j][0] * ia, o[j][1] * ia);
    if (qb < M) *reinterpret_cast<uint32_t *>(Ow + (long long)qb * HEAD_DIM + col) = tb_pack_f16x2(o[j][2] * ib, o[j][3] * ib);
  }
}
