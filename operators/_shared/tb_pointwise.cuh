// tb_pointwise.cuh: the point-wise family's driver (vector_add, mul2, relu, sigmoid, swiglu; their
// launch logic is oplib.pointwise in operators/_shared/oplib.lua).
//
//   tb_pointwise<NIN, T, BLOCK, UNROLL>(a, b, out, n, f): out[i] = f(a[i]) or f(a[i], b[i]) for
//   i < n with 16-byte accesses, UNROLL vectors in flight per thread, a grid-stride loop over
//   block-contiguous chunks, and a scalar path for the tail and for pointers that are not 16-byte
//   aligned.
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


#endif
