"""dropout in Triton: out = round(round(x * x_keep) * scale) (PyTorch eager's roundings of
(x * x_keep) * (1 / (1 - p)): each product in fp32, rounded to the dtype), the keep-mask an input
and scale the fp32 value of 1 / (1 - p). A program per BLOCK elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def dropout_kernel(x, x_keep, out, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask).to(tl.float32)
    m = tl.load(x_keep + offs, mask=mask).to(tl.float32)
    kept = (a * m).to(out.dtype.element_ty).to(tl.float32)
    tl.store(out + offs, (kept * scale).to(out.dtype.element_ty), mask=mask)
