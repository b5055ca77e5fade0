// batch_normalization.cu: training-mode batch norm of x (N, C) over the rows, the `cuda`
// implementation: per channel the mean and biased variance in fp32, y = x * scale + shift with
// scale = gamma * rsqrt(var + eps), shift = beta - mean * scale, rounded once to DTYPE.
// Three kernels; the first and the last over the same grid (column tiles x R row ranges of
// rows_per rows):
// - batch_normalization_stats: a block covers 32 16-byte column vectors (a warp's width: each row
//   read is one coalesced 512-byte access in fp32, 256 in fp16) and TY = BLOCK / 32 rows at a
//   time, each thread issuing UNROLL rows' loads before adding. It sums d = x - K and d^2 per
//   column, K = x[0, c] (the shifted-data variance: no cancellation when |mean| >> std), reduces
//   the TY partial sums in shared memory and stores them as row r of partials (2, R, C).
// - batch_normalization_finalize: a block per 32 channels, 32 thread rows each summing every 32nd
//   partial row (a warp reads 128 contiguous bytes a row), then shared memory: the channel's
//   totals, mean = K + S1 / N, var = S2 / N - (S1 / N)^2, and scale and shift into ss (2, C). The
//   totals are formed once per channel: the previous design had every apply block re-sum all R
//   partial rows of its columns, (tiles x R) x R x 256 columns x 8 bytes, 570 MB of L2 reads at
//   N >= 2112 in fp16 (R = 264), which held every fp16/bf16 case at 0.15-0.20 ms on the H200.
// - batch_normalization_apply: reads its columns' scale and shift, then normalises its row range
//   from the last rows to the first, the reverse of the order the statistics kernel read them:
//   the latest rows read are the likeliest to be in L2 still (all of x fits in the H200's 60 MB
//   L2 for fp16/bf16 at every N of the grid; fp32's 82 MB at N = 20000 partly). Its loads of x
//   are x's last use and go through __ldcs (evict-first) so that the lines already consumed, not
//   the rows still to come, make room for y. With REV the ranges also run last-first (blocks
//   beyond the first wave: WAVES > 1).
// Columns past C in a row's last vector are neither read nor written (tb_load_part/store_part).
// Defines: DTYPE, BLOCK (a multiple of 32, at most 1024), UNROLL. No define carries a case's size.
#include "tb_common.cuh"

constexpr int BN_V = tb_vec<DTYPE>::N;
constexpr int BN_TY = BLOCK / 32;

// Sums the TY rows of a[] (one value per column of the thread's vector, V of them) over the
// block's thread rows; returns the totals in every thread (red: TY x 33 floats).
__device__ __forceinline__ void bn_block_sum(float (&a)[BN_V], float (*red)[33]) {
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
#pragma unroll
  for (int k = 0; k < BN_V; ++k) {
    red[ty][tx] = a[k];
    __syncthreads();
    float t = 0.0f;
#pragma unroll 8
    for (int y = 0; y < BN_TY; ++y) t += red[y][tx];
    a[k] = t;
    __syncthreads();
  }
}

// A row range's sums for the thread's columns: rows r0, r0 + TY, ... below r_end, tb_U rows in
// flight. tb_FULL: the thread's vector is whole and 16-byte aligned (every case of the grid), one
// 16-byte load a row; otherwise element by element (tb_U = 1: the slow path is not unrolled, so
// that its registers do not set the kernel's).
template <bool tb_FULL, int tb_U>
__device__ __forceinline__ void bn_stats_rows(const DTYPE *__restrict__ x, int C, int c0, long long r0, long long r_end,
                                              const tb_vec<DTYPE> &kv, const float (&kf)[BN_V], float (&s1)[BN_V],
                                              float (&s2)[BN_V]) {
  for (long long r = r0; r < r_end; r += BN_TY * tb_U) {
    tb_vec<DTYPE> v[tb_U];
#pragma unroll
    for (int u = 0; u < tb_U; ++u) {
      const long long rr = r + u * BN_TY;
      if (tb_FULL) v[u] = rr < r_end ? tb_load_vec(x + rr * C + c0) : kv; // kv: d = 0
      else v[u] = rr < r_end ? tb_load_part(x + rr * C, c0, C, false) : kv;
    }
#pragma unroll
    for (int u = 0; u < tb_U; ++u) {
#pragma unroll
      for (int k = 0; k < BN_V; ++k) {
        const float d = tb_to_float(v[u].v[k]) - kf[k];
        s1[k] += d;
        s2[k] = fmaf(d, d, s2[k]);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
batch_normalization_stats(const DTYPE *__restrict__ x, float *__restrict__ partials, int N, int C, int rows_per) {
  __shared__ float red[BN_TY][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int c0 = (blockIdx.x * 32 + tx) * BN_V;
  const int R = gridDim.y;
  const bool vec_ok = C % BN_V == 0 && tb_aligned16(x);
  const long long r_begin = (long long)blockIdx.y * rows_per;
  const long long r_end = min((long long)N, r_begin + rows_per);
  float s1[BN_V], s2[BN_V], kf[BN_V];
#pragma unroll
  for (int k = 0; k < BN_V; ++k) s1[k] = s2[k] = kf[k] = 0.0f;
  if (c0 < C) {
    const tb_vec<DTYPE> kv = tb_load_part(x, c0, C, vec_ok); // row 0: the shift K
#pragma unroll
    for (int k = 0; k < BN_V; ++k) kf[k] = tb_to_float(kv.v[k]);
    if (vec_ok && c0 + BN_V <= C) bn_stats_rows<true, UNROLL>(x, C, c0, r_begin + ty, r_end, kv, kf, s1, s2);
    else bn_stats_rows<false, 1>(x, C, c0, r_begin + ty, r_end, kv, kf, s1, s2);
  }
  bn_block_sum(s1, red);
  bn_block_sum(s2, red);
  if (ty == 0 && c0 < C) {
#pragma unroll
    for (int k = 0; k < BN_V; ++k) {
      if (c0 + k < C) {
        partials[(long long)blockIdx.y * C + c0 + k] = s1[k];
        partials[((long long)R + blockIdx.y) * C + c0 + k] = s2[k];
      }
    }
  }
}

// The finalize kernel's block: 32 channels x BN_FY thread rows.
constexpr int BN_FY = 32;

extern "C" __global__ void __launch_bounds__(32 * BN_FY)
batch_normalization_finalize(const DTYPE *__restrict__ x, const DTYPE *__restrict__ gamma,
                             const DTYPE *__restrict__ beta, const float *__restrict__ partials,
                             float *__restrict__ ss, int N, int C, int R, float eps) {
  __shared__ float red[2][BN_FY][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int c = blockIdx.x * 32 + tx;
  float s1 = 0.0f, s2 = 0.0f;
  if (c < C) {
#pragma unroll 4
    for (int r = ty; r < R; r += BN_FY) {
      s1 += partials[(long long)r * C + c];
      s2 += partials[((long long)R + r) * C + c];
    }
  }
  red[0][ty][tx] = s1;
  red[1][ty][tx] = s2;
  __syncthreads();
  if (ty != 0 || c >= C) return;
  s1 = s2 = 0.0f;
#pragma unroll 8
  for (int y = 0; y < BN_FY; ++y) {
    s1 += red[0][y][tx];
    s2 += red[1][y][tx];
  }
  const float md = s1 / (float)N; // mean - K
  const float var = fmaxf(s2 / (float)N - md * md, 0.0f);
  const float scale = tb_to_float(gamma[c]) * rsqrtf(var + eps);
  ss[c] = scale;
  ss[C + c] = tb_to_float(beta[c]) - (tb_to_float(x[c]) + md) * scale;
}

// x's last read: ld.global.cs (evict-first in L1 and L2), 16 bytes.
__device__ __forceinline__ tb_vec<DTYPE> bn_load_last(const DTYPE *p) {
  const uint4 w = __ldcs(reinterpret_cast<const uint4 *>(p));
  tb_vec<DTYPE> r;
  *reinterpret_cast<uint4 *>(&r) = w;
  return r;
}

// y = x * scale + shift over rows [r_begin, r_end) for the thread's columns, in chunks of TY x
// tb_U rows from the last chunk to the first (the thread's row ty of each). tb_FULL as in
// bn_stats_rows.
template <bool tb_FULL, int tb_U>
__device__ __forceinline__ void bn_apply_rows(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, int C, int c0,
                                              long long r_begin, long long r_end, const float (&scale)[BN_V],
                                              const float (&shift)[BN_V]) {
  constexpr int STEP = BN_TY * tb_U;
  const int ty = threadIdx.x / 32;
  // not pipelined across chunks: NVRTC otherwise overlaps a chunk's stores with the next chunk's
  // loads in fp32 at 102 registers (2 blocks of 256 an SM instead of 4)
#pragma unroll 1
  for (long long base = r_begin + (r_end - r_begin - 1) / STEP * STEP; base >= r_begin; base -= STEP) {
    tb_vec<DTYPE> v[tb_U];
#pragma unroll
    for (int u = 0; u < tb_U; ++u) {
      const long long rr = base + ty + u * BN_TY;
      if (rr < r_end) v[u] = tb_FULL ? bn_load_last(x + rr * C + c0) : tb_load_part(x + rr * C, c0, C, false);
    }
#pragma unroll
    for (int u = 0; u < tb_U; ++u) {
      const long long rr = base + ty + u * BN_TY;
      if (rr < r_end) {
        tb_vec<DTYPE> o;
#pragma unroll
        for (int k = 0; k < BN_V; ++k) o.v[k] = tb_from_float<DTYPE>(fmaf(tb_to_float(v[u].v[k]), scale[k], shift[k]));
        if (tb_FULL) tb_store_vec(y + rr * C + c0, o);
        else tb_store_part(y + rr * C, c0, C, false, o);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
batch_normalization_apply(const DTYPE *__restrict__ x, const float *__restrict__ ss, DTYPE *__restrict__ y, int N,
                          int C, int rows_per, int rev) {
  const int c0 = (blockIdx.x * 32 + threadIdx.x % 32) * BN_V;
  const int R = gridDim.y;
  const int ry = rev ? R - 1 - blockIdx.y : blockIdx.y;
  const bool vec_ok = C % BN_V == 0 && tb_aligned16(x) && tb_aligned16(y);
  if (c0 >= C) return;
  float scale[BN_V], shift[BN_V];
#pragma unroll
  for (int k = 0; k < BN_V; ++k) {
    const bool in = c0 + k < C;
    scale[k] = in ? ss[c0 + k] : 0.0f;
    shift[k] = in ? ss[C + c0 + k] : 0.0f;
  }
  const long long r_begin = (long long)ry * rows_per;
  const long long r_end = min((long long)N, r_begin + rows_per);
  if (vec_ok && c0 + BN_V <= C) bn_apply_rows<true, UNROLL>(x, y, C, c0, r_begin, r_end, scale, shift);
  else bn_apply_rows<false, 1>(x, y, C, c0, r_begin, r_end, scale, shift);
}
