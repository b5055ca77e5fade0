// tb_common.cuh: device helpers shared by every operator kernel. Handed to NVRTC as a header for
// each operator compile (`#include "tb_common.cuh"`), so kernel sources stay short and agree on
// how dtypes convert, how 16-byte accesses are made and how reductions combine.
//
//   dtypes      int8_t.. typedefs under NVRTC; tb_to_float(x) for float, __half, __nv_bfloat16,
//               __nv_fp8_e4m3, int8_t, uint8_t, int32_t; tb_from_float<T>(f) (round to nearest
//               even; integers saturate); tb_round<T>(f) = the float value of tb_from_float<T>(f)
//   vectors     tb_vec<T>: 16 bytes of T (tb_vec<T>::N elements); tb_vec_zero<T>(); tb_load_vec /
//               tb_store_vec (one LDG.128 / STG.128; the address must be 16-byte aligned); tb_load_part /
//               tb_store_part (the N elements from e of a row of length len: one 16-byte access
//               when allowed and whole, element by element otherwise, elements >= len skipped)
//   reductions  tb_warp_sum / tb_warp_max; tb_group_sum / tb_group_max over GROUP consecutive
//               threads (GROUP a power of two, 32..1024) through shared memory; the argmax order
//               tb_argmax_better (NaN largest, ties to the lowest index) and tb_group_argmax
//   rows        tb_row_load<TPR, NV>(v, row, t, len, vec_ok, active): thread t's NV vectors of a
//               row (vector j at element (j * TPR + t) * N), zeros where absent, each vector moved
//               as 32-bit words; tb_row_load_elems the same through tb_load_part;
//               tb_for_elems<N>(active, e, len, f): f(k) for a vector's elements in the row;
//               tb_row_stream<T, STAGES>(x, rows, cols, smem, f) (sm_90+): persistent blocks stream
//               rows gridDim.x apart through STAGES shared-memory slots filled by cp.async.bulk
//               (one bulk copy per row, mbarrier completion) and call f(row_in_smem, row) on each
//               row; STAGES rows are in flight per block while f works
//   pointwise   tb_pointwise<NIN, T, BLOCK, UNROLL>(a, b, out, n, f): out[i] = f(a[i]) or
//               f(a[i], b[i]) for i < n with 16-byte accesses, UNROLL vectors in flight per
//               thread, a grid-stride loop over block-contiguous chunks, and a scalar path for
//               the tail and for pointers that are not 16-byte aligned.
//
// Operators pass their configuration as -D defines, so every template parameter and local name
// here carries the tb_ prefix: a define named T or BLOCK must not rewrite this header. (Nor may
// a kernel's element-type define be called T: NVRTC's own builtin header has `template <typename
// T>`, which -DT=float turns into a syntax error. Operators use DTYPE.)
#ifndef TB_COMMON_CUH
#define TB_COMMON_CUH

#if defined(__has_include)
#if !__has_include(<cuda_fp16.h>)
#error "tb_common.cuh needs the CUDA toolkit headers: pass -I<CUDA_HOME>/include to NVRTC"
#endif
#endif
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if defined(__CUDACC_RTC__)
// NVRTC has no <cstdint>; these match the LP64 definitions of the host compilers.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
#else
#include <cstdint>
#endif

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#define TB_DEVICE __device__ __forceinline__

// ---- dtypes ----------------------------------------------------------------------------------
template <typename tb_T> struct tb_is_integer { static constexpr bool value = false; };
template <> struct tb_is_integer<int8_t> { static constexpr bool value = true; };
template <> struct tb_is_integer<uint8_t> { static constexpr bool value = true; };
template <> struct tb_is_integer<int32_t> { static constexpr bool value = true; };
template <> struct tb_is_integer<int64_t> { static constexpr bool value = true; };

TB_DEVICE float tb_to_float(float v) { return v; }
TB_DEVICE float tb_to_float(__half v) { return __half2float(v); }
TB_DEVICE float tb_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
TB_DEVICE float tb_to_float(__nv_fp8_e4m3 v) { return static_cast<float>(v); }
TB_DEVICE float tb_to_float(int8_t v) { return static_cast<float>(v); }
TB_DEVICE float tb_to_float(uint8_t v) { return static_cast<float>(v); }
TB_DEVICE float tb_to_float(int32_t v) { return static_cast<float>(v); }

template <typename tb_T> TB_DEVICE tb_T tb_from_float(float v);
template <> TB_DEVICE float tb_from_float<float>(float v) { return v; }
template <> TB_DEVICE __half tb_from_float<__half>(float v) { return __float2half_rn(v); }
template <> TB_DEVICE __nv_bfloat16 tb_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
// fp8 e4m3: round to nearest even, saturating to +-448 (the constructor's __NV_SATFINITE).
template <> TB_DEVICE __nv_fp8_e4m3 tb_from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }
template <> TB_DEVICE int8_t tb_from_float<int8_t>(float v) {
  return static_cast<int8_t>(max(-128, min(127, __float2int_rn(v))));
}
template <> TB_DEVICE uint8_t tb_from_float<uint8_t>(float v) {
  return static_cast<uint8_t>(max(0, min(255, __float2int_rn(v))));
}
template <> TB_DEVICE int32_t tb_from_float<int32_t>(float v) { return __float2int_rn(v); }

// The value a float takes once stored in the dtype: where PyTorch rounds an intermediate.
template <typename tb_T> TB_DEVICE float tb_round(float v) { return tb_to_float(tb_from_float<tb_T>(v)); }

// ---- 16-byte vectors -------------------------------------------------------------------------
template <typename tb_T> struct alignas(16) tb_vec {
  static constexpr int N = 16 / sizeof(tb_T);
  tb_T v[N];
};

// Whole-struct accesses of an alignas(16) type compile to one LDG.E.128 / STG.E.128.
template <typename tb_T> TB_DEVICE tb_vec<tb_T> tb_load_vec(const tb_T *p) {
  return *reinterpret_cast<const tb_vec<tb_T> *>(p);
}

template <typename tb_T> TB_DEVICE void tb_store_vec(tb_T *p, const tb_vec<tb_T> &r) {
  *reinterpret_cast<tb_vec<tb_T> *>(p) = r;
}

template <typename tb_T> TB_DEVICE tb_vec<tb_T> tb_vec_zero() {
  tb_vec<tb_T> r;
#pragma unroll
  for (int k = 0; k < tb_vec<tb_T>::N; ++k) r.v[k] = tb_from_float<tb_T>(0.0f);
  return r;
}

TB_DEVICE bool tb_aligned16(const void *p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

// The N elements p[e .. e+N) of a row of length len, raw (N = tb_vec<T>::N). vec_ok: p + e is
// 16-byte aligned whenever e is a multiple of N. Elements at or past len are zero and not read.
template <typename tb_T>
TB_DEVICE tb_vec<tb_T> tb_load_part(const tb_T *p, long long e, long long len, bool vec_ok) {
  constexpr int tb_V = tb_vec<tb_T>::N;
  if (vec_ok && e + tb_V <= len) return tb_load_vec(p + e);
  tb_vec<tb_T> r;
#pragma unroll
  for (int k = 0; k < tb_V; ++k) r.v[k] = (e + k < len) ? p[e + k] : tb_from_float<tb_T>(0.0f);
  return r;
}

template <typename tb_T>
TB_DEVICE void tb_store_part(tb_T *p, long long e, long long len, bool vec_ok, const tb_vec<tb_T> &r) {
  constexpr int tb_V = tb_vec<tb_T>::N;
  if (vec_ok && e + tb_V <= len) {
    tb_store_vec(p + e, r);
    return;
  }
#pragma unroll
  for (int k = 0; k < tb_V; ++k)
    if (e + k < len) p[e + k] = r.v[k];
}

// ---- reductions ------------------------------------------------------------------------------
TB_DEVICE float tb_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

TB_DEVICE float tb_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduces v over each group of GROUP consecutive threads of the block; every thread of the
// group gets the result. For GROUP > 32, buf holds one float per warp of the block and each call
// needs its own buf (a second call on the same buf would race with readers of the first).
// Every thread of the block must call it (it has a barrier).
template <int tb_GROUP> TB_DEVICE float tb_group_sum(float v, float *buf) {
  static_assert(tb_GROUP >= 32 && tb_GROUP <= 1024 && (tb_GROUP & (tb_GROUP - 1)) == 0,
                "GROUP: a power of two in 32..1024");
  v = tb_warp_sum(v);
  if constexpr (tb_GROUP > 32) {
    constexpr int tb_W = tb_GROUP / 32;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    v = buf[(warp & ~(tb_W - 1)) + (lane & (tb_W - 1))];
#pragma unroll
    for (int o = tb_W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  return v;
}

template <int tb_GROUP> TB_DEVICE float tb_group_max(float v, float *buf) {
  static_assert(tb_GROUP >= 32 && tb_GROUP <= 1024 && (tb_GROUP & (tb_GROUP - 1)) == 0,
                "GROUP: a power of two in 32..1024");
  v = tb_warp_max(v);
  if constexpr (tb_GROUP > 32) {
    constexpr int tb_W = tb_GROUP / 32;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    v = buf[(warp & ~(tb_W - 1)) + (lane & (tb_W - 1))];
#pragma unroll
    for (int o = tb_W / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  return v;
}

// torch.argmax's order: NaN above everything (the first NaN wins), then the larger value, and
// among equal values the lower index.
TB_DEVICE bool tb_argmax_better(float av, int ai, float bv, int bi) {
  const bool an = av != av, bn = bv != bv;
  if (an != bn) return an;
  if (!an && av != bv) return av > bv;
  return ai < bi;
}

TB_DEVICE void tb_argmax_shfl(float &v, int &i, int offset) {
  const float ov = __shfl_xor_sync(0xffffffffu, v, offset);
  const int oi = __shfl_xor_sync(0xffffffffu, i, offset);
  if (tb_argmax_better(ov, oi, v, i)) {
    v = ov;
    i = oi;
  }
}

// As tb_group_sum, for (value, index) pairs; vbuf and ibuf hold one entry per warp.
template <int tb_GROUP> TB_DEVICE void tb_group_argmax(float &v, int &i, float *vbuf, int *ibuf) {
  static_assert(tb_GROUP >= 32 && tb_GROUP <= 1024 && (tb_GROUP & (tb_GROUP - 1)) == 0,
                "GROUP: a power of two in 32..1024");
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) tb_argmax_shfl(v, i, o);
  if constexpr (tb_GROUP > 32) {
    constexpr int tb_W = tb_GROUP / 32;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
      vbuf[warp] = v;
      ibuf[warp] = i;
    }
    __syncthreads();
    const int slot = (warp & ~(tb_W - 1)) + (lane & (tb_W - 1));
    v = vbuf[slot];
    i = ibuf[slot];
#pragma unroll
    for (int o = tb_W / 2; o > 0; o >>= 1) tb_argmax_shfl(v, i, o);
  }
}

// ---- rows --------------------------------------------------------------------------------------
// Thread t's share of a row of len elements held by a group of tb_TPR threads: vector j covers
// elements (j * TPR + t) * N .. + N (each warp access coalesced). Inactive rows and elements past
// len read nothing and are zero. Each vector moves as four 32-bit words: a tb_vec<__half> chosen
// between a load and zeros is otherwise merged 16 bits at a time (8 PRMT per vector), and int
// offsets spare the 64-bit compares of tb_load_part. On the H200 (2026-11-29, A/B against
// tb_row_load_elems, docs/PERFORMANCE.md) it took layernorm, rmsnorm and mean_reduction in
// fp16/bf16 to 0.85-0.90 of their time (geomean over the grids; layernorm's register kernel from
// 79 to 64-67 registers at K = 6656); fp32 within 1 % but for layernorm (below).
template <int tb_TPR, int tb_NV, typename tb_T>
TB_DEVICE void tb_row_load(tb_vec<tb_T> (&v)[tb_NV], const tb_T *row, int t, int len, bool vec_ok, bool active) {
  constexpr int tb_V = tb_vec<tb_T>::N;
#pragma unroll
  for (int j = 0; j < tb_NV; ++j) {
    const int e = (j * tb_TPR + t) * tb_V;
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (active && vec_ok && e + tb_V <= len) {
      w = *reinterpret_cast<const uint4 *>(row + e);
    } else if (active && e < len) {
      tb_vec<tb_T> p = tb_vec_zero<tb_T>();
#pragma unroll
      for (int k = 0; k < tb_V; ++k)
        if (e + k < len) p.v[k] = row[e + k];
      memcpy(&w, &p, 16);
    }
    memcpy(&v[j], &w, 16);
  }
}

// The same share, each vector through tb_load_part. Kept for layernorm's stream kernel, which
// ran 25-30 % slower with tb_row_load in fp16/bf16 from K = 8704 on (H200; same A/B), though it
// needed fewer registers and instructions (the cause was not found), and for layernorm in fp32
// (3.5-4.6 % faster at K = 2560 and 3072).
template <int tb_TPR, int tb_NV, typename tb_T>
TB_DEVICE void tb_row_load_elems(tb_vec<tb_T> (&v)[tb_NV], const tb_T *row, int t, int len, bool vec_ok, bool active) {
  constexpr int tb_V = tb_vec<tb_T>::N;
#pragma unroll
  for (int j = 0; j < tb_NV; ++j) {
    const int e = (j * tb_TPR + t) * tb_V;
    v[j] = (active && e < len) ? tb_load_part(row, e, len, vec_ok) : tb_vec_zero<tb_T>();
  }
}

// f(k) for the elements k = 0 .. N-1 of the vector at element e of a row of len elements that
// lie in the row (none when !active): one bound check for a whole vector, then an unmasked loop;
// the per-element check only for a row's last, partial vector. f sees the same k in the same
// order as a loop that checks every element (the row kernels' FULLVEC = 1 path).
template <int tb_N, typename tb_F>
TB_DEVICE void tb_for_elems(bool active, int e, int len, tb_F f) {
  if (active && e + tb_N <= len) {
#pragma unroll
    for (int k = 0; k < tb_N; ++k) f(k);
  } else {
#pragma unroll
    for (int k = 0; k < tb_N; ++k)
      if (active && e + k < len) f(k);
  }
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// ---- rows streamed through shared memory (sm_90: cp.async.bulk + mbarrier) --------------------
TB_DEVICE unsigned tb_smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

TB_DEVICE void tb_mbar_init(unsigned long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tb_smem_u32(bar)), "r"(count) : "memory");
}

// Arms the barrier for one phase that completes when `bytes` have landed (one arrival: ours).
TB_DEVICE void tb_mbar_expect_tx(unsigned long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(tb_smem_u32(bar)), "r"(bytes)
               : "memory");
}

TB_DEVICE void tb_mbar_wait(unsigned long long *bar, unsigned parity) {
  asm volatile("{\n\t.reg .pred tb_p;\n"
               "TB_MBAR_WAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 tb_p, [%0], %1;\n\t"
               "@!tb_p bra TB_MBAR_WAIT;\n}" ::"r"(tb_smem_u32(bar)),
               "r"(parity)
               : "memory");
}

// One bulk copy global -> shared of `bytes` (a multiple of 16; both addresses 16-byte aligned),
// completing on bar.
TB_DEVICE void tb_bulk_load(void *dst, const void *src, unsigned bytes, unsigned long long *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   tb_smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(tb_smem_u32(bar))
               : "memory");
}

// Elements of one shared-memory row slot: the row rounded up to 128 bytes.
template <typename tb_T> TB_DEVICE long long tb_stream_slot(long long cols) {
  return (cols * (long long)sizeof(tb_T) + 127) / 128 * 128 / (long long)sizeof(tb_T);
}

// Persistent row loop. Block b handles rows b, b + gridDim.x, ...; row i of the block lands in
// slot i % STAGES of smem (STAGES * tb_stream_slot<T>(cols) elements, 128-byte aligned) by one
// cp.async.bulk that thread 0 issues STAGES rows ahead, so STAGES rows per block are in flight
// while f(row_in_smem, row) runs. f may use __syncthreads (every thread calls it for every row);
// the slot is refilled only after a barrier that follows f. A row whose bytes are not a multiple
// of 16, or an x that is not 16-byte aligned, is copied by all threads instead (correct, slower).
template <typename tb_T, int tb_STAGES, typename tb_F>
TB_DEVICE void tb_row_stream(const tb_T *__restrict__ x, long long rows, int cols, tb_T *smem, tb_F f) {
  static_assert(tb_STAGES >= 1 && tb_STAGES <= 16, "STAGES: 1..16");
  __shared__ alignas(8) unsigned long long tb_bars[tb_STAGES];
  const long long slot = tb_stream_slot<tb_T>(cols);
  const unsigned row_bytes = (unsigned)cols * (unsigned)sizeof(tb_T);
  const bool bulk = row_bytes % 16 == 0 && tb_aligned16(x);
  const long long G = gridDim.x;
  if (bulk && threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < tb_STAGES; ++s) tb_mbar_init(&tb_bars[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#pragma unroll
    for (int s = 0; s < tb_STAGES; ++s) {
      const long long r = blockIdx.x + s * G;
      if (r < rows) {
        tb_mbar_expect_tx(&tb_bars[s], row_bytes);
        tb_bulk_load(smem + s * slot, x + r * cols, row_bytes, &tb_bars[s]);
      }
    }
  }
  __syncthreads();
  long long i = 0;
  for (long long r = blockIdx.x; r < rows; r += G, ++i) {
    const int s = (int)(i % tb_STAGES);
    tb_T *srow = smem + s * slot;
    if (bulk) {
      tb_mbar_wait(&tb_bars[s], (unsigned)((i / tb_STAGES) & 1));
    } else {
      for (int e = threadIdx.x; e < cols; e += blockDim.x) srow[e] = x[r * cols + e];
      __syncthreads();
    }
    f((const tb_T *)srow, r);
    __syncthreads(); // every thread is done with the slot
    const long long rn = r + tb_STAGES * G;
    if (bulk && threadIdx.x == 0 && rn < rows) {
      // the slot's generic-proxy reads are ordered before the async proxy's writes
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      tb_mbar_expect_tx(&tb_bars[s], row_bytes);
      tb_bulk_load(srow, x + rn * cols, row_bytes, &tb_bars[s]);
    }
  }
}
#endif

// ---- the point-wise driver ---------------------------------------------------------------------
// out[i] = f(a[i]) (NIN == 1) or f(a[i], b[i]) (NIN == 2) for 0 <= i < n, f mapping T to T.
// Block c of the grid-stride loop owns the BLOCK * UNROLL vectors [c*CHUNK, (c+1)*CHUNK): thread t
// loads vectors t, t + BLOCK, ... (coalesced); the loads of every input are written before any
// use (ptxas issues at least half of them ahead of the first use: ample at full occupancy).
// Vectors past the last whole chunk, then the n % N last elements, are spread over all threads.
// If any pointer is not 16-byte aligned (a view), every element takes the scalar path.
template <int tb_NIN, typename tb_T, int tb_BLOCK, int tb_UNROLL, typename tb_F>
TB_DEVICE void tb_pointwise(const tb_T *__restrict__ a, const tb_T *__restrict__ b, tb_T *__restrict__ out,
                            long long n, tb_F f) {
  static_assert(tb_NIN == 1 || tb_NIN == 2, "one or two inputs");
  constexpr int tb_V = tb_vec<tb_T>::N;
  constexpr long long tb_CHUNK = (long long)tb_BLOCK * tb_UNROLL;
  bool vec_ok = tb_aligned16(a) && tb_aligned16(out);
  if constexpr (tb_NIN == 2) vec_ok = vec_ok && tb_aligned16(b);
  const long long nvec = vec_ok ? n / tb_V : 0;
  const long long nchunks = nvec / tb_CHUNK;

  for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
    const long long first = c * tb_CHUNK + threadIdx.x;
    tb_vec<tb_T> va[tb_UNROLL], vb[tb_UNROLL];
#pragma unroll
    for (int u = 0; u < tb_UNROLL; ++u) {
      va[u] = tb_load_vec(a + (first + (long long)u * tb_BLOCK) * tb_V);
      if constexpr (tb_NIN == 2) vb[u] = tb_load_vec(b + (first + (long long)u * tb_BLOCK) * tb_V);
    }
#pragma unroll
    for (int u = 0; u < tb_UNROLL; ++u) {
      tb_vec<tb_T> r;
#pragma unroll
      for (int k = 0; k < tb_V; ++k) {
        if constexpr (tb_NIN == 2) r.v[k] = f(va[u].v[k], vb[u].v[k]);
        else r.v[k] = f(va[u].v[k]);
      }
      tb_store_vec(out + (first + (long long)u * tb_BLOCK) * tb_V, r);
    }
  }

  const long long tid = (long long)blockIdx.x * tb_BLOCK + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * tb_BLOCK;
  for (long long i = nchunks * tb_CHUNK + tid; i < nvec; i += nthreads) {
    const tb_vec<tb_T> xa = tb_load_vec(a + i * tb_V);
    tb_vec<tb_T> r;
    if constexpr (tb_NIN == 2) {
      const tb_vec<tb_T> xb = tb_load_vec(b + i * tb_V);
#pragma unroll
      for (int k = 0; k < tb_V; ++k) r.v[k] = f(xa.v[k], xb.v[k]);
    } else {
#pragma unroll
      for (int k = 0; k < tb_V; ++k) r.v[k] = f(xa.v[k]);
    }
    tb_store_vec(out + i * tb_V, r);
  }
  for (long long i = nvec * tb_V + tid; i < n; i += nthreads) {
    if constexpr (tb_NIN == 2) out[i] = f(a[i], b[i]);
    else out[i] = f(a[i]);
  }
}

#endif
