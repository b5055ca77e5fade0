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
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#define FA_BM (16 * WARPS)
#define FA_BN 64
#define FA_THREADS (32 * WARPS)
#define FA_P (HEAD_DIM + 8)          // smem row stride, halves
#define FA_CH (HEAD_DIM / 8)         // 16-byte chunks per row
#define FA_NS (FA_BN / 8)            // n8 tiles of a score row block
#define FA_NO (HEAD_DIM / 8)         // n8 tiles of an output row block
#define FA_KD (HEAD_DIM / 16)        // k16 steps over the head dimension

__device__ __forceinline__ void fa_cp16(uint32_t dst, const void *src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0));
}

// rows [r0, r0 + R) of a (S, HEAD_DIM) matrix into smem rows 0..R-1 (zero past S)
template <int R>
__device__ __forceinline__ void fa_load_rows(uint16_t *dst, const uint16_t *src, int r0, int S, int tid) {
#pragma unroll
  for (int i = 0; i < (R * FA_CH + FA_THREADS - 1) / FA_THREADS; ++i) {
    const int c = tid + i * FA_THREADS;
    if (R * FA_CH % FA_THREADS == 0 || c < R * FA_CH) {
      const int r = c / FA_CH, ch = c % FA_CH;
      const bool ok = r0 + r < S;
      fa_cp16((uint32_t)__cvta_generic_to_shared(dst + r * FA_P + ch * 8),
              ok ? src + (long long)(r0 + r) * HEAD_DIM + ch * 8 : src, ok);
    }
  }
}

__device__ __forceinline__ void fa_ldsm_x4(uint32_t *r, const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"((uint32_t)__cvta_generic_to_shared(p)));
}

__device__ __forceinline__ void fa_ldsm_x4_t(uint32_t *r, const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"((uint32_t)__cvta_generic_to_shared(p)));
}

__device__ __forceinline__ void fa_mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t fa_pack(float lo, float hi) { // lower half = lo
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float fa_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

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

  fa_load_rows<FA_BM>(sQ, Q, m0, S, tid);
  fa_load_rows<FA_BN>(sK, K, 0, S, tid);
  fa_load_rows<FA_BN>(sV, V, 0, S, tid);
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
        fa_ldsm_x4(qf[kd], sQ + (warp * 16 + (lane & 15)) * FA_P + kd * 16 + (lane >> 4) * 8);
    }
    if (it + 1 < tiles) {
      const int nb = (it + 1) & 1;
      fa_load_rows<FA_BN>(sK + nb * FA_BN * FA_P, K, (it + 1) * FA_BN, S, tid);
      fa_load_rows<FA_BN>(sV + nb * FA_BN * FA_P, V, (it + 1) * FA_BN, S, tid);
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
        fa_ldsm_x4(b, k + (j * 8 + (lane >> 4) * 8 + (lane & 7)) * FA_P + kd * 16 + ((lane >> 3) & 1) * 8);
        fa_mma(s[j], qf[kd], b[0], b[1]);
        fa_mma(s[j + 1], qf[kd], b[2], b[3]);
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
    const float ca = fa_exp2(ma - ua), cb = fa_exp2(mb - ub); // ma = -inf: 0 (O and l are 0)
    ma = na; mb = nbm;
    la *= ca; lb *= cb;
#pragma unroll
    for (int j = 0; j < FA_NO; ++j) { o[j][0] *= ca; o[j][1] *= ca; o[j][2] *= cb; o[j][3] *= cb; }
    uint32_t p[FA_NS / 2][4]; // A fragments of P, one per k16 step over the tile's keys
#pragma unroll
    for (int j = 0; j < FA_NS; ++j) {
      const float p0 = fa_exp2(s[j][0] - ua), p1 = fa_exp2(s[j][1] - ua);
      const float p2 = fa_exp2(s[j][2] - ub), p3 = fa_exp2(s[j][3] - ub);
      la += p0 + p1;
      lb += p2 + p3;
      p[j >> 1][(j & 1) * 2 + 0] = fa_pack(p0, p1); // row g: keys 8j + 2t, +1
      p[j >> 1][(j & 1) * 2 + 1] = fa_pack(p2, p3); // row g + 8
    }
    // ---- O += P V ----
#pragma unroll
    for (int kk = 0; kk < FA_NS / 2; ++kk) { // keys 16kk .. 16kk + 15
      // A fragment order: a0 (g, k 2t), a1 (g + 8, k 2t), a2 (g, k 2t + 8), a3 (g + 8, k 2t + 8)
      const uint32_t a[4] = { p[kk][0], p[kk][1], p[kk][2], p[kk][3] };
#pragma unroll
      for (int j = 0; j < FA_NO; j += 2) { // d 8j .. 8j + 15
        uint32_t b[4];
        fa_ldsm_x4_t(b, v + (kk * 16 + (lane & 15)) * FA_P + j * 8 + (lane >> 4) * 8);
        fa_mma(o[j], a, b[0], b[1]);
        fa_mma(o[j + 1], a, b[2], b[3]);
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
    if (qa < S) *reinterpret_cast<uint32_t *>(O + (long long)qa * HEAD_DIM + col) = fa_pack(o[j][0] * ia, o[j][1] * ia);
    if (qb < S) *reinterpret_cast<uint32_t *>(O + (long long)qb * HEAD_DIM + col) = fa_pack(o[j][2] * ib, o[j][3] * ib);
  }
}
