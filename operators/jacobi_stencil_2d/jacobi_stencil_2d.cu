// jacobi_stencil_2d.cu: one Jacobi sweep, out = in with interior points
// 0.25 * (((up + down) + left) + right), every op rounded to DTYPE (PyTorch eager's order).
//
// Layout: a thread owns VW consecutive columns (VW = one 16-byte vector of DTYPE where cols is a
// multiple of it, else 1) and walks down rows_per rows of them, keeping a window of three rows in
// registers (up, mid, down): every input element is loaded once by the block that owns it, plus
// the two halo rows of the block's strip (mostly L2 hits: neighbouring strips run together).
// Left/right neighbours come from the adjacent lanes by shuffle; a warp's two edge lanes load the
// one element beyond the warp themselves (an L1/L2 hit: the neighbouring warp reads that line).
// The next UNROLL rows (and the edge lanes' halo elements) are loaded as one batch before any is
// used, so UNROLL 16-byte loads a thread are in flight. Loads and stores are 16-byte and
// coalesced (a warp covers 512 contiguous bytes of a row).
//
// Arithmetic: fp16 and bf16 use the native correctly rounded packed add and multiply (HADD2,
// HMUL2, .BF16_V2: two elements an instruction): fp32 has p = 24 >= 2 * 11 + 2 (and 2 * 8 + 2)
// bits, so PyTorch's fp32 op rounded to the dtype is the correctly rounded dtype op, bit for bit
// (the CPU check compares exactly). A row vector is held as 32-bit words (a pair of 2-byte
// elements, or one fp32): kept as DTYPE v[8] the 16-bit halves cost a byte permute each way.
// Defines: DTYPE, VW (1 or 16 / sizeof(DTYPE); cols % VW == 0), BX (threads a block, a multiple
// of 32), UNROLL (rows loaded ahead). Kernel: jacobi_stencil_2d.
#include "tb_common.cuh"

// Per word type: add, the quarter, the left / right neighbours of each element of a word (prev,
// next: the words before and after), a word whose elements all are h, and the boundary select.
template <typename W> struct jw;
template <> struct jw<float> {
  static TB_DEVICE float add(float a, float b) { return __fadd_rn(a, b); }
  static TB_DEVICE float quarter(float a) { return __fmul_rn(a, 0.25f); }
  static TB_DEVICE float left(float prev, float) { return prev; }
  static TB_DEVICE float right(float, float next) { return next; }
  static TB_DEVICE float splat(float h) { return h; }
  static TB_DEVICE float keep(float s, float m, bool lo, bool) { return lo ? m : s; }
  static TB_DEVICE float from_bits(unsigned u) { return __uint_as_float(u); }
  static TB_DEVICE unsigned to_bits(float w) { return __float_as_uint(w); }
};
template <> struct jw<__half> {
  static TB_DEVICE __half add(__half a, __half b) { return __hadd(a, b); }
  static TB_DEVICE __half quarter(__half a) { return __hmul(a, __ushort_as_half((unsigned short)0x3400)); }
  static TB_DEVICE __half left(__half prev, __half) { return prev; }
  static TB_DEVICE __half right(__half, __half next) { return next; }
  static TB_DEVICE __half splat(__half h) { return h; }
  static TB_DEVICE __half keep(__half s, __half m, bool lo, bool) { return lo ? m : s; }
  static TB_DEVICE __half from_bits(unsigned u) { return __ushort_as_half((unsigned short)u); }
  static TB_DEVICE unsigned to_bits(__half w) { return __half_as_ushort(w); }
};
template <> struct jw<__nv_bfloat16> {
  static TB_DEVICE __nv_bfloat16 add(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
  static TB_DEVICE __nv_bfloat16 quarter(__nv_bfloat16 a) {
    return __hmul(a, __ushort_as_bfloat16((unsigned short)0x3E80));
  }
  static TB_DEVICE __nv_bfloat16 left(__nv_bfloat16 prev, __nv_bfloat16) { return prev; }
  static TB_DEVICE __nv_bfloat16 right(__nv_bfloat16, __nv_bfloat16 next) { return next; }
  static TB_DEVICE __nv_bfloat16 splat(__nv_bfloat16 h) { return h; }
  static TB_DEVICE __nv_bfloat16 keep(__nv_bfloat16 s, __nv_bfloat16 m, bool lo, bool) { return lo ? m : s; }
  static TB_DEVICE __nv_bfloat16 from_bits(unsigned u) { return __ushort_as_bfloat16((unsigned short)u); }
  static TB_DEVICE unsigned to_bits(__nv_bfloat16 w) { return __bfloat16_as_ushort(w); }
};
template <> struct jw<__half2> {
  static TB_DEVICE __half2 add(__half2 a, __half2 b) { return __hadd2(a, b); }
  static TB_DEVICE __half2 quarter(__half2 a) {
    return __hmul2(a, __half2half2(__ushort_as_half((unsigned short)0x3400)));
  }
  static TB_DEVICE __half2 left(__half2 prev, __half2 cur) { return __halves2half2(__high2half(prev), __low2half(cur)); }
  static TB_DEVICE __half2 right(__half2 cur, __half2 next) { return __halves2half2(__high2half(cur), __low2half(next)); }
  static TB_DEVICE __half2 splat(__half h) { return __half2half2(h); }
  static TB_DEVICE __half2 keep(__half2 s, __half2 m, bool lo, bool hi) {
    return __halves2half2(lo ? __low2half(m) : __low2half(s), hi ? __high2half(m) : __high2half(s));
  }
  // a register's bits reinterpreted (the local's address never reaches memory)
  static TB_DEVICE __half2 from_bits(unsigned u) { return *reinterpret_cast<const __half2 *>(&u); }
  static TB_DEVICE unsigned to_bits(__half2 w) { return *reinterpret_cast<const unsigned *>(&w); }
};
template <> struct jw<__nv_bfloat162> {
  static TB_DEVICE __nv_bfloat162 add(__nv_bfloat162 a, __nv_bfloat162 b) { return __hadd2(a, b); }
  static TB_DEVICE __nv_bfloat162 quarter(__nv_bfloat162 a) {
    return __hmul2(a, __bfloat162bfloat162(__ushort_as_bfloat16((unsigned short)0x3E80)));
  }
  static TB_DEVICE __nv_bfloat162 left(__nv_bfloat162 prev, __nv_bfloat162 cur) {
    return __halves2bfloat162(__high2bfloat16(prev), __low2bfloat16(cur));
  }
  static TB_DEVICE __nv_bfloat162 right(__nv_bfloat162 cur, __nv_bfloat162 next) {
    return __halves2bfloat162(__high2bfloat16(cur), __low2bfloat16(next));
  }
  static TB_DEVICE __nv_bfloat162 splat(__nv_bfloat16 h) { return __bfloat162bfloat162(h); }
  static TB_DEVICE __nv_bfloat162 keep(__nv_bfloat162 s, __nv_bfloat162 m, bool lo, bool hi) {
    return __halves2bfloat162(lo ? __low2bfloat16(m) : __low2bfloat16(s), hi ? __high2bfloat16(m) : __high2bfloat16(s));
  }
  static TB_DEVICE __nv_bfloat162 from_bits(unsigned u) { return *reinterpret_cast<const __nv_bfloat162 *>(&u); }
  static TB_DEVICE unsigned to_bits(__nv_bfloat162 w) { return *reinterpret_cast<const unsigned *>(&w); }
};

// The word type: a pair of 2-byte elements where the vector has two or more, else the element.
template <typename E, int N> struct jword { typedef E type; };
template <> struct jword<__half, 2> { typedef __half2 type; };
template <> struct jword<__nv_bfloat16, 2> { typedef __nv_bfloat162 type; };
constexpr int EPW = (VW * sizeof(DTYPE) >= 4) ? (int)(4 / sizeof(DTYPE)) : 1; // elements a word
typedef jword<DTYPE, EPW>::type W;
typedef jw<W> J;
constexpr int NW = VW / EPW; // words a vector

struct alignas(VW * sizeof(DTYPE)) jrow {
  W w[NW];
};
static_assert(VW == 1 || (NW == 4 && sizeof(W) == 4), "a 16-byte vector is four 32-bit words");

// 16-byte vectors move as uint4 (one LDG.E.128 / STG.E.128): copied as a struct of __half2 the
// compiler splits the access into 32-bit ones (the pair types' own copy operators).
// (Templates so that the branch not taken is never instantiated.)
template <typename E> TB_DEVICE jrow j_load(const E *p) {
  jrow r;
  if constexpr (VW * sizeof(E) == 16) {
    const uint4 q = *reinterpret_cast<const uint4 *>(p);
    r.w[0] = J::from_bits(q.x);
    r.w[1] = J::from_bits(q.y);
    r.w[2] = J::from_bits(q.z);
    r.w[3] = J::from_bits(q.w);
  } else {
    r.w[0] = *p;
  }
  return r;
}
template <typename E> TB_DEVICE void j_store(E *p, const jrow &r) {
  if constexpr (VW * sizeof(E) == 16) {
    const uint4 q = make_uint4(J::to_bits(r.w[0]), J::to_bits(r.w[1]), J::to_bits(r.w[2]), J::to_bits(r.w[3]));
    *reinterpret_cast<uint4 *>(p) = q;
  } else {
    *p = r.w[0];
  }
}

// The stencil of one row vector, every element as if interior. lw / rw: the words whose last /
// first element is the one just before / after the vector.
TB_DEVICE jrow j_sweep(const jrow &up, const jrow &mid, const jrow &dn, W lw, W rw) {
  jrow o;
#pragma unroll
  for (int p = 0; p < NW; ++p) {
    const W l = J::left(p > 0 ? mid.w[p - 1] : lw, mid.w[p]);
    const W r = J::right(mid.w[p], p + 1 < NW ? mid.w[p + 1] : rw);
    o.w[p] = J::quarter(J::add(J::add(J::add(up.w[p], dn.w[p]), l), r));
  }
  return o;
}

extern "C" __global__ void __launch_bounds__(BX)
    jacobi_stencil_2d(const DTYPE *__restrict__ in, DTYPE *__restrict__ out, int rows, int cols, int rows_per) {
  const unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int c0 = (blockIdx.x * BX + threadIdx.x) * VW;
  const bool active = c0 < cols;
  // Lanes past the last column read the last vector (cols is a multiple of VW) and store nothing:
  // loads need no guard, and what they shuffle to an active neighbour lands on column cols - 1,
  // a boundary point that is copied.
  const int cc = active ? c0 : cols - VW;
  const bool col_edge = c0 == 0 || c0 + VW >= cols;
  const bool fetch_left = lane == 0 && cc > 0;
  const bool fetch_right = lane == 31 && cc + VW < cols;
  const int r0 = blockIdx.y * rows_per;
  const int r1 = min(r0 + rows_per, rows);
  const long long stride = cols;
  const DTYPE zero = tb_from_float<DTYPE>(0.0f);
  const DTYPE *p = in + r0 * stride + cc; // the mid row
  DTYPE *q = out + r0 * stride + cc;
  jrow up = j_load(r0 > 0 ? p - stride : p); // row 0 is a boundary row: its up is never used
  jrow mid = j_load(p);

  // Row r from the window and its halo elements, then the window moves down by one.
  auto emit = [&](int r, const jrow &dn, DTYPE hl, DTYPE hr, DTYPE *dst) {
    W lw = __shfl_up_sync(FULL, mid.w[NW - 1], 1);
    W rw = __shfl_down_sync(FULL, mid.w[0], 1);
    if (lane == 0) lw = J::splat(hl);
    if (lane == 31) rw = J::splat(hr);
    jrow o = j_sweep(up, mid, dn, lw, rw);
    const bool edge_row = r == 0 || r == rows - 1;
    if (edge_row || col_edge) { // a vector with boundary points: those are copied
#pragma unroll
      for (int w = 0; w < NW; ++w) {
        const int c = cc + w * EPW;
        o.w[w] = J::keep(o.w[w], mid.w[w], edge_row || c == 0 || c == cols - 1,
                         edge_row || c + 1 == 0 || c + 1 == cols - 1);
      }
    }
    if (active) j_store(dst, o);
    up = mid;
    mid = dn;
  };

  // Whole batches: UNROLL rows below, each with a row under it, loaded before any is used.
  int r = r0;
  const int rfull = min(r1, rows - 1);
  for (; r + UNROLL <= rfull; r += UNROLL) {
    jrow dn[UNROLL];
    DTYPE hl[UNROLL], hr[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      dn[u] = j_load(p + (u + 1) * stride);
      hl[u] = fetch_left ? p[u * stride - 1] : zero;
      hr[u] = fetch_right ? p[u * stride + VW] : zero;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) emit(r + u, dn[u], hl[u], hr[u], q + u * stride);
    p += UNROLL * stride;
    q += UNROLL * stride;
  }
  // The strip's last rows one at a time; the grid's last row has no row below (a boundary row).
  for (; r < r1; ++r) {
    const jrow dn = j_load(r + 1 < rows ? p + stride : p);
    const DTYPE hl = fetch_left ? p[-1] : zero;
    const DTYPE hr = fetch_right ? p[VW] : zero;
    emit(r, dn, hl, hr, q);
    p += stride;
    q += stride;
  }
}
