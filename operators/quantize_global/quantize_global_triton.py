"""quantize_global in Triton: out = fp16(x), round to nearest even (x.to(torch.float16)). A program
per BLOCK elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def quantize_global_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    f = tl.load(x + offs, mask=mask)
    tl.store(out + offs, f.to(tl.float16, fp_downcast_rounding="rtne"), mask=mask)
