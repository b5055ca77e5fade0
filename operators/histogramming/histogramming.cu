// histogramming.cu: hist[b] = #{i : x[i] == b} for b in [0, num_bins), int32 (the `cuda`
// implementation). Values outside [0, num_bins) are not counted (never generated). Two kernels,
// no global atomics, the same counts whatever the order:
// - histogramming_cuda: G blocks (the plan caps G at WAVES x the blocks the device holds; 0: one
//   block per chunk), each counting into a private histogram in shared memory (num_bins ints,
//   dynamic) while walking the input in chunks of BLOCK x UNROLL 16-byte vectors G chunks apart
//   (each thread issues its UNROLL loads before counting; shared-memory atomics per element: the
//   generated input, i % num_bins, gives a warp's lanes distinct bins but for pairs), then storing
//   it whole as row blockIdx.x of partials (G, num_bins).
// - histogramming_reduce: hist[b] = sum over the G rows of partials; a block of RBLOCK threads
//   covers 32 bins (a warp's width, coalesced) with RBLOCK / 32 threads over the rows, then a
//   shared-memory sum.
// One global atomic per non-zero bin per block was the first design: at the largest case that is
// up to G x num_bins = 1 M atomics on 4096 addresses at the end of a single wave; the partials
// cost one plain store and one load per bin and block instead.
// Unaligned input, or the n % 4 elements after the last whole vector, are counted one by one.
// Defines: BLOCK, UNROLL (histogramming_cuda); RBLOCK (histogramming_reduce). No define carries a
// case's size.
__device__ __forceinline__ void histogramming_add(int *sh, int v, int num_bins) {
  if ((unsigned)v < (unsigned)num_bins) atomicAdd(&sh[v], 1);
}

#ifdef BLOCK
extern "C" __global__ void __launch_bounds__(BLOCK)
histogramming_cuda(const int *__restrict__ x, int *__restrict__ partials, long long n, int num_bins) {
  extern __shared__ int sh[];
  for (int b = threadIdx.x; b < num_bins; b += BLOCK) sh[b] = 0;
  __syncthreads();
  const bool aligned = (reinterpret_cast<unsigned long long>(x) & 15ull) == 0;
  const long long nv = aligned ? n / 4 : 0; // whole 16-byte vectors
  const int4 *xv = reinterpret_cast<const int4 *>(x);
  const long long chunk = (long long)BLOCK * UNROLL;
  for (long long base = (long long)blockIdx.x * chunk; base < nv; base += (long long)gridDim.x * chunk) {
    int4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long i = base + u * BLOCK + threadIdx.x;
      v[u] = i < nv ? __ldg(xv + i) : make_int4(-1, -1, -1, -1);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      histogramming_add(sh, v[u].x, num_bins);
      histogramming_add(sh, v[u].y, num_bins);
      histogramming_add(sh, v[u].z, num_bins);
      histogramming_add(sh, v[u].w, num_bins);
    }
  }
  // the elements after the last whole vector (all of them when x is not 16-byte aligned)
  for (long long i = nv * 4 + (long long)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK)
    histogramming_add(sh, x[i], num_bins);
  __syncthreads();
  int *row = partials + (long long)blockIdx.x * num_bins;
  for (int b = threadIdx.x; b < num_bins; b += BLOCK) row[b] = sh[b];
}
#endif

#ifdef RBLOCK
extern "C" __global__ void __launch_bounds__(RBLOCK)
histogramming_reduce(const int *__restrict__ partials, int *__restrict__ hist, int g, int num_bins) {
  constexpr int TY = RBLOCK / 32;
  __shared__ int red[TY][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int b = blockIdx.x * 32 + tx;
  int s = 0;
  if (b < num_bins) {
#pragma unroll 4
    for (int r = ty; r < g; r += TY) s += partials[(long long)r * num_bins + b];
  }
  red[ty][tx] = s;
  __syncthreads();
  if (ty == 0 && b < num_bins) {
    int t = 0;
#pragma unroll
    for (int y = 0; y < TY; ++y) t += red[y][tx];
    hist[b] = t;
  }
}
#endif
