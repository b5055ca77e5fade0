// matmul_ref.cu: the simple, obviously right pieces of the matmul operators.
//   matmul_ref  C = A @ B, row-major, one output element per thread from 16 x 16 shared-memory
//               tiles, fp32 accumulation with plain fp32 FMAs (no tensor cores, no TF32); the
//               result is rounded once to OUT_DT (fp8: through bf16 first, as the benchmark's
//               torch._scaled_mm(out_dtype=bf16).to(float8_e4m3fn) does).
//   cast        out[i] = (OUT_DT) in[i] (fp8 inputs are generated in fp32 and cast, as in
//               TileBench; bf16 -> fp8 finishes the fp8 `lib` path)
//   transpose   out (C, R) = in (R, C)^T for ELEM_BYTES 1, 2 or 4, batched over blockIdx.z
//               (B^T for the kernels that read B K-major)
// Defines: IN_DT, OUT_DT: 0 fp32, 1 fp16, 2 bf16, 3 fp8 e4m3; ELEM_BYTES for transpose.
// Self-contained: 16- and 8-bit values are raw bits converted with PTX (no CUDA headers).
#ifndef IN_DT
#define IN_DT 0
#endif
#ifndef OUT_DT
#define OUT_DT IN_DT
#endif
#ifndef ELEM_BYTES
#define ELEM_BYTES 2
#endif

typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;

#if IN_DT == 0
typedef float in_t;
#elif IN_DT == 3
typedef uint8_t in_t;
#else
typedef uint16_t in_t;
#endif
#if OUT_DT == 0
typedef float out_t;
#elif OUT_DT == 3
typedef uint8_t out_t;
#else
typedef uint16_t out_t;
#endif

__device__ __forceinline__ float in_to_float(in_t v) {
#if IN_DT == 0
  return v;
#elif IN_DT == 1
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
#elif IN_DT == 2
  return __uint_as_float((uint32_t)v << 16);
#else
  uint32_t h2;
  uint16_t h;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((uint16_t)v));
  h = (uint16_t)(h2 & 0xFFFF);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#endif
}

__device__ __forceinline__ out_t float_to_out(float x) {
#if OUT_DT == 0
  return x;
#elif OUT_DT == 1
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
#elif OUT_DT == 2
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
#else
  uint16_t h, pair;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  float xb = __uint_as_float((uint32_t)h << 16);
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(xb));
  return (uint8_t)(pair & 0xFF);
#endif
}

// grid (cdiv(N,16), cdiv(M,16), batch), block (16, 16)
extern "C" __global__ void matmul_ref(const in_t *A, const in_t *B, out_t *C, int M, int N, int K,
                                      long long sA, long long sB, long long sC) {
  __shared__ float As[16][16], Bs[16][17];
  A += (size_t)blockIdx.z * sA;
  B += (size_t)blockIdx.z * sB;
  C += (size_t)blockIdx.z * sC;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[ty][tx] = (row < M && k0 + tx < K) ? in_to_float(A[(size_t)row * K + k0 + tx]) : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? in_to_float(B[(size_t)(k0 + ty) * N + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; kk++) acc = __fmaf_rn(As[ty][kk], Bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = float_to_out(acc);
}

// grid-stride elementwise cast
extern "C" __global__ void cast(const in_t *in, out_t *out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    out[i] = float_to_out(in_to_float(in[i]));
}

#if ELEM_BYTES == 1
typedef uint8_t elem_t;
#elif ELEM_BYTES == 2
typedef uint16_t elem_t;
#else
typedef uint32_t elem_t;
#endif

// out (cols, rows) = in (rows, cols)^T; grid (cdiv(cols,32), cdiv(rows,32), batch), block (32, 8)
extern "C" __global__ void transpose(const elem_t *in, elem_t *out, int rows, int cols) {
  __shared__ elem_t tile[32][33];
  const size_t plane = (size_t)rows * cols;
  in += blockIdx.z * plane;
  out += blockIdx.z * plane;
  const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += 8) {
    int r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = in[(size_t)r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += 8) {
    int c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[(size_t)c * rows + r] = tile[threadIdx.x][i];
  }
}
