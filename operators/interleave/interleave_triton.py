"""interleave in Triton: out[2i] = A[i], out[2i + 1] = B[i]. A program per BLOCK elements of A and B,
which tl.interleave makes 2 * BLOCK contiguous elements of out. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def interleave_kernel(A, B, out, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    o = tl.interleave(tl.load(A + offs, mask=mask), tl.load(B + offs, mask=mask))
    oo = 2 * start + tl.arange(0, 2 * BLOCK)
    tl.store(out + oo, o, mask=oo < 2 * n)
