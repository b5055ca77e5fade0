"""leaky_relu in Triton: out = x > 0 ? x : 0.01 * x, the product in fp32 rounded once to the dtype
(F.leaky_relu; NaN propagates). A program per BLOCK elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    f = tl.load(x + offs, mask=mask).to(tl.float32)
    r = tl.where(f > 0, f, f * 0.01)
    tl.store(out + offs, r.to(out.dtype.element_ty), mask=mask)
