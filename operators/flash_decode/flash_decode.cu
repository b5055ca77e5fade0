// flash_decode.cu: flash-decoding's stage 2, out[b, h, :] = sum_s w_s * mid_o[b, h, s, :] /
// (sum_s w_s + 1e-10) with w_s = exp(lse[b, h, s] - max_s lse[b, h, s]) over the nb =
// min(ceil(b_seqlen[b] / block_seq), num_blocks) blocks of batch row b (the `cuda` implementation).
//
// Why split: the grid has only batch x heads = 16 (b, h) rows of 16 to 320 blocks of head_dim
// floats (at most 2.6 MB in all), so a CTA per (b, h) would leave 116 of 132 SMs idle and pull
// 160 KB through each of the other 16. The blocks of each (b, h) are split over S = gridDim.x
// CTAs of `chunk` blocks (split-K over the KV length; the plan picks chunk so that a CTA loads
// its whole share in one pass when PASSES = 1).
//
// One kernel, no second launch: each CTA reduces its share to a partial (m_c, l_c, acc_c[D])
// with fp32 statistics (m = running max of lse, l = sum of exp(lse - m), acc = the weighted sum
// rescaled whenever m rises), stores it, and the last CTA of its (b, h) to finish (a global
// counter per (b, h), the threadFenceReduction pattern) combines the S partials:
// out = sum_c e^(m_c - M) acc_c / (sum_c e^(m_c - M) l_c + 1e-10), M = max_c m_c, then resets the
// counter to 0 for the next launch (graph replays included). S = 1 writes out directly.
//
// Within a CTA: TC threads cover a row (D / VEC 16-byte vectors, VEC = 4 when head_dim % 4 == 0,
// else scalars; TC = min(32, D / VEC), NCT vectors per thread), BLOCK / TC row lanes take rows
// RL apart, and each thread issues the loads of UNROLL rows (and their lse) before using any:
// with PASSES = 1 a CTA's share is in flight at once (the cases are latency-bound: at most
// 2.6 MB). Row lanes merge through shared memory. mid_o must be 16-byte aligned (device
// allocations are) when VEC = 4.
// Defines: HEAD_DIM (the accumulators live in registers: NCT x VEC per thread), BLOCK, UNROLL.
// Kernel: flash_decode_cuda(mid_o, lse, b_seqlen, out, part, count, heads, num_blocks,
// block_seq, chunk); grid (S, batch x heads), block BLOCK; part: S x (HEAD_DIM + 2) floats per
// (b, h) (unused when S = 1), count: batch x heads ints, zero before the first launch.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#define FD_VEC ((HEAD_DIM % 4 == 0) ? 4 : 1)
#define FD_NC (HEAD_DIM / FD_VEC)                 // vectors per row
#define FD_TC (FD_NC < 32 ? FD_NC : 32)           // threads per row
#define FD_NCT ((FD_NC + FD_TC - 1) / FD_TC)      // vectors per thread
#define FD_RL (BLOCK / FD_TC)                     // row lanes
#define FD_MAXS 512                               // splits per (b, h) the combine takes (the plan keeps S <= this)

struct fd_vec { float x[FD_VEC]; };

// Block-wide max / sum of one value per thread (warp shuffles, then a warp over the warps'
// results); every thread gets the result. red: 32 floats of shared memory. Barriers inside.
__device__ __forceinline__ float fd_block_max(float v, float *red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads(); // red may still be read by the previous call
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < (BLOCK + 31) / 32 ? red[threadIdx.x & 31] : -INFINITY;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float fd_block_sum(float v, float *red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = (threadIdx.x & 31) < (BLOCK + 31) / 32 ? red[threadIdx.x & 31] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ fd_vec fd_load(const float *p) {
  fd_vec v;
#if HEAD_DIM % 4 == 0
  const float4 q = __ldg(reinterpret_cast<const float4 *>(p));
  v.x[0] = q.x; v.x[1] = q.y; v.x[2] = q.z; v.x[3] = q.w;
#else
  v.x[0] = __ldg(p);
#endif
  return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
flash_decode_cuda(const float *__restrict__ mid_o, const float *__restrict__ lse, const int *__restrict__ b_seqlen,
                  float *__restrict__ out, float *__restrict__ part, int *__restrict__ count, int heads,
                  int num_blocks, int block_seq, int chunk) {
  __shared__ float sm_acc[FD_RL][HEAD_DIM];
  __shared__ float sm_m[FD_RL], sm_l[FD_RL], sm_w[FD_MAXS > FD_RL ? FD_MAXS : FD_RL];
  __shared__ float sm_l2[FD_MAXS], sm_red[32];
  __shared__ int sm_last;
  const int bh = blockIdx.y, b = bh / heads, s = blockIdx.x, S = gridDim.x;
  const int tid = threadIdx.x, rl = tid / FD_TC, tc = tid % FD_TC;
  const bool lane_ok = rl < FD_RL; // BLOCK % TC threads at the end have no row lane
  const int len = __ldg(b_seqlen + b);
  const int nb = min(len <= 0 ? 0 : (len - 1) / block_seq + 1, num_blocks);
  const int r0 = min(s * chunk, nb), r1 = min(r0 + chunk, nb);
  const float *rows = mid_o + (long long)bh * num_blocks * HEAD_DIM;
  const float *lrow = lse + (long long)bh * num_blocks;

  float m = -INFINITY, l = 0.0f, acc[FD_NCT][FD_VEC];
#pragma unroll
  for (int c = 0; c < FD_NCT; ++c)
#pragma unroll
    for (int j = 0; j < FD_VEC; ++j) acc[c][j] = 0.0f;

  for (int base = r0; base < r1; base += FD_RL * UNROLL) {
    fd_vec v[UNROLL][FD_NCT];
    float e[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { // every load of the pass before any arithmetic
      const int r = base + u * FD_RL + rl;
      const bool ok = lane_ok && r < r1;
      e[u] = ok ? __ldg(lrow + r) : -INFINITY;
#pragma unroll
      for (int c = 0; c < FD_NCT; ++c) {
        const int col = tc + c * FD_TC;
        if (ok && col < FD_NC) v[u][c] = fd_load(rows + (long long)r * HEAD_DIM + col * FD_VEC);
        else
#pragma unroll
          for (int j = 0; j < FD_VEC; ++j) v[u][c].x[j] = 0.0f;
      }
    }
    float mx = m;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) mx = fmaxf(mx, e[u]);
    if (mx == -INFINITY) continue; // no row of this pass for this thread
    const float sc = expf(m - mx); // m = -inf: 0, and acc, l are 0 anyway
    l *= sc;
#pragma unroll
    for (int c = 0; c < FD_NCT; ++c)
#pragma unroll
      for (int j = 0; j < FD_VEC; ++j) acc[c][j] *= sc;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const float w = expf(e[u] - mx); // rows past r1: exp(-inf) = 0
      l += w;
#pragma unroll
      for (int c = 0; c < FD_NCT; ++c)
#pragma unroll
        for (int j = 0; j < FD_VEC; ++j) acc[c][j] = fmaf(w, v[u][c].x[j], acc[c][j]);
    }
    m = mx;
  }

  // ---- merge the row lanes: M_c = max m, weights e^(m_rl - M_c) ----
  if (lane_ok) {
    if (tc == 0) { sm_m[rl] = m; sm_l[rl] = l; }
#pragma unroll
    for (int c = 0; c < FD_NCT; ++c) {
      const int col = tc + c * FD_TC;
      if (col < FD_NC)
#pragma unroll
        for (int j = 0; j < FD_VEC; ++j) sm_acc[rl][col * FD_VEC + j] = acc[c][j];
    }
  }
  __syncthreads();
  float mc = -INFINITY;
  for (int r = 0; r < FD_RL; ++r) mc = fmaxf(mc, sm_m[r]);
  if (tid < FD_RL) sm_w[tid] = sm_m[tid] == -INFINITY ? 0.0f : expf(sm_m[tid] - mc);
  __syncthreads();
  const float lc = fd_block_sum(tid < FD_RL ? sm_w[tid] * sm_l[tid] : 0.0f, sm_red);
  if (S == 1) { // the CTA saw every block: M_c is the row's max
    for (int d = tid; d < HEAD_DIM; d += BLOCK) {
      float a = 0.0f;
      for (int r = 0; r < FD_RL; ++r) a = fmaf(sm_w[r], sm_acc[r][d], a);
      out[(long long)bh * HEAD_DIM + d] = a / (lc + 1e-10f);
    }
    return;
  }

  // ---- S > 1: store the partial, the last CTA of (b, h) combines ----
  float *pacc = part + (long long)bh * S * (HEAD_DIM + 2); // S rows of HEAD_DIM, then S (m, l) pairs
  float *pml = pacc + (long long)S * HEAD_DIM;
  for (int d = tid; d < HEAD_DIM; d += BLOCK) {
    float a = 0.0f;
    for (int r = 0; r < FD_RL; ++r) a = fmaf(sm_w[r], sm_acc[r][d], a);
    pacc[(long long)s * HEAD_DIM + d] = a;
  }
  if (tid == 0) { pml[2 * s] = mc; pml[2 * s + 1] = lc; }
  __threadfence(); // this CTA's partial is visible device-wide before it counts itself done
  __syncthreads();
  if (tid == 0) sm_last = atomicAdd(count + bh, 1) == S - 1;
  __syncthreads();
  if (!sm_last) return;
  __threadfence();
  if (tid == 0) count[bh] = 0; // ready for the next launch: every other CTA of (b, h) has counted
  // the S partials' (m, l) pairs from L2 (__ldcg: never a stale L1 line), M = their max
  float pm = -INFINITY;
  for (int c = tid; c < S; c += BLOCK) {
    sm_w[c] = __ldcg(pml + 2 * c);
    sm_l2[c] = __ldcg(pml + 2 * c + 1);
    pm = fmaxf(pm, sm_w[c]);
  }
  const float mall = fd_block_max(pm, sm_red);
  float pl = 0.0f;
  for (int c = tid; c < S; c += BLOCK) { // own entries only: no barrier needed before the rewrite
    const float w = sm_w[c] == -INFINITY ? 0.0f : expf(sm_w[c] - mall);
    sm_w[c] = w;
    pl = fmaf(w, sm_l2[c], pl);
  }
  const float lall = fd_block_sum(pl, sm_red); // its barriers also publish sm_w
  for (int d = tid; d < HEAD_DIM; d += BLOCK) {
    float a = 0.0f;
#pragma unroll 8
    for (int c = 0; c < S; ++c) a = fmaf(sm_w[c], __ldcg(pacc + (long long)c * HEAD_DIM + d), a);
    out[(long long)bh * HEAD_DIM + d] = a / (lall + 1e-10f);
  }
}
