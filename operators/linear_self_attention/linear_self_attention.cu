// linear_self_attention.cu: out = phi(Q) S / ((phi(Q) Z)[:, None] + eps) with S = phi(K)^T V
// (D x D), Z = the column sums of phi(K), phi(x) = x + 1 (x > 0) else exp(x); Q, K, V, out (M, D)
// fp32 (the `cuda` implementation). The products run on the tensor cores in TF32 (mma.sync
// m16n8k8, fp32 accumulation), as TileBench's reference runs its matmuls (allow_tf32); phi, Z and
// the denominators stay fp32. Three kernels, one plan:
// - lsa_zero: clears the kv workspace (S then Z, D x D + D floats): lsa_kv adds into it.
// - lsa_kv (define TILE = 32 or 64): S and Z, split-K over the rows of K and V. CTA (bi, bj, z)
//   owns the TILE x TILE block (bi, bj) of S and rows [z * chunk, (z + 1) * chunk) of K and V; per
//   step of 32 rows it loads the K and V slices (16-byte loads, the next step's issued before the
//   current step's products), applies phi to K once while storing both to shared memory as TF32
//   (cvt.rna), and 4 warps (2 x 2, TILE/2 x TILE/2 each) run the products. The partial block is
//   added into S with fp32 atomics (red.global.add); the bj = 0 CTAs also sum phi(K) per column
//   in fp32 for Z. Rows past M load as 0 and enter neither S nor Z (phi(0) would be 1).
// - lsa_out (defines BM, BN): out tile (BM rows, BN columns) of phi(Q) S, K-loop over D in steps of
//   32: phi(Q) once per element while storing TF32 to shared memory, S's 32 x BN slice beside it;
//   (BM / 32) x 2 warps of 32 x BN/2; the denominators phi(Q) . Z in fp32 from the same registers
//   (each thread 4 rows x 4 columns, then an 8-lane shuffle sum); out = acc / (den + eps).
// Needs D % 32 == 0, D % TILE == 0, D % BN == 0 (the grid's D are 32 .. 256); any M.
// Shared-memory rows are padded (TILE + 8, 32 + 4, BN + 8 words) so each fragment read hits 32
// distinct banks.
typedef unsigned int uint32_t;

__device__ __forceinline__ float lsa_phi(float x) { return x > 0.0f ? x + 1.0f : expf(x); }

__device__ __forceinline__ uint32_t lsa_tf32(float x) {
  uint32_t u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
  return u;
}

// c (16 x 8, fp32) += a (16 x 8, TF32, row) * b (8 x 8, TF32, col). Fragments (g = lane / 4,
// t = lane % 4): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g),
// b1 (k t + 4, n g); c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).
__device__ __forceinline__ void lsa_mma(float *c, const uint32_t *a, const uint32_t *b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void lsa_zero(float *p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = 0.0f;
}

#ifdef TILE
#define KV_THREADS 128
#define KV_BK 32
#define KV_P (TILE + 8)
#define KV_C4 (TILE / 4)              // 16-byte vectors per tile row
#define KV_RSTEP (KV_THREADS / KV_C4) // rows one load round covers
#define KV_NL (KV_BK / KV_RSTEP)      // vectors per thread per operand and step
#define KV_MI (TILE / 32)             // m16 tiles per warp (TILE / 2 rows)
#define KV_NJ (TILE / 16)             // n8 tiles per warp (TILE / 2 columns)

// kv: S (D x D, row i = feature of phi(K)) then Z (D); chunk: rows per split (a multiple of 32).
extern "C" __global__ void __launch_bounds__(KV_THREADS)
lsa_kv(const float *__restrict__ K, const float *__restrict__ V, float *__restrict__ kv, int M, int D, int chunk) {
  __shared__ __align__(16) uint32_t sK[KV_BK][KV_P];
  __shared__ __align__(16) uint32_t sV[KV_BK][KV_P];
  __shared__ float sZ[KV_RSTEP][TILE];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int i0 = blockIdx.x * TILE, j0 = blockIdx.y * TILE;
  const int wi = (warp >> 1) * (TILE / 2), wj = (warp & 1) * (TILE / 2);
  const int mb = blockIdx.z * chunk, me = min(M, mb + chunk);
  if (mb >= me) return;
  const bool do_z = blockIdx.y == 0;
  const int c4 = tid % KV_C4, r0 = tid / KV_C4;
  float acc[KV_MI][KV_NJ][4];
#pragma unroll
  for (int a = 0; a < KV_MI; ++a)
#pragma unroll
    for (int b = 0; b < KV_NJ; ++b)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[a][b][e] = 0.0f;
  float z[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
  float4 pk[KV_NL], pv[KV_NL];

#define KV_LOAD(m0)                                                                                   \
  _Pragma("unroll") for (int l = 0; l < KV_NL; ++l) {                                                \
    const int m = (m0) + r0 + l * KV_RSTEP;                                                           \
    if (m < me) {                                                                                     \
      pk[l] = __ldg(reinterpret_cast<const float4 *>(K + (long long)m * D + i0 + c4 * 4));           \
      pv[l] = __ldg(reinterpret_cast<const float4 *>(V + (long long)m * D + j0 + c4 * 4));           \
    } else {                                                                                          \
      pk[l] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);                                                    \
      pv[l] = pk[l];                                                                                  \
    }                                                                                                 \
  }

  KV_LOAD(mb)
  for (int m0 = mb; m0 < me; m0 += KV_BK) {
#pragma unroll
    for (int l = 0; l < KV_NL; ++l) {
      const int mr = r0 + l * KV_RSTEP;
      const bool ok = m0 + mr < me;
      const float a0 = ok ? lsa_phi(pk[l].x) : 0.0f, a1 = ok ? lsa_phi(pk[l].y) : 0.0f;
      const float a2 = ok ? lsa_phi(pk[l].z) : 0.0f, a3 = ok ? lsa_phi(pk[l].w) : 0.0f;
      z[0] += a0; z[1] += a1; z[2] += a2; z[3] += a3;
      *reinterpret_cast<uint4 *>(&sK[mr][c4 * 4]) = make_uint4(lsa_tf32(a0), lsa_tf32(a1), lsa_tf32(a2), lsa_tf32(a3));
      *reinterpret_cast<uint4 *>(&sV[mr][c4 * 4]) =
          make_uint4(lsa_tf32(pv[l].x), lsa_tf32(pv[l].y), lsa_tf32(pv[l].z), lsa_tf32(pv[l].w));
    }
    __syncthreads();
    if (m0 + KV_BK < me) { KV_LOAD(m0 + KV_BK) } // in flight during the products
#pragma unroll
    for (int kk = 0; kk < KV_BK; kk += 8) {
      uint32_t a[KV_MI][4], b[KV_NJ][2];
#pragma unroll
      for (int mi = 0; mi < KV_MI; ++mi) { // A = phi(K)^T: row i, column m
        const int r = wi + mi * 16 + g;
        a[mi][0] = sK[kk + t][r];
        a[mi][1] = sK[kk + t][r + 8];
        a[mi][2] = sK[kk + t + 4][r];
        a[mi][3] = sK[kk + t + 4][r + 8];
      }
#pragma unroll
      for (int nj = 0; nj < KV_NJ; ++nj) { // B = V: row m, column j
        const int c = wj + nj * 8 + g;
        b[nj][0] = sV[kk + t][c];
        b[nj][1] = sV[kk + t + 4][c];
      }
#pragma unroll
      for (int mi = 0; mi < KV_MI; ++mi)
#pragma unroll
        for (int nj = 0; nj < KV_NJ; ++nj) lsa_mma(acc[mi][nj], a[mi], b[nj]);
    }
    __syncthreads();
  }
#undef KV_LOAD

#pragma unroll
  for (int mi = 0; mi < KV_MI; ++mi)
#pragma unroll
    for (int nj = 0; nj < KV_NJ; ++nj) {
      const int r = i0 + wi + mi * 16 + g, c = j0 + wj + nj * 8 + 2 * t;
      atomicAdd(kv + (long long)r * D + c, acc[mi][nj][0]);
      atomicAdd(kv + (long long)r * D + c + 1, acc[mi][nj][1]);
      atomicAdd(kv + (long long)(r + 8) * D + c, acc[mi][nj][2]);
      atomicAdd(kv + (long long)(r + 8) * D + c + 1, acc[mi][nj][3]);
    }
  if (do_z) { // column sums of phi(K): the KV_RSTEP threads of each column, then one atomic
#pragma unroll
    for (int e = 0; e < 4; ++e) sZ[r0][c4 * 4 + e] = z[e];
    __syncthreads();
    if (tid < TILE) {
      float s = 0.0f;
#pragma unroll
      for (int r = 0; r < KV_RSTEP; ++r) s += sZ[r][tid];
      atomicAdd(kv + (long long)D * D + i0 + tid, s);
    }
  }
}
#endif

#ifdef BM
#define OUT_THREADS (BM * 2)
#define OUT_BK 32
#define OUT_PQ (OUT_BK + 4)
#define OUT_PS (BN + 8)
#define OUT_NJ (BN / 16)                          // n8 tiles per warp (BN / 2 columns)
#define OUT_QR (BM / 4)                           // rows one Q load round covers (8 vectors a row)
#define OUT_SL ((OUT_BK * BN / 4) / OUT_THREADS)  // S vectors per thread per step (BN >= BM / 4)

// kv: S (D x D) then Z (D), as lsa_kv leaves them.
// MINB: the CTAs an SM ptxas must allow (the register cap); operator.lua's out_tiles sets 3 for
// the 64-row tiles it picks where 128-row tiles would need a second wave, and passes nothing
// otherwise.
#ifndef MINB
#define MINB 1
#endif
extern "C" __global__ void __launch_bounds__(OUT_THREADS, MINB)
lsa_out(const float *__restrict__ Q, const float *__restrict__ kv, float *__restrict__ out, int M, int D, float eps) {
  __shared__ __align__(16) uint32_t sQ[BM][OUT_PQ];
  __shared__ __align__(16) uint32_t sS[OUT_BK][OUT_PS];
  __shared__ float sDen[BM];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * (BN / 2);
  const int c4 = tid % 8, rq = tid / 8;
  const float *Z = kv + (long long)D * D;
  float acc[2][OUT_NJ][4];
#pragma unroll
  for (int a = 0; a < 2; ++a)
#pragma unroll
    for (int b = 0; b < OUT_NJ; ++b)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[a][b][e] = 0.0f;
  float den[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
  float4 pq[4], ps[OUT_SL];

#define OUT_LOAD(k0)                                                                                  \
  _Pragma("unroll") for (int l = 0; l < 4; ++l) {                                                    \
    const int m = m0 + rq + l * OUT_QR;                                                               \
    pq[l] = m < M ? __ldg(reinterpret_cast<const float4 *>(Q + (long long)m * D + (k0) + c4 * 4))     \
                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);                                              \
  }                                                                                                   \
  _Pragma("unroll") for (int l = 0; l < OUT_SL; ++l) {                                               \
    const int idx = tid + l * OUT_THREADS;                                                            \
    ps[l] = __ldg(reinterpret_cast<const float4 *>(kv + (long long)((k0) + idx / (BN / 4)) * D + n0 + \
                                                   (idx % (BN / 4)) * 4));                            \
  }

  OUT_LOAD(0)
  for (int k0 = 0; k0 < D; k0 += OUT_BK) {
    const float4 zz = __ldg(reinterpret_cast<const float4 *>(Z + k0 + c4 * 4));
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const bool ok = m0 + rq + l * OUT_QR < M;
      const float a0 = ok ? lsa_phi(pq[l].x) : 0.0f, a1 = ok ? lsa_phi(pq[l].y) : 0.0f;
      const float a2 = ok ? lsa_phi(pq[l].z) : 0.0f, a3 = ok ? lsa_phi(pq[l].w) : 0.0f;
      den[l] = fmaf(a0, zz.x, fmaf(a1, zz.y, fmaf(a2, zz.z, fmaf(a3, zz.w, den[l]))));
      *reinterpret_cast<uint4 *>(&sQ[rq + l * OUT_QR][c4 * 4]) =
          make_uint4(lsa_tf32(a0), lsa_tf32(a1), lsa_tf32(a2), lsa_tf32(a3));
    }
#pragma unroll
    for (int l = 0; l < OUT_SL; ++l) {
      const int idx = tid + l * OUT_THREADS;
      *reinterpret_cast<uint4 *>(&sS[idx / (BN / 4)][(idx % (BN / 4)) * 4]) =
          make_uint4(lsa_tf32(ps[l].x), lsa_tf32(ps[l].y), lsa_tf32(ps[l].z), lsa_tf32(ps[l].w));
    }
    __syncthreads();
    if (k0 + OUT_BK < D) { OUT_LOAD(k0 + OUT_BK) } // in flight during the products
#pragma unroll
    for (int kk = 0; kk < OUT_BK; kk += 8) {
      uint32_t a[2][4], b[OUT_NJ][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) { // A = phi(Q): row m, column i
        const int r = wm + mi * 16 + g;
        a[mi][0] = sQ[r][kk + t];
        a[mi][1] = sQ[r + 8][kk + t];
        a[mi][2] = sQ[r][kk + t + 4];
        a[mi][3] = sQ[r + 8][kk + t + 4];
      }
#pragma unroll
      for (int nj = 0; nj < OUT_NJ; ++nj) { // B = S: row i, column j
        const int c = wn + nj * 8 + g;
        b[nj][0] = sS[kk + t][c];
        b[nj][1] = sS[kk + t + 4][c];
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int nj = 0; nj < OUT_NJ; ++nj) lsa_mma(acc[mi][nj], a[mi], b[nj]);
    }
    __syncthreads();
  }
#undef OUT_LOAD

  // the 8 threads of a row (consecutive lanes, c4 = 0..7) sum their denominators
#pragma unroll
  for (int l = 0; l < 4; ++l) {
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) den[l] += __shfl_xor_sync(0xffffffffu, den[l], o);
    if (c4 == 0) sDen[rq + l * OUT_QR] = den[l];
  }
  __syncthreads();
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = wm + mi * 16 + g + 8 * h;
      if (m0 + row < M) {
        const float d = sDen[row] + eps;
#pragma unroll
        for (int nj = 0; nj < OUT_NJ; ++nj) {
          const int c = n0 + wn + nj * 8 + 2 * t;
          *reinterpret_cast<float2 *>(out + (long long)(m0 + row) * D + c) =
              make_float2(acc[mi][nj][2 * h] / d, acc[mi][nj][2 * h + 1] / d);
        }
      }
    }
}
#endif
