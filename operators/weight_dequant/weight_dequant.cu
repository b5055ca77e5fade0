// weight_dequant.cu: Y[i, j] = X[i, j] * S[i / T, j / T] over the (M, N) X flattened to n, S of
// ceil(M / T) rows of SN = ceil(N / T) scales, the `cuda` implementation: fp32 product rounded
// once to DTYPE (PyTorch's half-type multiply). A vector is 16 bytes of X; when N and T are
// multiples of its element count it lies in one row and one tile, so it takes one scale: row and
// tile from 32-bit divisions of the vector index (64-bit only past 2^32 vectors), the scale read
// through L1 (a row of tiles is a few hundred bytes). Otherwise, or for unaligned pointers, every
// element goes through scalar(). Defines: DTYPE, BLOCK, UNROLL.
// Kernel: weight_dequant_cuda (tb_pointwise_ops).
#include "tb_pointwise.cuh"

struct weight_dequant_op {
  static constexpr int N = tb_vec<DTYPE>::N;
  const DTYPE *x, *s;
  DTYPE *y;
  long long cols, tile, sn;
  long long vpr, vpt; // vectors per row (cols / N) and per tile width (tile / N)
  bool narrow;        // vector indices fit 32 bits

  static TB_DEVICE DTYPE mul(DTYPE a, float b) { return tb_from_float<DTYPE>(tb_to_float(a) * b); }

  struct regs { tb_vec<DTYPE> x; float s; };
  TB_DEVICE void load(regs &r, long long v) const {
    long long k;
    if (narrow) {
      const unsigned row = (unsigned)v / (unsigned)vpr, cv = (unsigned)v - row * (unsigned)vpr;
      k = (long long)(row / (unsigned)tile) * sn + cv / (unsigned)vpt;
    } else {
      const long long row = v / vpr;
      k = row / tile * sn + (v - row * vpr) / vpt;
    }
    r.x = tb_ldg_vec(x + v * N);
    r.s = tb_to_float(s[k]);
  }
  TB_DEVICE void store(const regs &r, long long v) const {
    tb_vec<DTYPE> o;
#pragma unroll
    for (int k = 0; k < N; ++k) o.v[k] = mul(r.x.v[k], r.s);
    tb_store_vec(y + v * N, o);
  }
  TB_DEVICE void scalar(long long i) const {
    const long long row = i / cols;
    y[i] = mul(x[i], tb_to_float(s[row / tile * sn + (i - row * cols) / tile]));
  }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
weight_dequant_cuda(const DTYPE *x, const DTYPE *s, DTYPE *y, long long n, long long cols, long long tile,
                    long long sn) {
  constexpr int V = weight_dequant_op::N;
  const bool vec_ok = tb_aligned16(x) && tb_aligned16(y) && cols % V == 0 && tile % V == 0;
  const long long nvec = vec_ok ? n / V : 0;
  tb_pointwise_ops<BLOCK, UNROLL>(nvec, n, weight_dequant_op{x, s, y, cols, tile, sn, cols / V, tile / V,
                                                             nvec <= 0xffffffffLL});
}
