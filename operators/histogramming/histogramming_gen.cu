// histogramming_gen.cu: the operator's input (OPERATORS.md 21, TileBench's newest generator):
// input[i] = i % num_bins, int32, run once per case. Kernel: histogramming_gen.
extern "C" __global__ void histogramming_gen(int *x, long long n, int num_bins) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    x[i] = (int)(i % num_bins);
}
