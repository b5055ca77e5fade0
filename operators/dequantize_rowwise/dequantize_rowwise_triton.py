"""dequantize_rowwise in Triton: out[r, c] = fp16((state_x[r] * x[r, c]) * (1 / 127)), both products
in fp32, one rounding to fp16. A program per BLOCK columns of one row (program_id 0: the column
block, 1: the row), the row's scale loaded once. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def dequantize_rowwise_kernel(x, state_x, out, cols, BLOCK: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    q = tl.load(x + row * cols + offs, mask=mask).to(tl.float32)
    s = tl.load(state_x + row)
    v = (s * q) * (1.0 / 127.0)
    tl.store(out + row * cols + offs, v.to(tl.float16), mask=mask)
