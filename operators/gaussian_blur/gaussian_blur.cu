// gaussian_blur.cu: y = x cross-correlated with w (KR x KC), "same" size, zero padding, fp32 sums
// rounded once to DTYPE.
//
// Layout: a thread owns RX consecutive output columns (VPT 16-byte vectors of DTYPE where cols is a
// multiple of the vector, else one element) and walks down a strip of rows. Each input row is
// loaded once (16-byte loads) and converted to fp32 into a window of RX + KC - 1 values: its own
// RX, the KC / 2 before and KC - 1 - KC / 2 after from the neighbouring lanes by shuffle (a lane
// whose source lies outside the warp loads those elements itself in the batch, zero past the
// image; a lane needs left or right ones, never both, so they share registers). The row
// then feeds the KR output rows it touches: KR rows of RX fp32 accumulators are a ring in
// registers, the row loop unrolled by KR so every ring slot is a compile-time register; an output
// row is stored (16 bytes) when its last input row has been added, and its slot cleared. The KR
// input rows of an iteration are loaded as one batch before any is used. The weights sit in
// shared memory as fp32 rows padded to 4 (two LDS.128 a row of 7), so each weight loaded serves
// RX FMAs.
// Defines: DTYPE, RX (elements a thread: VPT x 16 / sizeof(DTYPE), or 1), BX (threads a block, a
// multiple of 32), KR, KC, MINB (0 or the minimum resident blocks for __launch_bounds__).
// Kernel: gaussian_blur.
#include "tb_common.cuh"

constexpr int VL = KR / 2;          // input rows above an output row
constexpr int VR = KR - 1 - KR / 2; // and below
constexpr int HL = KC / 2;          // input columns left of an output column
constexpr int HR = KC - 1 - KC / 2; // and right
constexpr int WIN = RX + KC - 1;    // the fp32 window of one input row a thread uses
constexpr int KCP = (KC + 3) / 4 * 4;
constexpr int HMAX = HL > HR ? HL : HR; // halo registers a row: a lane needs left or right ones, never both
constexpr int ALIGN = RX * (int)sizeof(DTYPE) >= 16 ? 16 : RX * (int)sizeof(DTYPE);

// RX raw elements: 16-byte aligned runs of them load as LDG.E.128.
struct alignas(ALIGN) graw {
  DTYPE v[RX];
};

// A lane needs halo elements from outside the warp on one side only (they share registers).
static_assert((HL + RX - 1) / RX + (HR + RX - 1) / RX <= 32, "the kernel is wider than a warp's columns");

// The lane, relative to this one, that holds column offset t from c0.
TB_DEVICE constexpr int lane_of(int t) { return t < 0 ? -((-t + RX - 1) / RX) : t / RX; }

// MINB = 1 asks ptxas for one resident block's registers (no spill at fp16 RX 8: 208 registers,
// 8 warps an SM); MINB = 0 leaves it its own choice (168 registers and one 4-byte spill a 7-row
// iteration, 12 warps an SM).
#if MINB > 0
#define GB_BOUNDS __launch_bounds__(BX, MINB)
#else
#define GB_BOUNDS __launch_bounds__(BX)
#endif

extern "C" __global__ void GB_BOUNDS
    gaussian_blur(const DTYPE *__restrict__ x, const DTYPE *__restrict__ wk, DTYPE *__restrict__ y, int rows,
                  int cols, int rows_per) {
  __shared__ __align__(16) float ws[KR * KCP];
  for (int i = threadIdx.x; i < KR * KCP; i += BX) {
    const int a = i / KCP, b = i % KCP;
    ws[i] = b < KC ? tb_to_float(wk[a * KC + b]) : 0.0f;
  }
  __syncthreads();

  const unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int c0 = (blockIdx.x * BX + threadIdx.x) * RX;
  const bool active = c0 < cols; // cols is a multiple of RX: a thread's columns are all in or all out
  const int r0 = blockIdx.y * rows_per;
  const int r1 = min(r0 + rows_per, rows);
  const int y_end = r1 + VR; // input rows r0 - VL .. r1 + VR - 1 feed the strip
  const long long stride = cols;
  const DTYPE zero = tb_from_float<DTYPE>(0.0f);

  float acc[KR][RX];
#pragma unroll
  for (int s = 0; s < KR; ++s)
#pragma unroll
    for (int k = 0; k < RX; ++k) acc[s][k] = 0.0f;

  for (int yb = r0 - VL; yb < y_end; yb += KR) {
    // The batch: KR input rows, and for lanes whose halo source is outside the warp the halo
    // elements themselves (zero outside the image).
    graw raw[KR];
    float halo[KR][HMAX > 0 ? HMAX : 1];
#pragma unroll
    for (int m = 0; m < KR; ++m) {
      const int yy = yb + m;
      const bool row_in = yy >= 0 && yy < rows && yy < y_end;
      const DTYPE *src = x + yy * stride + c0;
#pragma unroll
      for (int k = 0; k < RX; ++k) raw[m].v[k] = zero;
      if (row_in && active) raw[m] = *reinterpret_cast<const graw *>(src);
#pragma unroll
      for (int h = 0; h < HMAX; ++h) {
        const bool lo = h < HL && lane + lane_of(h - HL) < 0, ro = h < HR && lane + lane_of(RX + h) > 31;
        const int t = lo ? h - HL : RX + h;
        halo[m][h] = 0.0f;
        if ((lo || ro) && row_in && c0 + t >= 0 && c0 + t < cols) halo[m][h] = tb_to_float(src[t]);
      }
    }
#pragma unroll
    for (int m = 0; m < KR; ++m) {
      float win[WIN];
#pragma unroll
      for (int k = 0; k < RX; ++k) win[HL + k] = tb_to_float(raw[m].v[k]);
#pragma unroll
      for (int h = 0; h < HL + HR; ++h) {
        const int t = h < HL ? h - HL : RX + (h - HL); // column offset from c0
        const int k = lane_of(t);
        const int idx = t - k * RX; // its place among that lane's RX
        float v = __shfl_sync(FULL, win[HL + idx], (lane + k) & 31);
        if (lane + k < 0 || lane + k > 31) v = halo[m][h < HL ? h : h - HL];
        win[HL + t] = v;
      }
      // Input row yb + m adds to output row yb + m - i + VL with weight row i: ring slot (m - i) mod KR.
#pragma unroll
      for (int i = 0; i < KR; ++i) {
        const int s = (m - i + KR) % KR;
#pragma unroll
        for (int j4 = 0; j4 < KCP; j4 += 4) {
          const float4 w4 = *reinterpret_cast<const float4 *>(&ws[i * KCP + j4]);
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            const int j = j4 + jj;
            if (j < KC) {
              const float wv = jj == 0 ? w4.x : jj == 1 ? w4.y : jj == 2 ? w4.z : w4.w;
#pragma unroll
              for (int k = 0; k < RX; ++k) acc[s][k] = fmaf(win[k + j], wv, acc[s][k]);
            }
          }
        }
      }
      // Output row yb + m - VR has all its input rows: stored, and its slot cleared.
      const int s = (m + 1) % KR;
      const int oy = yb + m - VR;
      if (active && oy >= r0 && oy < r1) {
        graw o;
#pragma unroll
        for (int k = 0; k < RX; ++k) o.v[k] = tb_from_float<DTYPE>(acc[s][k]);
        *reinterpret_cast<graw *>(y + oy * stride + c0) = o;
      }
#pragma unroll
      for (int k = 0; k < RX; ++k) acc[s][k] = 0.0f;
    }
  }
}
