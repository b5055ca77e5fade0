// tb_mma16.cuh: the fp16 tensor-core pieces the attention kernels share (flash_attention.cu,
// block_sparse_attention.cu): 16-byte cp.async with zero fill, row tiles of a (rows, D) half
// matrix into shared memory at a padded stride, ldmatrix (plain and transposed), mma.sync
// m16n8k16 with fp32 accumulators, fp32 pairs to f16x2, and 2^x on the SFU.
// Self-contained (NVRTC has no system headers): it declares uint16_t and uint32_t for its includers.
#ifndef TB_MMA16_CUH
#define TB_MMA16_CUH
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;

// 16 bytes global -> shared, asynchronously; pred false writes zeros (src is not read)
__device__ __forceinline__ void tb_cp16(uint32_t dst, const void *src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0));
}

// rows [r0, r0 + R) of an (n, D) half matrix into shared rows 0..R-1 of stride D + 8 halves (the
// padding puts each ldmatrix phase on 32 distinct banks), zero past n; THREADS threads share it
template <int R, int THREADS, int D>
__device__ __forceinline__ void tb_load_rows16(uint16_t *dst, const uint16_t *src, int r0, int n, int tid) {
  constexpr int CH = D / 8, P = D + 8;
#pragma unroll
  for (int i = 0; i < (R * CH + THREADS - 1) / THREADS; ++i) {
    const int c = tid + i * THREADS;
    if (R * CH % THREADS == 0 || c < R * CH) {
      const int r = c / CH, ch = c % CH;
      const bool ok = r0 + r < n;
      tb_cp16((uint32_t)__cvta_generic_to_shared(dst + r * P + ch * 8),
              ok ? src + (long long)(r0 + r) * D + ch * 8 : src, ok);
    }
  }
}

__device__ __forceinline__ void tb_ldsm_x4(uint32_t *r, const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"((uint32_t)__cvta_generic_to_shared(p)));
}

__device__ __forceinline__ void tb_ldsm_x4_t(uint32_t *r, const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"((uint32_t)__cvta_generic_to_shared(p)));
}

// c (16 x 8, fp32) += a (16 x 16, f16, row) . b (16 x 8, f16, col)
__device__ __forceinline__ void tb_mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t tb_pack_f16x2(float lo, float hi) { // lower half = lo
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float tb_exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#endif
