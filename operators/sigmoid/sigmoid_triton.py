"""sigmoid in Triton: out = 1 / (1 + exp(-x)) in fp32, rounded once to the dtype (torch's formula;
exp is the hardware ex2 path, the division IEEE). A program per BLOCK elements. Config: BLOCK,
num_warps."""
import triton
import triton.language as tl


@triton.jit
def sigmoid_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    f = tl.load(x + offs, mask=mask).to(tl.float32)
    s = tl.math.div_rn(1.0, 1.0 + tl.exp(-f))
    tl.store(out + offs, s.to(out.dtype.element_ty), mask=mask)
