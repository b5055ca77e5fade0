// histogramming_ref.cu: the reference. histogramming_ref_zero clears hist; histogramming_ref adds
// one per element with a global atomicAdd, one thread per element. Values outside [0, num_bins)
// (never generated; torch would raise or grow the output) are not counted. Kernels:
// histogramming_ref_zero, histogramming_ref.
extern "C" __global__ void histogramming_ref_zero(int *hist, int num_bins) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < num_bins) hist[b] = 0;
}

extern "C" __global__ void histogramming_ref(const int *x, int *hist, long long n, int num_bins) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int v = x[i];
  if (v >= 0 && v < num_bins) atomicAdd(&hist[v], 1);
}
