"""swiglu in Triton over the flattened (M, N) inputs: s = round_dtype(x / (1 + exp(-x))) (F.silu in
fp32), out = round_dtype(s * y). A program per BLOCK elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask).to(tl.float32)
    b = tl.load(y + offs, mask=mask)
    s = tl.math.div_rn(a, 1.0 + tl.exp(-a)).to(out.dtype.element_ty).to(tl.float32)
    tl.store(out + offs, (s * b.to(tl.float32)).to(out.dtype.element_ty), mask=mask)
