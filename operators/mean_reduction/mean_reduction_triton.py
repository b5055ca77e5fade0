"""mean_reduction in Triton: out[r] = mean(x[r, :]) as fp32. A program per row streams it in
chunks of BLOCK columns into a BLOCK-wide fp32 accumulator (one add per element, every load of a
chunk in flight; num_stages pipelines the chunks), then one tree sum and a division by cols.
Config: BLOCK, num_warps, num_stages (oplib.triton_rows, loop mode)."""
import triton
import triton.language as tl


@triton.jit
def mean_reduction_kernel(x, out, rows, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + offs
        acc += tl.load(x + base + c, mask=c < cols, other=0.0).to(tl.float32)
    tl.store(out + row, tl.sum(acc, 0) / cols)
