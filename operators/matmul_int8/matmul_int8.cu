// matmul_int8.cu: the first step of matmul_int8's `cuda` and `lib` plans. The int8 tensor-core
// paths (wgmma s8 in gemm_wgmma.cu with DT 4; cuBLASLt's IMMA) read B only K-major, so B (K4, N)
// uint8, four 2-bit fields a byte, is unpacked once into Bt (N, K) int8 = Bu^T:
//   Bt[n, i * K4 + k] = ((B[k, n] >> 2i) & 3) - 1          (K4 = K / 4, OPERATORS.md 28)
// One block per 64 k-rows x 64 columns of B: the 4 KiB tile is read with 16-byte loads into
// shared memory, then each of its four fields is written as 64 rows of 64 contiguous bytes of Bt,
// 16 bytes per thread. Tiles at the edges, or where K4 is not a multiple of 16 (16-byte alignment
// of Bt's rows), go byte by byte. Reads 1 byte and writes 4 per element of B: memory-bound.
// Kernel: unpack_bt(B, Bt, N, K4), grid (cdiv(N, 64), cdiv(K4, 64)), block 256.
typedef unsigned int uint32_t;

extern "C" __global__ void __launch_bounds__(256) unpack_bt(const unsigned char *__restrict__ b,
                                                            signed char *__restrict__ bt, int N, int K4) {
  __shared__ unsigned char t[64][64 + 16]; // t[k][n]; 80-byte rows keep 16-byte chunks aligned
  const int tid = threadIdx.x;
  const int n0 = blockIdx.x * 64, k0 = blockIdx.y * 64;
  const long long K = 4LL * K4;
  const bool full = n0 + 64 <= N && k0 + 64 <= K4;
  { // load: row tid / 4, 16 columns from (tid % 4) * 16
    const int r = tid >> 2, c = (tid & 3) * 16;
    const unsigned char *src = b + (long long)(k0 + r) * N + n0 + c;
    if (full && (N & 15) == 0) {
      *(uint4 *)&t[r][c] = *(const uint4 *)src;
    } else {
      for (int j = 0; j < 16; j++)
        t[r][c + j] = (k0 + r < K4 && n0 + c + j < N) ? src[j] : 0;
    }
  }
  __syncthreads();
  // write: row n0 + tid / 4 of Bt, k from (tid % 4) * 16, for each field i
  const int r = tid >> 2, c = (tid & 3) * 16;
  const bool vec = full && (K4 & 15) == 0;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    signed char *dst = bt + (long long)(n0 + r) * K + (long long)i * K4 + k0 + c;
    if (vec) {
      uint32_t w[4];
#pragma unroll
      for (int q = 0; q < 4; q++) {
        uint32_t x = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const uint32_t v = (uint32_t)(((t[c + 4 * q + j][r] >> (2 * i)) & 3) - 1) & 0xFF;
          x |= v << (8 * j);
        }
        w[q] = x;
      }
      *(uint4 *)dst = make_uint4(w[0], w[1], w[2], w[3]);
    } else if (n0 + r < N) {
      for (int j = 0; j < 16; j++)
        if (k0 + c + j < K4) dst[j] = (signed char)(((t[c + j][r] >> (2 * i)) & 3) - 1);
    }
  }
}
