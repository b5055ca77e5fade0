// batch_normalization.cu: training-mode batch norm of x (N, C) over the rows, the `cuda`
// implementation: per channel the mean and biased variance in fp32, y = x * scale + shift with
// scale = gamma * rsqrt(var + eps), shift = beta - mean * scale, rounded once to DTYPE.
// Two kernels over the same grid (column tiles x R row ranges of rows_per rows):
// - batch_normalization_stats: a block covers 32 16-byte column vectors (a warp's width: each row
//   read is one coalesced 512-byte access in fp32, 256 in fp16) and TY = BLOCK / 32 rows at a
//   time, each thread issuing UNROLL rows' loads before adding. It sums d = x - K and d^2 per
//   column, K = x[0, c] (the shifted-data variance: no cancellation when |mean| >> std), reduces
//   the TY partial sums in shared memory and stores them as row r of partials (2, R, C).
// - batch_normalization_apply: each block first sums the R partial rows of its columns (split over
//   its TY thread rows, then shared memory), so every block has the channel's exact totals:
//   mean = K + S1 / N, var = S2 / N - (S1 / N)^2; then it normalises its row range. With REV its
//   row ranges run last-first: the stats kernel read those last, so they are the likeliest to be
//   in L2 still (all of x fits in the H200's 60 MB L2 for fp16/bf16 at every N of the grid).
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
    for (long long r = r_begin + ty; r < r_end; r += BN_TY * UNROLL) {
      tb_vec<DTYPE> v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const long long rr = r + u * BN_TY;
        v[u] = rr < r_end ? tb_load_part(x + rr * C, c0, C, vec_ok) : kv; // kv: d = 0
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
        for (int k = 0; k < BN_V; ++k) {
          const float d = tb_to_float(v[u].v[k]) - kf[k];
          s1[k] += d;
          s2[k] = fmaf(d, d, s2[k]);
        }
      }
    }
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

extern "C" __global__ void __launch_bounds__(BLOCK)
batch_normalization_apply(const DTYPE *__restrict__ x, const DTYPE *__restrict__ gamma, const DTYPE *__restrict__ beta,
                          const float *__restrict__ partials, DTYPE *__restrict__ y, int N, int C, int rows_per,
                          float eps, int rev) {
  __shared__ float red[BN_TY][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int c0 = (blockIdx.x * 32 + tx) * BN_V;
  const int R = gridDim.y;
  const int ry = rev ? R - 1 - blockIdx.y : blockIdx.y;
  const bool vec_ok = C % BN_V == 0 && tb_aligned16(x) && tb_aligned16(y);
  float s1[BN_V], s2[BN_V];
#pragma unroll
  for (int k = 0; k < BN_V; ++k) s1[k] = s2[k] = 0.0f;
  if (c0 < C) {
    for (int r = ty; r < R; r += BN_TY) {
#pragma unroll
      for (int k = 0; k < BN_V; ++k) {
        if (c0 + k < C) {
          s1[k] += partials[(long long)r * C + c0 + k];
          s2[k] += partials[((long long)R + r) * C + c0 + k];
        }
      }
    }
  }
  bn_block_sum(s1, red);
  bn_block_sum(s2, red);
  if (c0 >= C) return; // after the block's barriers
  const tb_vec<DTYPE> kv = tb_load_part(x, c0, C, vec_ok);
  const tb_vec<DTYPE> gv = tb_load_part(gamma, c0, C, vec_ok && tb_aligned16(gamma));
  const tb_vec<DTYPE> bv = tb_load_part(beta, c0, C, vec_ok && tb_aligned16(beta));
  float scale[BN_V], shift[BN_V];
  const float inv_n = 1.0f / (float)N;
#pragma unroll
  for (int k = 0; k < BN_V; ++k) {
    const float md = s1[k] * inv_n; // mean - K
    const float var = fmaxf(s2[k] * inv_n - md * md, 0.0f);
    scale[k] = tb_to_float(gv.v[k]) * rsqrtf(var + eps);
    shift[k] = tb_to_float(bv.v[k]) - (tb_to_float(kv.v[k]) + md) * scale[k];
  }
  const long long r_begin = (long long)ry * rows_per;
  const long long r_end = min((long long)N, r_begin + rows_per);
  for (long long r = r_begin + ty; r < r_end; r += BN_TY * UNROLL) {
    tb_vec<DTYPE> v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long rr = r + u * BN_TY;
      if (rr < r_end) v[u] = tb_load_part(x + rr * C, c0, C, vec_ok);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long rr = r + u * BN_TY;
      if (rr < r_end) {
        tb_vec<DTYPE> o;
#pragma unroll
        for (int k = 0; k < BN_V; ++k) o.v[k] = tb_from_float<DTYPE>(fmaf(tb_to_float(v[u].v[k]), scale[k], shift[k]));
        tb_store_part(y + rr * C, c0, C, vec_ok, o);
      }
    }
  }
}
