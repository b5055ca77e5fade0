"""fused_activation in Triton: z = x * gate + bias, out = z / (1 + exp(-z)) (silu), fp32; exp is the
hardware ex2 path, the division IEEE. A program per BLOCK elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def fused_activation_kernel(x, gate, bias, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x + offs, mask=mask).to(tl.float32)
    g = tl.load(gate + offs, mask=mask).to(tl.float32)
    b = tl.load(bias + offs, mask=mask).to(tl.float32)
    z = a * g + b
    tl.store(out + offs, tl.math.div_rn(z, 1.0 + tl.exp(-z)).to(out.dtype.element_ty), mask=mask)
