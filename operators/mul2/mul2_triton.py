"""mul2 in Triton: out = x * 2 in the input dtype (x + x: exact in every float type, wraps in int8
like torch). A program per BLOCK elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def mul2_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask)
    tl.store(out + offs, a + a, mask=mask)
