// conv_ref.cu: the convolution operators' reference (1d_conv, 2d_conv, 3d_conv): one thread per
// output element of a grouped 3-D cross-correlation, no bias, no kernel flip (F.conv1d/2d/3d):
//   out[b, oc, z, y, x] = sum_{ic, a, c, e} in[b, g * Cin_g + ic, z*S + a - PD, y*S + c - PH, x*S + e - PW]
//                                            * w[oc, ic, a, c, e],   g = oc / Cout_g,
// positions outside the input counting 0, the sum in fp32 in the order (ic, a, c, e), rounded once
// to DTYPE. 1-D and 2-D are the same with D = H = 1 (KD = KH = 1, PD = PH = 0). Any size, stride,
// padding and groups. Defines: DTYPE. Kernel: conv_ref.
#include "tb_common.cuh"

extern "C" __global__ void conv_ref(const DTYPE *in, const DTYPE *w, DTYPE *out, int B, int Cin, int Cout, int G,
                                    int D, int H, int W, int OD, int OH, int OW, int KD, int KH, int KW, int S,
                                    int PD, int PH, int PW) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long per_b = (long long)Cout * OD * OH * OW;
  if (i >= (long long)B * per_b) return;
  const int b = (int)(i / per_b);
  long long r = i % per_b;
  const int ox = (int)(r % OW); r /= OW;
  const int oy = (int)(r % OH); r /= OH;
  const int oz = (int)(r % OD);
  const int oc = (int)(r / OD);
  const int cin_g = Cin / G, cout_g = Cout / G, g = oc / cout_g;
  float s = 0.0f;
  for (int ic = 0; ic < cin_g; ++ic) {
    const DTYPE *src = in + ((long long)b * Cin + (long long)g * cin_g + ic) * D * H * W;
    const DTYPE *wk = w + ((long long)oc * cin_g + ic) * KD * KH * KW;
    for (int a = 0; a < KD; ++a) {
      const int z = oz * S + a - PD;
      if (z < 0 || z >= D) continue;
      for (int c = 0; c < KH; ++c) {
        const int y = oy * S + c - PH;
        if (y < 0 || y >= H) continue;
        for (int e = 0; e < KW; ++e) {
          const int x = ox * S + e - PW;
          if (x < 0 || x >= W) continue;
          s += tb_to_float(src[((long long)z * H + y) * W + x]) * tb_to_float(wk[(a * KH + c) * KW + e]);
        }
      }
    }
  }
  out[i] = tb_from_float<DTYPE>(s);
}
