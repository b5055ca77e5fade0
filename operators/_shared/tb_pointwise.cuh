// tb_pointwise.cuh: the point-wise family's drivers (vector_add, mul2, relu, sigmoid, swiglu,
// leaky_relu, dropout: tb_pointwise; the other point-wise operators of issue 16: tb_pointwise_ops;
// their launch logic is oplib.pointwise in operators/_shared/oplib.lua).
//
//   tb_pointwise<NIN, T, BLOCK, UNROLL>(a, b, out, n, f): out[i] = f(a[i]) or f(a[i], b[i]) for
//   i < n with 16-byte accesses, UNROLL vectors in flight per thread, a grid-stride loop over
//   block-contiguous chunks, and a scalar path for the tail and for pointers that are not 16-byte
//   aligned.
//
//   tb_pointwise_ops<BLOCK, UNROLL>(nvec, n, op): the same loop for operators whose vector is
//   their own (several input dtypes, three inputs, a scale per row or tile, element pairs): the
//   operator loads and stores a vector itself; the driver schedules them.
//
// Template parameters carry the tb_ prefix, as in tb_common.cuh, so that the kernels' defines
// (BLOCK, UNROLL) cannot rewrite them.
#ifndef TB_POINTWISE_CUH
#define TB_POINTWISE_CUH

#include "tb_common.cuh"
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


// ---- the point-wise driver over an operator's own vectors --------------------------------------
// A 16-byte vector through the read-only path (LDG.E.128.CONSTANT): what tb_load_vec compiles to
// from a kernel's const __restrict__ parameters, for pointers an operator struct holds (where
// __restrict__ does not reach the compiler's alias analysis).
template <typename tb_T> TB_DEVICE tb_vec<tb_T> tb_ldg_vec(const tb_T *p) {
  const uint4 w = __ldg(reinterpret_cast<const uint4 *>(p));
  tb_vec<tb_T> r;
  *reinterpret_cast<uint4 *>(&r) = w;
  return r;
}

// A 16-byte vector stored by one st.global.v4 (STG.E.128) whatever the compiler makes of the
// struct (inline PTX; the address must be 16-byte aligned). rope's second store per vector,
// through tb_store_vec or a plain uint4 store, came out as four 32-bit stores: NVVM split the
// copy and could not prove the second half's address aligned to put it back together. (__stwb
// keeps it whole too, but as STG.E.128.STRONG.SM.)
template <typename tb_T> TB_DEVICE void tb_stg_vec(tb_T *p, const tb_vec<tb_T> &r) {
  uint4 w;
  memcpy(&w, &r, sizeof w);
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
               : "memory");
}

// For operators a single dtype's 16-byte vector does not describe: fp32 in and fp16 out, int8 in
// with a per-row fp32 scale, three inputs, rope's element pairs. The operator (tb_Op) says what
// its vector is:
//   static constexpr int N;                           elements per vector
//   struct regs;                                      one vector's loaded values (registers)
//   TB_DEVICE void load(regs &r, long long v) const;  issue every load of vector v (elements
//                                                     v*N .. v*N+N-1), nothing else
//   TB_DEVICE void store(const regs &r, long long v) const;  compute vector v from r, store it
//   TB_DEVICE void scalar(long long i) const;         element i alone, loads and store
// nvec: how many whole vectors take the vector path (the kernel decides: 0 when a pointer is not
// 16-byte aligned or a vector could straddle a row); elements nvec*N .. n-1 go through scalar().
// The schedule is tb_pointwise's: block-contiguous chunks of BLOCK * UNROLL vectors, all UNROLL
// loads of a thread written before its first store (so the compiler never has to move a load
// above a store that might alias it: the operator's pointers need no __restrict__), the
// leftover vectors and then the leftover elements spread over all threads.
template <int tb_BLOCK, int tb_UNROLL, typename tb_Op>
TB_DEVICE void tb_pointwise_ops(long long nvec, long long n, const tb_Op &op) {
  constexpr long long tb_CHUNK = (long long)tb_BLOCK * tb_UNROLL;
  const long long nchunks = nvec / tb_CHUNK;
  for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
    const long long first = c * tb_CHUNK + threadIdx.x;
    typename tb_Op::regs r[tb_UNROLL];
#pragma unroll
    for (int u = 0; u < tb_UNROLL; ++u) op.load(r[u], first + (long long)u * tb_BLOCK);
#pragma unroll
    for (int u = 0; u < tb_UNROLL; ++u) op.store(r[u], first + (long long)u * tb_BLOCK);
  }
  const long long tid = (long long)blockIdx.x * tb_BLOCK + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * tb_BLOCK;
  for (long long v = nchunks * tb_CHUNK + tid; v < nvec; v += nthreads) {
    typename tb_Op::regs r;
    op.load(r, v);
    op.store(r, v);
  }
  for (long long i = nvec * tb_Op::N + tid; i < n; i += nthreads) op.scalar(i);
}

#endif
