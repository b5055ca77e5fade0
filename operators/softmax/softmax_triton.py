"""softmax in Triton over the last dimension: a program per row, the whole row in registers
(BLOCK = the next power of two of the row, masked lanes -inf); max, exp(x - max) (the hardware
ex2 path), its fp32 sum, one IEEE division per element, rounded once to the dtype.
Config: num_warps (oplib.triton_rows)."""
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x, out, rows, cols, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x + base + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, 0))
    s = tl.sum(e, 0)
    tl.store(out + base + offs, tl.math.div_rn(e, s).to(out.dtype.element_ty), mask=mask)
