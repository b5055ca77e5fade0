// 2d_max_pooling_ref.cu: the reference, one thread per output element of (N*C, Hout, Wout): the
// max over the K x K window at (oh * S - P, ow * S - P), positions outside the image skipped (-inf
// padding), NaN propagating (PyTorch's max_pool2d). Defines: DTYPE. Kernel: max_pool2d_ref.
#include "tb_common.cuh"

extern "C" __global__ void max_pool2d_ref(const DTYPE *x, DTYPE *y, long long planes, int H, int W, int Hout,
                                          int Wout, int K, int S, int P) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= planes * Hout * Wout) return;
  const int ow = (int)(i % Wout), oh = (int)((i / Wout) % Hout);
  const long long plane = i / ((long long)Wout * Hout);
  float m = -INFINITY;
  for (int a = 0; a < K; ++a) {
    const int r = oh * S - P + a;
    if (r < 0 || r >= H) continue;
    for (int b = 0; b < K; ++b) {
      const int c = ow * S - P + b;
      if (c < 0 || c >= W) continue;
      const float v = tb_to_float(x[(plane * H + r) * W + c]);
      if (v > m || v != v) m = v;
      if (m != m) break;
    }
  }
  y[i] = tb_from_float<DTYPE>(m);
}
