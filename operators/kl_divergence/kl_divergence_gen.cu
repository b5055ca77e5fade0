// kl_divergence_gen.cu: the operator's input generator (OPERATORS.md 18), run once per case after
// the seeded randn: each row of x (rows, cols) fp32 becomes, in place, softmax(x) (LOG = 0: y_true,
// strictly positive) or log_softmax(x) (LOG = 1: log_y_pred). One block of 256 threads per row;
// max, then sum of exp(x - max), both in fp32 with the accurate expf/logf. Kernel:
// kl_divergence_gen.
extern "C" __global__ void __launch_bounds__(256) kl_divergence_gen(float *x, int rows, int cols, int log_out) {
  __shared__ float red[256];
  float *xr = x + (long long)blockIdx.x * cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += 256) m = fmaxf(m, xr[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) s += expf(xr[c] - m);
  red[threadIdx.x] = s;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
    __syncthreads();
  }
  s = red[0];
  const float ls = logf(s);
  for (int c = threadIdx.x; c < cols; c += 256) xr[c] = log_out ? xr[c] - m - ls : expf(xr[c] - m) / s;
}
