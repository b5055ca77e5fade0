// tb_rows.cuh: the row family's device code (softmax, layernorm, rmsnorm, mean_reduction, argmax;
// their launch logic is oplib.rowwise in operators/_shared/oplib.lua). docs/KERNELS.md says how
// the kernels work and what was measured.
//
//   defines     the family's optional defines get their defaults here: RPG (rows per group) 1,
//               FULLVEC (bound checks per vector) 0; a kernel reads them after this include
//   reductions  tb_warp_sum / tb_warp_max; tb_group_sum / tb_group_max over GROUP consecutive
//               threads (GROUP a power of two, 32..1024) through shared memory; the argmax order
//               tb_argmax_better (NaN largest, ties to the lowest index) and tb_group_argmax
//   rows        tb_row_load<TPR, NV>(v, row, t, len, vec_ok, active): thread t's NV vectors of a
//               row (vector j at element (j * TPR + t) * N), zeros where absent, each vector moved
//               as 32-bit words; tb_row_load_elems the same through tb_load_part;
//               tb_for_elems<N>(active, e, len, f): f(k) for a vector's elements in the row;
//               tb_row_sumsq<NV, TPR>(v, active, t, cols): the fp32 sum of squares of those;
//               tb_row_stream<T, STAGES>(x, rows, cols, smem, f) (sm_90+): persistent blocks stream
//               rows gridDim.x apart through STAGES shared-memory slots filled by cp.async.bulk
//               (one bulk copy per row, mbarrier completion) and call f(row_in_smem, row) on each
//               row; STAGES rows are in flight per block while f works
//   kernels     what every row operator's two kernels repeat around its per-row function: the
//               `_cuda` kernel's group rows, tb_row0<BLOCK, TPR, RPG>() (the group's first row)
//               and tb_rows_load<TPR, NV, RPG>(v, x, rows, cols, t, row0, vec_ok) (all RPG rows'
//               loads); the `_stream` kernel's body, tb_rows_streamed<BLOCK, TPR, NV,
//               STAGES>(x, rows, cols, f) (f(v, true, row, t, 0) per row from shared memory)
//
// Template parameters and locals carry the tb_ prefix, as in tb_common.cuh: the kernels' defines
// (BLOCK, TPR, NV, RPG, STAGES) must not rewrite them.
#ifndef TB_ROWS_CUH
#define TB_ROWS_CUH

#include "tb_common.cuh"

// ---- the family's defines ----------------------------------------------------------------------
#ifndef RPG // rows per group of TPR threads (registers kernel); 1 passes no define
#define RPG 1
#endif
#ifndef FULLVEC // 1: one bound check per whole vector (tb_for_elems); 0: per element, as measured
#define FULLVEC 0
#endif

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

// The sum of squares, in fp32, of the elements a thread holds of a row in registers: NV vectors
// at elements (j * TPR + t) * N, those past cols (or all, when !active) left out (rmsnorm,
// l2_norm). FULLVEC picks tb_for_elems' one check per vector over the per-element one.
template <int tb_NV, int tb_TPR, typename T>
TB_DEVICE float tb_row_sumsq(const tb_vec<T> (&v)[tb_NV], bool active, int t, int cols) {
  constexpr int V = tb_vec<T>::N;
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < tb_NV; ++j) {
    const int e = (j * tb_TPR + t) * V;
#if FULLVEC
    tb_for_elems<V>(active, e, cols, [&](int k) {
      const float f = tb_to_float(v[j].v[k]);
      ss += f * f;
    });
#else
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float f = tb_to_float(v[j].v[k]);
      if (active && e + k < cols) ss += f * f;
    }
#endif
  }
  return ss;
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

// The `_stream` kernel of a row operator (sm_90+): persistent blocks, a block per row (tb_TPR ==
// tb_BLOCK), rows streamed through tb_STAGES slots of the dynamic shared memory (tb_row_stream);
// each thread loads its tb_NV vectors of the row from its slot (tb_row_load, or tb_row_load_elems
// with tb_ELEMS) and f(v, true, row, t, 0) runs the per-row function.
template <int tb_BLOCK, int tb_TPR, int tb_NV, int tb_STAGES, bool tb_ELEMS = false, typename tb_T, typename tb_F>
TB_DEVICE void tb_rows_streamed(const tb_T *__restrict__ x, int rows, int cols, tb_F f) {
  static_assert(tb_TPR == tb_BLOCK, "the stream kernel is block-per-row");
  extern __shared__ __align__(128) unsigned char tb_dyn[];
  const int t = threadIdx.x;
  tb_row_stream<tb_T, tb_STAGES>(x, rows, cols, reinterpret_cast<tb_T *>(tb_dyn), [&](const tb_T *xs, long long r) {
    tb_vec<tb_T> v[tb_NV];
    if constexpr (tb_ELEMS) tb_row_load_elems<tb_TPR, tb_NV>(v, xs, t, cols, cols % tb_vec<tb_T>::N == 0, true);
    else tb_row_load<tb_TPR, tb_NV>(v, xs, t, cols, cols % tb_vec<tb_T>::N == 0, true);
    f(v, true, r, t, 0);
  });
}
#endif

// ---- the registers kernel's rows -------------------------------------------------------------
// A group of tb_TPR threads of a `_cuda` kernel owns tb_RPG consecutive rows, row0 .. row0 + RPG
// - 1 (tb_BLOCK / tb_TPR groups a block); thread t = threadIdx.x % TPR of the group holds vectors
// t, t + TPR, ... of each. tb_rows_load issues the loads of all RPG rows first (tb_row_load, or
// tb_row_load_elems with tb_ELEMS), so a row's reductions overlap the loads of the rows after it;
// rows at or past `rows` (inactive) load nothing, are zeros, and their group still reaches every
// barrier of the kernel's per-row function. vec_ok: 16-byte accesses allowed (cols a multiple of
// N and the kernel's pointers 16-byte aligned). The kernel computes t, then row0, then vec_ok,
// and runs its per-row function in its own loop: with that loop in a lambda here, or t and row0
// in a struct, NVRTC 13.0 numbered the rows' registers in another order and ptxas emitted other
// SASS for the same arithmetic.
template <int tb_BLOCK, int tb_TPR, int tb_RPG> TB_DEVICE long long tb_row0() {
  static_assert(tb_BLOCK % tb_TPR == 0, "TPR divides BLOCK");
  static_assert(tb_RPG >= 1, "RPG: rows per group, at least 1");
  return ((long long)blockIdx.x * (tb_BLOCK / tb_TPR) + threadIdx.x / tb_TPR) * tb_RPG;
}

template <int tb_TPR, int tb_NV, int tb_RPG, bool tb_ELEMS = false, typename tb_T>
TB_DEVICE void tb_rows_load(tb_vec<tb_T> (&v)[tb_RPG][tb_NV], const tb_T *__restrict__ x, int rows, int cols, int t,
                            long long row0, bool vec_ok) {
#pragma unroll
  for (int i = 0; i < tb_RPG; ++i) {
    const bool active = row0 + i < rows;
    const tb_T *xr = x + (active ? row0 + i : 0) * cols;
    if constexpr (tb_ELEMS) tb_row_load_elems<tb_TPR, tb_NV>(v[i], xr, t, cols, vec_ok, active);
    else tb_row_load<tb_TPR, tb_NV>(v[i], xr, t, cols, vec_ok, active);
  }
}

#endif
