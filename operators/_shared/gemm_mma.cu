// gemm_mma.cu: C = A @ B for fp16 / bf16 with mma.sync (m16n8k16, fp32 accumulation): the
// Ampere-style fallback of the matmul operators (VARIANT=mma), slower than gemm_wgmma.cu on
// Hopper but built only from instructions every sm_80+ GPU has.
// Row-major A (M, K), B (K, N), C (M, N), batched over blockIdx.z with element strides.
// CTA tile 128 x 128 x 32, 8 warps as 2 x 4 (warp tile 64 x 32), STAGES cp.async stages into
// padded shared memory (rows of 40 / 136 halves: ldmatrix rows stay 16-byte aligned and hit
// distinct banks), ldmatrix (.trans for B) feeding the mma fragments.
// Defines: DT (1 fp16, 2 bf16), STAGES (>= 2). Needs K % 8 == 0 and N % 8 == 0.
// Kernel: gemm_mma(A, B, C, M, N, K, sA, sB, sC); grid (cdiv(N,128), cdiv(M,128), batch),
// block 256, dynamic shared memory STAGES * (128*40 + 32*136) * 2 bytes.
#ifndef DT
#define DT 1
#endif
#ifndef STAGES
#define STAGES 3
#endif
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;

#define BM 128
#define BN 128
#define BK 32
#define APAD 40
#define BPAD 136
#define A_ELEMS (BM * APAD)
#define B_ELEMS (BK * BPAD)

#if DT == 1
#define MMA_TYPES "f16.f16"
#define CVT_OUT "cvt.rn.f16.f32"
#else
#define MMA_TYPES "bf16.bf16"
#define CVT_OUT "cvt.rn.bf16.f32"
#endif

__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(pred ? 16 : 0));
}

__device__ __forceinline__ void load_tile(uint16_t *sa, uint16_t *sb, const uint16_t *A,
                                          const uint16_t *B, int M, int N, int K, int m0, int n0,
                                          int k0, int tid) {
#pragma unroll
  for (int i = 0; i < 2; i++) { // A: 128 rows x 4 chunks
    int c = tid + i * 256, r = c >> 2, ch = c & 3;
    bool ok = m0 + r < M && k0 + ch * 8 < K;
    cp_async16((uint32_t)__cvta_generic_to_shared(sa + r * APAD + ch * 8),
               ok ? A + (size_t)(m0 + r) * K + k0 + ch * 8 : A, ok);
  }
#pragma unroll
  for (int i = 0; i < 2; i++) { // B: 32 rows x 16 chunks
    int c = tid + i * 256, r = c >> 4, ch = c & 15;
    bool ok = k0 + r < K && n0 + ch * 8 < N;
    cp_async16((uint32_t)__cvta_generic_to_shared(sb + r * BPAD + ch * 8),
               ok ? B + (size_t)(k0 + r) * N + n0 + ch * 8 : B, ok);
  }
}

extern "C" __global__ void __launch_bounds__(256)
gemm_mma(const uint16_t *__restrict__ A, const uint16_t *__restrict__ B, uint16_t *__restrict__ C,
         int M, int N, int K, long long sA, long long sB, long long sC) {
  extern __shared__ __align__(16) uint16_t smem[];
  A += (size_t)blockIdx.z * sA;
  B += (size_t)blockIdx.z * sB;
  C += (size_t)blockIdx.z * sC;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int KT = (K + BK - 1) / BK;
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < KT)
      load_tile(smem + s * (A_ELEMS + B_ELEMS), smem + s * (A_ELEMS + B_ELEMS) + A_ELEMS, A, B, M,
                N, K, m0, n0, s * BK, tid);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  for (int kt = 0; kt < KT; kt++) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
    __syncthreads(); // stage kt visible to all; everyone is done with stage kt-1
    const int nk = kt + STAGES - 1;
    if (nk < KT) {
      uint16_t *base = smem + (nk % STAGES) * (A_ELEMS + B_ELEMS);
      load_tile(base, base + A_ELEMS, A, B, M, N, K, m0, n0, nk * BK, tid);
    }
    asm volatile("cp.async.commit_group;\n" ::);
    const uint16_t *sa = smem + (kt % STAGES) * (A_ELEMS + B_ELEMS), *sb = sa + A_ELEMS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const uint16_t *p = sa + (wm + i * 16 + (lane & 15)) * APAD + kk + (lane >> 4) * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(af[i][0]), "=r"(af[i][1]), "=r"(af[i][2]), "=r"(af[i][3])
                     : "r"((uint32_t)__cvta_generic_to_shared(p)));
      }
#pragma unroll
      for (int j = 0; j < 4; j += 2) {
        const uint16_t *p = sb + (kk + (lane & 15)) * BPAD + wn + j * 8 + (lane >> 4) * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(bf[j][0]), "=r"(bf[j][1]), "=r"(bf[j + 1][0]), "=r"(bf[j + 1][1])
                     : "r"((uint32_t)__cvta_generic_to_shared(p)));
      }
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPES ".f32 "
                       "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                       : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]),
                         "+f"(acc[i][j][3])
                       : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]),
                         "r"(bf[j][0]), "r"(bf[j][1]));
    }
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
  // Fragment: acc[i][j][0..1] row wm+16i+lane/4, cols wn+8j+2(lane%4)+{0,1}; [2..3] row + 8.
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int col = n0 + wn + j * 8 + (lane & 3) * 2;
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int row = m0 + wm + i * 16 + (lane >> 2) + h * 8;
        if (row < M && col < N) {
          uint16_t lo, hi;
          asm(CVT_OUT " %0, %1;" : "=h"(lo) : "f"(acc[i][j][2 * h]));
          asm(CVT_OUT " %0, %1;" : "=h"(hi) : "f"(acc[i][j][2 * h + 1]));
          *(uint32_t *)(C + (size_t)row * N + col) = (uint32_t)lo | ((uint32_t)hi << 16);
        }
      }
    }
}
