"""vector_add in Triton: out = x + y. A program per BLOCK elements; floats are added in fp32 and
rounded once to the dtype (torch's `+` on half types), int8 wraps. Compiled ahead of time by
tilebench (host/python/tb_triton.py) and launched from C; config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask)
    b = tl.load(y + offs, mask=mask)
    if x.dtype.element_ty.is_floating():
        r = (a.to(tl.float32) + b.to(tl.float32)).to(out.dtype.element_ty)
    else:
        r = a + b
    tl.store(out + offs, r, mask=mask)
