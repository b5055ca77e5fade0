// matmul_int8_ref.cu: the reference of matmul_int8, written for obviousness: C (M, N) int32 =
// A (M, K) int8 @ Bu (K, N), Bu[i * K4 + k, n] = ((B[k, n] >> 2i) & 3) - 1 with B (K4, N) uint8,
// K4 = K / 4 (the slice-major layout of OPERATORS.md). 16 x 16 tiles of A and of decoded Bu in
// shared memory, one output per thread, int32 sums (exact: |C| <= 128 K). Kernel: matmul_int8_ref,
// grid (cdiv(N, 16), cdiv(M, 16)), block (16, 16).
extern "C" __global__ void matmul_int8_ref(const signed char *a, const unsigned char *b, int *c, int M, int N,
                                           int K) {
  __shared__ int as[16][17], bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  const int k4 = K / 4;
  int acc = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < M && ka < K) ? (int)a[(long long)row * K + ka] : 0;
    int v = 0;
    if (col < N && kb < K) {
      const int slice = kb / k4, r = kb - slice * k4;
      v = (int)((b[(long long)r * N + col] >> (2 * slice)) & 3) - 1;
    }
    bs[ty][tx] = v;
    __syncthreads();
    for (int j = 0; j < 16; j++) acc += as[ty][j] * bs[j][tx];
    __syncthreads();
  }
  if (row < M && col < N) c[(long long)row * N + col] = acc;
}
