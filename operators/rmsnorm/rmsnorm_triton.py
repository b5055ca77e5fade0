"""rmsnorm in Triton over the last dimension: a program per row, the whole row in registers; mean of
squares in fp32, rstd = 1 / sqrt(ms + eps) (IEEE), n = x * rstd (rounded to the dtype first when
ROUND_BEFORE_WEIGHT, ATen's composite path), y = n * w rounded to the dtype.
Config: num_warps (oplib.triton_rows); ROUND_BEFORE_WEIGHT comes from operator.lua."""
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x, rms_w, out, rows, cols, eps, BLOCK: tl.constexpr, ROUND_BEFORE_WEIGHT: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x + base + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.math.div_rn(1.0, tl.sqrt_rn(tl.sum(v * v, 0) / cols + eps))
    n = v * rstd
    if ROUND_BEFORE_WEIGHT:
        n = n.to(out.dtype.element_ty).to(tl.float32)
    w = tl.load(rms_w + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out + base + offs, (n * w).to(out.dtype.element_ty), mask=mask)
