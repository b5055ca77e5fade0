"""histogramming in Triton: hist[b] = #{i : input[i] == b}. Two kernels: histogramming_zero_kernel
clears the histogram; histogramming_kernel runs at most PROGRAMS programs, each walking BLOCK-element
chunks PROGRAMS apart, counting them with tl.histogram into a NUM_BINS-wide int32 accumulator (values
outside [0, num_bins) masked out: not counted), then adding its non-zero bins to the histogram with
one atomic add per bin.
Config: BLOCK, PROGRAMS (a multiple of the SM count, operator.lua), num_warps."""
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
