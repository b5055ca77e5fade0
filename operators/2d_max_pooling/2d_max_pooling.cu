// 2d_max_pooling.cu: 3 x 3 max pooling, stride 2, padding 1 (-inf), of planes (N*C) of H x W,
// NaN propagating (PyTorch's max_pool2d); output planes Hout x Wout, Hout = (H - 1) / 2 + 1.
//
// Layout: a thread owns VO consecutive output columns of a plane (one 16-byte vector of DTYPE
// when W is a multiple of 2 VO: every case of the grid; else one) and walks down a strip of
// output rows. Output row oh needs input rows 2oh - 1, 2oh, 2oh + 1 over columns 2ow - 1 ..
// 2ow + 2 VO - 1: the thread loads rows 2oh and 2oh + 1 of its 2 VO columns (two 16-byte loads a
// row) and keeps row 2oh + 1 for the next output row, so every input element is loaded once.
// The three rows are reduced per column first; column 2ow - 1's maximum comes from the lane to
// the left by one shuffle (lane 0 loads that column itself; column -1 is padding). Threads are
// numbered column-fastest over (plane, strip, column thread), so a warp may span strips and
// planes: every thread runs the same number of row steps (strips shorter at the plane's end
// mask theirs) so the shuffles see the whole warp. The next UNROLL output rows' loads are issued
// as one batch. Loads and stores are 16-byte and coalesced.
// Defines: DTYPE, VO (outputs a thread: 16 / sizeof(DTYPE) or 1), UNROLL. Kernel: max_pool2d.
#include "tb_common.cuh"

constexpr int VI = 2 * VO; // input columns a thread
constexpr int ALIGN = VI * (int)sizeof(DTYPE) >= 16 ? 16 : VI * (int)sizeof(DTYPE);

struct alignas(ALIGN) prow {
  DTYPE v[VI];
};
struct alignas(VO * sizeof(DTYPE)) pout {
  DTYPE v[VO];
};

// NaN-propagating maxima (max.NaN: a NaN operand gives NaN, as PyTorch's max_pool2d).
TB_DEVICE float p_max(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
TB_DEVICE __half p_max(__half a, __half b) { return __hmax_nan(a, b); }
TB_DEVICE __nv_bfloat16 p_max(__nv_bfloat16 a, __nv_bfloat16 b) { return __hmax_nan(a, b); }

template <typename E> TB_DEVICE E p_ninf();
template <> TB_DEVICE float p_ninf<float>() { return -INFINITY; }
template <> TB_DEVICE __half p_ninf<__half>() { return __ushort_as_half((unsigned short)0xFC00); }
template <> TB_DEVICE __nv_bfloat16 p_ninf<__nv_bfloat16>() { return __ushort_as_bfloat16((unsigned short)0xFF80); }

// Row ir of the plane at input columns c .. c + VI - 1: -inf outside the image.
TB_DEVICE prow p_load(const DTYPE *plane, int ir, int c, int H, int W, bool live) {
  prow r;
  const DTYPE ninf = p_ninf<DTYPE>();
  const bool row_ok = live && ir >= 0 && ir < H;
  if constexpr (VO > 1) { // W is a multiple of VI: whole vectors
    if (row_ok) return *reinterpret_cast<const prow *>(plane + (long long)ir * W + c);
#pragma unroll
    for (int k = 0; k < VI; ++k) r.v[k] = ninf;
  } else {
#pragma unroll
    for (int k = 0; k < VI; ++k) r.v[k] = row_ok && c + k < W ? plane[(long long)ir * W + c + k] : ninf;
  }
  return r;
}

extern "C" __global__ void __launch_bounds__(256)
    max_pool2d(const DTYPE *__restrict__ x, DTYPE *__restrict__ y, long long planes, int H, int W, int Hout,
               int Wout, int rows_per, int strips) {
  const unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int ct_n = (Wout + VO - 1) / VO; // column threads a row
  const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int ct = (int)(g % ct_n);
  const long long sg = g / ct_n; // (plane, strip)
  const bool thread_live = sg < planes * strips;
  const long long plane = sg / strips;
  const int oh0 = (int)(sg % strips) * rows_per;
  const int ow = ct * VO, c = 2 * ow;
  const DTYPE ninf = p_ninf<DTYPE>();
  const DTYPE *xp = x + (thread_live ? plane : 0) * H * (long long)W;
  DTYPE *yp = y + (thread_live ? plane : 0) * Hout * (long long)Wout;
  const bool fetch_left = lane == 0 && ct > 0 && thread_live; // column c - 1 from memory
  const bool left_pad = ct == 0;                              // column -1: padding

  // The row above the first output row (input row 2 oh0 - 1) and its left column.
  prow above = p_load(xp, 2 * oh0 - 1, c, H, W, thread_live);
  DTYPE above_l = ninf;
  if (fetch_left && 2 * oh0 - 1 >= 0) above_l = xp[(long long)(2 * oh0 - 1) * W + c - 1];

  for (int i = 0; i < rows_per; i += UNROLL) { // the same count for every thread
    prow r0[UNROLL], r1[UNROLL];
    DTYPE l0[UNROLL], l1[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int oh = oh0 + i + u;
      const bool live = thread_live && i + u < rows_per && oh < Hout;
      r0[u] = p_load(xp, 2 * oh, c, H, W, live);
      r1[u] = p_load(xp, 2 * oh + 1, c, H, W, live);
      l0[u] = l1[u] = ninf;
      if (fetch_left && live) {
        l0[u] = xp[(long long)(2 * oh) * W + c - 1];
        if (2 * oh + 1 < H) l1[u] = xp[(long long)(2 * oh + 1) * W + c - 1];
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int oh = oh0 + i + u;
      if (i + u < rows_per) { // uniform
        DTYPE cm[VI];
#pragma unroll
        for (int k = 0; k < VI; ++k) cm[k] = p_max(p_max(above.v[k], r0[u].v[k]), r1[u].v[k]);
        DTYPE left = __shfl_up_sync(FULL, cm[VI - 1], 1);
        if (lane == 0) left = p_max(p_max(above_l, l0[u]), l1[u]);
        if (left_pad) left = ninf;
        pout o;
#pragma unroll
        for (int k = 0; k < VO; ++k) o.v[k] = p_max(p_max(k > 0 ? cm[2 * k - 1] : left, cm[2 * k]), cm[2 * k + 1]);
        if (thread_live && oh < Hout && ow < Wout) *reinterpret_cast<pout *>(yp + (long long)oh * Wout + ow) = o;
        above = r1[u];
        above_l = l1[u];
      }
    }
  }
}
