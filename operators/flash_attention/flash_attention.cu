// flash_attention.cu: O = softmax(Q K^T / sqrt(D) + causal mask) V per (b, h), fp16 in and out,
// fp32 accumulation (the `cuda` implementation): a FlashAttention-2-style forward with mma.sync
// m16n8k16 (fp16 inputs, fp32 accumulators), so it runs on any sm_80+ GPU.
//
// CTA: BM = 16 x WARPS query rows of one (b, h) (grid (cdiv(S, BM), B x H), query tiles taken
// last-first so the longest causal rows start first), each warp 16 rows. The Q tile, and K and V
// tiles of BN = 64 keys (two buffers each), come into shared memory by cp.async (16-byte chunks,
// rows past S zero-filled), rows padded to HEAD_DIM + 8 halves so every ldmatrix phase hits 32
// distinct banks. Per key tile: S = Q K^T (Q fragments kept in registers from the first tile, K
// by ldmatrix), scaled by log2(e) / sqrt(D) and masked (causal: key > query; keys past S) on the
// tiles that need it; online softmax per row in fp32 (running max m, the P = 2^(s - m) row sums
// l per thread, O rescaled by 2^(m_old - m_new) when the max rises; the 4 lanes of a row agree
// on the max by two shuffles); P rounded to fp16 straight from the S accumulators into A
// fragments (the m16n8 accumulator layout of two adjacent key octets is the m16n8k16 A layout);
// O += P V with V by ldmatrix.trans. The next tile's cp.async is issued before the current
// tile's products. O / l is rounded to fp16 once.
// Causal: key tiles up to the CTA's last query row only. Non-causal (causal = 0): every tile.
// Defines: HEAD_DIM (a multiple of 16, at most 128: the O accumulators are HEAD_DIM / 2 floats a
// thread), WARPS. Kernel: flash_attention_cuda(Q, K, V, O, S, causal, scale_log2); grid
// (cdiv(S, 16 WARPS), B H), block 32 WARPS, dynamic shared memory (16 WARPS + 4 x 64) x
// (HEAD_DIM + 8) x 2 bytes.
#include "tb_mma16.cuh" // tb_cp16, tb_load_rows16, tb_ldsm_x4(_t), tb_mma16816, tb_pack_f16x2, tb_exp2_approx
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#define FA_BM (16 * WARPS)
#define FA_BN 64
#define FA_THREADS (32 * WARPS)
#define FA_P (HEAD_DIM + 8)          // smem row stride, halves
#define FA_NS (FA_BN / 8)            // n8 tiles of a score row block
#define FA_NO (HEAD_DIM / 8)         // n8 tiles of an output row block
#define FA_KD (HEAD_DIM / 16)        // k16 steps over the head dimension

extern "C" __global__ void __launch_bounds__(FA_THREADS)
flash_attention_cuda(const uint16_t *__restrict__ Q, const uint16_t *__restrict__ K, const uint16_t *__restrict__ V,
                     uint16_t *__restrict__ O, int S, int causal, float scale_log2) {
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t *sQ = smem;
  uint16_t *sK = sQ + FA_BM * FA_P;      // 2 buffers of FA_BN rows
  uint16_t *sV = sK + 2 * FA_BN * FA_P;  // 2 buffers of FA_BN rows
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = (gridDim.x - 1 - blockIdx.x) * FA_BM; // longest causal rows first
  const long long base = (long long)blockIdx.y * S * HEAD_DIM;
  Q += base; K += base; V += base; O += base;
  const int n_end = causal ? min(S, m0 + FA_BM) : S;
  const int tiles = (n_end + FA_BN - 1) / FA_BN;
  const int q0 = m0 + warp * 16;                       // this warp's first row
  const int qa = q0 + g, qb = q0 + g + 8;              // the two rows this thread holds

  tb_load_rows16<FA_BM, FA_THREADS, HEAD_DIM>(sQ, Q, m0, S, tid);
  tb_load_rows16<FA_BN, FA_THREADS, HEAD_DIM>(sK, K, 0, S, tid);
  tb_load_rows16<FA_BN, FA_THREADS, HEAD_DIM>(sV, V, 0, S, tid);
  asm volatile("cp.async.commit_group;\n" ::);

  uint32_t qf[FA_KD][4];
  float o[FA_NO][4];
#pragma unroll
  for (int j = 0; j < FA_NO; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float ma = -INFINITY, mb = -INFINITY, la = 0.0f, lb = 0.0f;

  for (int it = 0; it < tiles; ++it) {
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads(); // tile it is visible; every warp is done with the other buffer
    if (it == 0) {
#pragma unroll
      for (int kd = 0; kd < FA_KD; ++kd)
        tb_ldsm_x4(qf[kd], sQ + (warp * 16 + (lane & 15)) * FA_P + kd * 16 + (lane >> 4) * 8);
    }
    if (it + 1 < tiles) {
      const int nb = (it + 1) & 1;
      tb_load_rows16<FA_BN, FA_THREADS, HEAD_DIM>(sK + nb * FA_BN * FA_P, K, (it + 1) * FA_BN, S, tid);
      tb_load_rows16<FA_BN, FA_THREADS, HEAD_DIM>(sV + nb * FA_BN * FA_P, V, (it + 1) * FA_BN, S, tid);
    }
    asm volatile("cp.async.commit_group;\n" ::);
    const int n0 = it * FA_BN;
    if (causal && n0 > q0 + 15) continue; // every key of this tile is after every row of this warp
    const uint16_t *k = sK + (it & 1) * FA_BN * FA_P;
    const uint16_t *v = sV + (it & 1) * FA_BN * FA_P;

    // ---- S = Q K^T (fp32) ----
    float s[FA_NS][4];
#pragma unroll
    for (int j = 0; j < FA_NS; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kd = 0; kd < FA_KD; ++kd) {
#pragma unroll
      for (int j = 0; j < FA_NS; j += 2) { // keys 8j .. 8j + 15, d 16kd .. 16kd + 15
        uint32_t b[4];
        tb_ldsm_x4(b, k + (j * 8 + (lane >> 4) * 8 + (lane & 7)) * FA_P + kd * 16 + ((lane >> 3) & 1) * 8);
        tb_mma16816(s[j], qf[kd], b[0], b[1]);
        tb_mma16816(s[j + 1], qf[kd], b[2], b[3]);
      }
    }
    // ---- scale, mask, online softmax (log2 domain) ----
    const bool edge = n0 + FA_BN > S || (causal && n0 + FA_BN - 1 > q0);
    float ta = -INFINITY, tb = -INFINITY;
#pragma unroll
    for (int j = 0; j < FA_NS; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e] * scale_log2;
        if (edge) {
          const int key = n0 + j * 8 + 2 * t + (e & 1), q = e < 2 ? qa : qb;
          if (key >= S || (causal && key > q)) x = -INFINITY;
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
    // a row with no admissible key yet (rows past S): keep everything at 0
    const float ua = na == -INFINITY ? 0.0f : na, ub = nbm == -INFINITY ? 0.0f : nbm;
    const float ca = tb_exp2_approx(ma - ua), cb = tb_exp2_approx(mb - ub); // ma = -inf: 0 (O and l are 0)
    ma = na; mb = nbm;
    la *= ca; lb *= cb;
#pragma unroll
    for (int j = 0; j < FA_NO; ++j) { o[j][0] *= ca; o[j][1] *= ca; o[j][2] *= cb; o[j][3] *= cb; }
    uint32_t p[FA_NS / 2][4]; // A fragments of P, one per k16 step over the tile's keys
#pragma unroll
    for (int j = 0; j < FA_NS; ++j) {
      const float p0 = tb_exp2_approx(s[j][0] - ua), p1 = tb_exp2_approx(s[j][1] - ua);
      const float p2 = tb_exp2_approx(s[j][2] - ub), p3 = tb_exp2_approx(s[j][3] - ub);
      la += p0 + p1;
      lb += p2 + p3;
      p[j >> 1][(j & 1) * 2 + 0] = tb_pack_f16x2(p0, p1); // row g: keys 8j + 2t, +1
      p[j >> 1][(j & 1) * 2 + 1] = tb_pack_f16x2(p2, p3); // row g + 8
    }
    // ---- O += P V ----
#pragma unroll
    for (int kk = 0; kk < FA_NS / 2; ++kk) { // keys 16kk .. 16kk + 15
      // A fragment order: a0 (g, k 2t), a1 (g + 8, k 2t), a2 (g, k 2t + 8), a3 (g + 8, k 2t + 8)
      const uint32_t a[4] = { p[kk][0], p[kk][1], p[kk][2], p[kk][3] };
#pragma unroll
      for (int j = 0; j < FA_NO; j += 2) { // d 8j .. 8j + 15
        uint32_t b[4];
        tb_ldsm_x4_t(b, v + (kk * 16 + (lane & 15)) * FA_P + j * 8 + (lane >> 4) * 8);
        tb_mma16816(o[j], a, b[0], b[1]);
        tb_mma16816(o[j + 1], a, b[2], b[3]);
      }
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);

  la += __shfl_xor_sync(0xffffffffu, la, 1);
  la += __shfl_xor_sync(0xffffffffu, la, 2);
  lb += __shfl_xor_sync(0xffffffffu, lb, 1);
  lb += __shfl_xor_sync(0xffffffffu, lb, 2);
  const float ia = la > 0.0f ? 1.0f / la : 0.0f, ib = lb > 0.0f ? 1.0f / lb : 0.0f;
#pragma unroll
  for (int j = 0; j < FA_NO; ++j) {
    const int col = j * 8 + 2 * t;
    if (qa < S) *reinterpret_cast<uint32_t *>(O + (long long)qa * HEAD_DIM + col) = tb_pack_f16x2(o[j][0] * ia, o[j][1] * ia);
    if (qb < S) *reinterpret_cast<uint32_t *>(O + (long long)qb * HEAD_DIM + col) = tb_pack_f16x2(o[j][2] * ib, o[j][3] * ib);
  }
}
