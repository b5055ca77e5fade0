"""rope in Triton: the rotate-half rotation of q (B, S, H, D) by cos, sin (S, D/2), each product and
the sum in fp32 rounded to the dtype (PyTorch eager's ops). A program per ROWS rows (b, s, h) by
HP2 columns (D/2 rounded up to a power of two, the excess masked): both halves of the rows, and
the rows' cos and sin, as 2-D blocks. Config: ROWS, num_warps."""
import triton
import triton.language as tl


@triton.jit
def rope_kernel(q, cos, sin, out, nrows, S, H, D, HALF, ROWS: tl.constexpr, HP2: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, HP2)
    mask = (rows < nrows)[:, None] & (cols < HALF)[None, :]
    s = (rows // H) % S
    qo = rows[:, None] * D + cols[None, :]
    co = s[:, None] * HALF + cols[None, :]
    dt = out.dtype.element_ty
    a = tl.load(q + qo, mask=mask).to(tl.float32)
    b = tl.load(q + qo + HALF, mask=mask).to(tl.float32)
    c = tl.load(cos + co, mask=mask).to(tl.float32)
    t = tl.load(sin + co, mask=mask).to(tl.float32)
    ac = (a * c).to(dt).to(tl.float32)
    bt = (b * t).to(dt).to(tl.float32)
    bc = (b * c).to(dt).to(tl.float32)
    at = (a * t).to(dt).to(tl.float32)
    tl.store(out + qo, (ac - bt).to(dt), mask=mask)
    tl.store(out + qo + HALF, (bc + at).to(dt), mask=mask)
