"""layernorm in Triton over the last dimension: a program per row, the whole row in registers; mean,
then the centred (biased) variance from the held row, rstd = 1 / sqrt(var + eps) (IEEE sqrt and
division), y = (x - mean) * rstd * w + b in fp32, rounded once to the dtype.
Config: num_warps (oplib.triton_rows)."""
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x, weight, bias, out, rows, cols, eps, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x + base + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(v, 0) / cols
    d = tl.where(mask, v - mean, 0.0)
    var = tl.sum(d * d, 0) / cols
    rstd = tl.math.div_rn(1.0, tl.sqrt_rn(var + eps))
    w = tl.load(weight + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out + base + offs, (d * rstd * w + b).to(out.dtype.element_ty), mask=mask)
