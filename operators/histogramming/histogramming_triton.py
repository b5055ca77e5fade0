"""histogramming in Triton: hist[b] = #{i : input[i] == b}, values outside [0, num_bins) not counted.
Two methods (operator.lua's METHOD):
1. histogramming_zero_kernel clears the histogram; histogramming_kernel runs at most PROGRAMS x SMs
   programs, each walking BLOCK-element chunks that far apart, counting them with tl.histogram into
   a NUM_BINS-wide int32 accumulator, then adding its non-zero bins to the histogram with one
   atomic add per bin. tl.histogram's cost grows with NUM_BINS (triton 3.6 lowers it to a warp
   ballot per bit of the bin index and a popcount per bin each lane owns: at 4096 bins 2048
   POPC, 255 registers and a 352-byte stack per 16 elements a thread).
2. histogramming_zero_kernel clears a (programs, pitch) partials buffer; histogramming_atomic_kernel
   adds 1 per element into its program's own row (one RED each: relaxed, on addresses no other
   program touches, so no contention between SMs; 189 instructions per 16 elements a thread
   whatever num_bins); histogramming_sum_kernel sums the rows per bin in a fixed order.
Triton has no shared-memory atomics, which the cuda implementation's private histograms use.
Config: METHOD, BLOCK, PROGRAMS, num_warps."""
import triton
import triton.language as tl


@triton.jit
def histogramming_zero_kernel(hist, num_bins, BLOCK: tl.constexpr):
    b = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(hist + b, tl.zeros([BLOCK], dtype=tl.int32), mask=b < num_bins)


@triton.jit
def histogramming_kernel(input, hist, n, num_bins, BLOCK: tl.constexpr, NUM_BINS: tl.constexpr):
    acc = tl.zeros([NUM_BINS], dtype=tl.int32)
    offs = tl.arange(0, BLOCK)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    for start in range(tl.program_id(0).to(tl.int64) * BLOCK, n, step):
        i = start + offs
        m = i < n
        v = tl.load(input + i, mask=m, other=-1)
        acc += tl.histogram(v, NUM_BINS, mask=m & (v >= 0) & (v < num_bins))
    b = tl.arange(0, NUM_BINS)
    tl.atomic_add(hist + b, acc, mask=(acc != 0) & (b < num_bins), sem="relaxed")


@triton.jit
def histogramming_atomic_kernel(input, part, n, num_bins, pitch, BLOCK: tl.constexpr):
    row = part + tl.program_id(0).to(tl.int64) * pitch  # this program's own histogram
    offs = tl.arange(0, BLOCK)
    step = tl.num_programs(0).to(tl.int64) * BLOCK
    for start in range(tl.program_id(0).to(tl.int64) * BLOCK, n, step):
        i = start + offs
        v = tl.load(input + i, mask=i < n, other=-1)
        # uncounted elements (outside [0, num_bins), past n) go to the row's spare slot num_bins:
        # an unmasked atomic is one RED, a masked one a branch around it
        tl.atomic_add(row + tl.where((v >= 0) & (v < num_bins), v, num_bins), 1, sem="relaxed")


@triton.jit
def histogramming_sum_kernel(part, hist, rows, num_bins, pitch, BR: tl.constexpr, BB: tl.constexpr):
    b = tl.program_id(0) * BB + tl.arange(0, BB)
    bm = b < num_bins
    acc = tl.zeros([BB], dtype=tl.int32)
    for r0 in range(0, rows, BR):
        r = (r0 + tl.arange(0, BR)).to(tl.int64)
        acc += tl.sum(tl.load(part + r[:, None] * pitch + b[None, :], mask=(r < rows)[:, None] & bm[None, :], other=0), 0)
    tl.store(hist + b, acc, mask=bm)
