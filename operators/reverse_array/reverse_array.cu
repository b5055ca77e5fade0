// reverse_array.cu: out[i] = x[n - 1 - i] for i < n (flip(0)), the `cuda` implementation on the
// point-wise schedule (tb_pointwise_ops). Vector v is out's elements [v VE, v VE + VE): the 16
// bytes of x ending at n - v VE, reversed. Both are 16-byte aligned when n % VE == 0 (every case
// of the grid: n is a multiple of 10^6 = 2^6 5^6) and the pointers are: one LDG.E.128, one
// STG.E.128; a warp reads 512 contiguous bytes (in descending vectors) and writes 512. The
// reversal works on 32-bit words: the four words in reverse order (register renaming), each
// reversed inside by one PRMT for 1- and 2-byte elements (0x0123 bytes, 0x1032 halves).
// For n % VE != 0 a vector of out would straddle two of x's (every element goes one by one: a
// correct, slower path that no case of the grid takes), likewise for unaligned pointers.
// Defines: DTYPE, BLOCK, UNROLL. Kernel: reverse_array_cuda.
#include "tb_pointwise.cuh"

struct reverse_array_op {
  static constexpr int N = tb_vec<DTYPE>::N;
  const DTYPE *x;
  DTYPE *out;
  long long n;

  struct regs { uint4 w; };
  TB_DEVICE void load(regs &r, long long v) const {
    r.w = __ldg(reinterpret_cast<const uint4 *>(x + n - (v + 1) * N));
  }
  static TB_DEVICE uint32_t flip(uint32_t w) {
    if constexpr (sizeof(DTYPE) == 4) return w;
    else if constexpr (sizeof(DTYPE) == 2) return __byte_perm(w, 0, 0x1032);
    else return __byte_perm(w, 0, 0x0123);
  }
  TB_DEVICE void store(const regs &r, long long v) const {
    DTYPE *p = out + v * N;
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(flip(r.w.w)), "r"(flip(r.w.z)),
                 "r"(flip(r.w.y)), "r"(flip(r.w.x))
                 : "memory");
  }
  TB_DEVICE void scalar(long long i) const { out[i] = x[n - 1 - i]; }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
reverse_array_cuda(const DTYPE *x, DTYPE *out, long long n) {
  constexpr int V = reverse_array_op::N;
  const bool vec_ok = n % V == 0 && tb_aligned16(x) && tb_aligned16(out);
  tb_pointwise_ops<BLOCK, UNROLL>(vec_ok ? n / V : 0, n, reverse_array_op{x, out, n});
}
