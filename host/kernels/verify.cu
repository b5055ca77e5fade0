/* verify.cu: tb.verify's device code: one pass comparing an output with its reference.
 * Dtypes from tb_host.cuh.
 *
 * Rule per element: |out - ref| <= atol + rtol*|ref| in double; NaN matches only NaN; an Inf
 * matches only the same Inf; integers with exact != 0 compare as int64 (no rounding). max_abs and
 * max_rel cover finite pairs (max_rel skips ref == 0).
 *
 * Determinism of the reported mismatches: block b owns the contiguous tiles [b*tpb, (b+1)*tpb), and
 * walks them in order; inside a tile, elements are in the order (slot round u, thread, lane), and
 * a block-wide ordered compaction appends each tile's mismatches to the block's list until it
 * holds K. tb_compare_finish then concatenates the block lists in block order and keeps the first
 * K: the K lowest indices, whatever the scheduling. Counts and maxima are order-free atomics.
 *
 * Kernels: tb_compare_<out>_<ref> for equal dtypes and every pair of float dtypes;
 *          tb_compare_finish. (The int64 poison is tensor.cu's tb_fill_pattern.) */
#include "tb_host.cuh" // u64, i64, u32 and the dtype traits dt_*

#define TB_COMPARE_THREADS 256
#define TB_COMPARE_ROUNDS 2 /* vector slots per thread per tile */

struct tb_mismatch { u64 index, got, expected; };   /* got/expected: double bits, or int64 */
struct tb_compare_header { u64 mismatches, max_abs, max_rel, nfirst; }; /* maxima: double bits */
/* Result buffer: header | first[K] | block_count[G] (u32, padded to 8 bytes) | block lists[G][K]. */

/* What a report stores for a value: the double's bits, or the integer itself. */
template <typename D, int F = D::is_float> struct report_bits;
template <typename D> struct report_bits<D, 1> {
  static __device__ __forceinline__ u64 of(typename D::bits b) { return (u64)__double_as_longlong(D::value(b)); }
};
template <typename D> struct report_bits<D, 0> {
  static __device__ __forceinline__ u64 of(typename D::bits b) { return (u64)D::integer(b); }
};

/* Exact integer comparison exists only for two integer dtypes. */
template <typename DO, typename DR, int BOTH_INT = (!DO::is_float && !DR::is_float)> struct exact_eq {
  static __device__ __forceinline__ bool eq(typename DO::bits, typename DR::bits) { return false; }
};
template <typename DO, typename DR> struct exact_eq<DO, DR, 1> {
  static __device__ __forceinline__ bool eq(typename DO::bits a, typename DR::bits b) {
    return DO::integer(a) == DR::integer(b);
  }
};

/* The largest relative error is kept as the pair (d, m) maximising d/m, compared by
 * cross-multiplication: no division on the per-element path. */
struct stats {
  double max_abs, rel_d, rel_m;
  __device__ __forceinline__ double max_rel() const { return rel_m > 0.0 ? rel_d / rel_m : 0.0; }
};

/* True when (got, expected) is a mismatch; folds finite pairs into the maxima. Equal values add
 * nothing to either maximum, so they return first (the common case costs one comparison). */
template <typename DO, typename DR>
__device__ __forceinline__ bool mismatch(typename DO::bits o, typename DR::bits r, double atol,
                                         double rtol, int exact, stats &s) {
  if (exact && exact_eq<DO, DR>::eq(o, r)) return false;
  const double a = DO::value(o), b = DR::value(r);
  if (!exact && a == b) return false; /* also equal infinities and +-0 */
  if (isnan(a) || isnan(b)) return !(isnan(a) && isnan(b));
  if (isinf(a) || isinf(b)) return true;
  const double d = fabs(a - b), m = fabs(b);
  s.max_abs = fmax(s.max_abs, d);
  if (m > 0.0 && d * s.rel_m > s.rel_d * m) { s.rel_d = d; s.rel_m = m; }
  if (exact) return true; /* not equal as int64 (the doubles may still agree) */
  return !(d <= atol + rtol * m);
}

/* ---- vector loads of E elements ------------------------------------------------------------- */
template <int BYTES> struct vec;
template <> struct vec<1> { typedef unsigned char t; };
template <> struct vec<2> { typedef unsigned short t; };
template <> struct vec<4> { typedef u32 t; };
template <> struct vec<8> { typedef uint2 t; };
template <> struct vec<16> { typedef uint4 t; };

template <typename B, int E> struct pack {
  union { typename vec<E * (int)sizeof(B)>::t q; B v[E]; };
};

template <typename B, int E>
__device__ __forceinline__ void load(pack<B, E> &p, const B *src, u64 first, u64 n, bool vectors) {
  if (vectors && first + E <= n) {
    p.q = *reinterpret_cast<const typename vec<E * (int)sizeof(B)>::t *>(src + first);
  } else {
#pragma unroll
    for (int k = 0; k < E; k++) p.v[k] = first + k < n ? src[first + k] : (B)0;
  }
}

/* Exclusive prefix sum over the block (blockDim.x a multiple of 32, at most 1024). */
__device__ __forceinline__ u32 block_exclusive_scan(u32 v, u32 *total, u32 *warp_sums) {
  const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  u32 x = v;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const u32 y = __shfl_up_sync(0xffffffffu, x, off);
    if (lane >= (u32)off) x += y;
  }
  __syncthreads(); /* warp_sums may still be read from a previous call */
  if (lane == 31) warp_sums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    u32 w = lane < nwarps ? warp_sums[lane] : 0u;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const u32 y = __shfl_up_sync(0xffffffffu, w, off);
      if (lane >= (u32)off) w += y;
    }
    if (lane < nwarps) warp_sums[lane] = w; /* inclusive over warps */
  }
  __syncthreads();
  *total = warp_sums[nwarps - 1];
  return (warp ? warp_sums[warp - 1] : 0u) + x - v;
}

static __device__ __forceinline__ tb_mismatch *first_list(void *res) {
  return reinterpret_cast<tb_mismatch *>(reinterpret_cast<char *>(res) + sizeof(tb_compare_header));
}
static __device__ __forceinline__ u32 *block_counts(void *res, u32 K) {
  return reinterpret_cast<u32 *>(reinterpret_cast<char *>(first_list(res)) + (u64)K * sizeof(tb_mismatch));
}
static __device__ __forceinline__ tb_mismatch *block_list(void *res, u32 K, u32 blocks, u32 b) {
  const u64 counts_bytes = ((u64)blocks * 4u + 7u) & ~7ull;
  return reinterpret_cast<tb_mismatch *>(reinterpret_cast<char *>(block_counts(res, K)) + counts_bytes) +
         (u64)b * K;
}

template <typename DO, typename DR>
__device__ void compare(const typename DO::bits *out, const typename DR::bits *ref, u64 n, double atol,
                        double rtol, int exact, int vectors, u64 tiles_per_block, void *res, u32 K) {
  typedef typename DO::bits BO;
  typedef typename DR::bits BR;
  constexpr int wider = sizeof(BO) > sizeof(BR) ? (int)sizeof(BO) : (int)sizeof(BR);
  constexpr int E = 16 / wider; /* elements per slot: one 16-byte load of the wider tensor */
  constexpr int R = TB_COMPARE_ROUNDS;
  constexpr u64 tile_elems = (u64)TB_COMPARE_THREADS * R * E;
  __shared__ u32 s_warp[32];
  __shared__ u32 s_stored;
  __shared__ double s_abs[32], s_rel[32];
  __shared__ u64 s_cnt[32];

  if (threadIdx.x == 0) s_stored = 0;
  __syncthreads();
  tb_mismatch *mine = block_list(res, K, gridDim.x, blockIdx.x);
  stats st = {0.0, 0.0, 1.0};
  u64 count = 0;
  const u64 tile_begin = (u64)blockIdx.x * tiles_per_block;
  const u64 ntiles = (n + tile_elems - 1) / tile_elems;
  const u64 tile_end = tile_begin + tiles_per_block < ntiles ? tile_begin + tiles_per_block : ntiles;

  for (u64 tile = tile_begin; tile < tile_end; tile++) {
    const u64 tile_first = tile * tile_elems + (u64)threadIdx.x * E;
    pack<BO, E> o[R];
    pack<BR, E> r[R];
#pragma unroll
    for (int u = 0; u < R; u++) {
      load<BO, E>(o[u], out, tile_first + (u64)u * TB_COMPARE_THREADS * E, n, vectors);
      load<BR, E>(r[u], ref, tile_first + (u64)u * TB_COMPARE_THREADS * E, n, vectors);
    }
    u32 masks = 0; /* bit u*E + k: element k of round u mismatches */
#pragma unroll
    for (int u = 0; u < R; u++) {
      const u64 first = tile_first + (u64)u * TB_COMPARE_THREADS * E;
#pragma unroll
      for (int k = 0; k < E; k++)
        if (first + k < n && mismatch<DO, DR>(o[u].v[k], r[u].v[k], atol, rtol, exact, st))
          masks |= 1u << (u * E + k);
    }
    count += __popc(masks);
    /* Slow path, only while this block's list has room and the tile has a mismatch. */
    if (__syncthreads_or(masks != 0 && s_stored < K)) {
#pragma unroll 1
      for (int u = 0; u < R; u++) {
        const u32 mask = (masks >> (u * E)) & ((1u << E) - 1u);
        const u64 first = tile_first + (u64)u * TB_COMPARE_THREADS * E;
        u32 total;
        const u32 before = block_exclusive_scan(__popc(mask), &total, s_warp);
        const u32 base = s_stored;
        u32 pos = base + before;
        /* Re-read the few mismatching elements: indexing the register copies here would put
         * them in local memory on the fast path too. */
        for (int k = 0; k < E && pos < K; k++) {
          if (!(mask & (1u << k))) continue;
          tb_mismatch m;
          m.index = first + k;
          m.got = report_bits<DO>::of(out[m.index]);
          m.expected = report_bits<DR>::of(ref[m.index]);
          mine[pos++] = m;
        }
        __syncthreads(); /* everyone has read s_stored */
        if (threadIdx.x == 0) s_stored = base + total < K ? base + total : K;
        __syncthreads();
      }
    }
  }

  /* Block reduction of the count and maxima, then one atomic each. */
  double max_rel = st.max_rel();
  const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    count += __shfl_down_sync(0xffffffffu, count, off);
    st.max_abs = fmax(st.max_abs, __shfl_down_sync(0xffffffffu, st.max_abs, off));
    max_rel = fmax(max_rel, __shfl_down_sync(0xffffffffu, max_rel, off));
  }
  if (lane == 0) { s_cnt[warp] = count; s_abs[warp] = st.max_abs; s_rel[warp] = max_rel; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (u32 w = 1; w < blockDim.x / 32; w++) {
      count += s_cnt[w];
      st.max_abs = fmax(st.max_abs, s_abs[w]);
      max_rel = fmax(max_rel, s_rel[w]);
    }
    tb_compare_header *h = reinterpret_cast<tb_compare_header *>(res);
    if (count) atomicAdd(&h->mismatches, count);
    /* Non-negative doubles order like their bit patterns. */
    atomicMax(&h->max_abs, (u64)__double_as_longlong(st.max_abs));
    atomicMax(&h->max_rel, (u64)__double_as_longlong(max_rel));
    block_counts(res, K)[blockIdx.x] = s_stored;
  }
}

#define TB_COMPARE(on, DO, rn, DR)                                                              \
  extern "C" __global__ void __launch_bounds__(TB_COMPARE_THREADS, 4)                              \
  tb_compare_##on##_##rn(const DO::bits *out, const DR::bits *ref, u64 n, double atol,          \
                         double rtol, int exact, int vectors, u64 tiles_per_block, void *res,   \
                         u32 K) {                                                               \
    compare<DO, DR>(out, ref, n, atol, rtol, exact, vectors, tiles_per_block, res, K);          \
  }
#define TB_COMPARE_FLOAT_ROW(on, DO)                                                            \
  TB_COMPARE(on, DO, fp32, dt_fp32)                                                             \
  TB_COMPARE(on, DO, fp16, dt_fp16)                                                             \
  TB_COMPARE(on, DO, bf16, dt_bf16)                                                             \
  TB_COMPARE(on, DO, fp8_e4m3, dt_fp8_e4m3)

TB_COMPARE_FLOAT_ROW(fp32, dt_fp32)
TB_COMPARE_FLOAT_ROW(fp16, dt_fp16)
TB_COMPARE_FLOAT_ROW(bf16, dt_bf16)
TB_COMPARE_FLOAT_ROW(fp8_e4m3, dt_fp8_e4m3)
TB_COMPARE(int8, dt_int8, int8, dt_int8)
TB_COMPARE(uint8, dt_uint8, uint8, dt_uint8)
TB_COMPARE(int32, dt_int32, int32, dt_int32)
TB_COMPARE(int64, dt_int64, int64, dt_int64)

/* One block: concatenates the per-block lists in block order into first[0..K). */
extern "C" __global__ void tb_compare_finish(void *res, u32 blocks, u32 K) {
  __shared__ u32 s_warp[32];
  tb_mismatch *dst = first_list(res);
  const u32 *counts = block_counts(res, K);
  u32 placed = 0;
  for (u32 b0 = 0; b0 < blocks && placed < K; b0 += blockDim.x) {
    const u32 b = b0 + threadIdx.x;
    const u32 c = b < blocks ? counts[b] : 0u;
    u32 total;
    const u32 at = placed + block_exclusive_scan(c, &total, s_warp);
    if (c) {
      const tb_mismatch *src = block_list(res, K, blocks, b);
      for (u32 j = 0; j < c && at + j < K; j++) dst[at + j] = src[j];
    }
    placed += total; /* uniform: every thread saw the same total */
  }
  if (threadIdx.x == 0) reinterpret_cast<tb_compare_header *>(res)->nfirst = placed < K ? placed : K;
}
