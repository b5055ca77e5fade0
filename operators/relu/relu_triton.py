"""relu in Triton: out = x > 0 ? x : 0, NaN kept (torch.relu), int8 too. A program per BLOCK
elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask)
    keep = (a > 0) | (a != a)  # a != a: NaN, which torch.relu passes through
    tl.store(out + offs, tl.where(keep, a, tl.zeros_like(a)), mask=mask)
