// destindex_ref.cu: the reference, OPERATORS.md 41's two steps, one thread per element each:
//   destindex_ref_clone:   out_nope = o_nope, out_rope = o_rope (the clone);
//   destindex_ref_scatter: out_nope[dest[t], :] = kv_nope[t, :], out_rope likewise (index_copy_).
// Rows are ln = 12 * 128 and lr = 1 * 64 elements (a token's heads flattened). A dest[t] outside
// [0, T) is skipped (torch raises; the generator never makes one). Define: DTYPE.
#include "tb_common.cuh"

extern "C" __global__ void destindex_ref_clone(const DTYPE *o_nope, const DTYPE *o_rope, DTYPE *out_nope,
                                               DTYPE *out_rope, long long nn, long long nr) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e < nn) out_nope[e] = o_nope[e];
  else if (e < nn + nr) out_rope[e - nn] = o_rope[e - nn];
}

extern "C" __global__ void destindex_ref_scatter(const DTYPE *kv_nope, const DTYPE *kv_rope, const long long *dest,
                                                 DTYPE *out_nope, DTYPE *out_rope, long long T, long long ln,
                                                 long long lr) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e < T * ln) {
    const long long t = e / ln, d = dest[t];
    if (d >= 0 && d < T) out_nope[d * ln + e % ln] = kv_nope[e];
  } else if (e < T * (ln + lr)) {
    const long long f = e - T * ln, t = f / lr, d = dest[t];
    if (d >= 0 && d < T) out_rope[d * lr + f % lr] = kv_rope[f];
  }
}
