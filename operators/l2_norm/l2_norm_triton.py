"""l2_norm in Triton over the last dimension: a program per row, the whole row in registers; the sum
of squares in fp32, rstd = 1 / sqrt(ss + eps) (IEEE), y = x * rstd rounded once to the dtype.
Config: num_warps (oplib.triton_rows)."""
import triton
import triton.language as tl


@triton.jit
def l2_norm_kernel(x, out, rows, cols, eps, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x + base + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.math.div_rn(1.0, tl.sqrt_rn(tl.sum(v * v, 0) + eps))
    tl.store(out + base + offs, (v * rstd).to(out.dtype.element_ty), mask=mask)
