"""jacobi_stencil_2d in Triton: a program per BR x BC tile of out (rows, cols); boundary points
copied, interior points 0.25 * (((up + down) + left) + right) in fp32 with every op rounded to the
dtype (PyTorch eager's rounding points). The neighbours are shifted masked loads of the same tile
(L1/L2 hits after the centre's). Config: BR, BC, num_warps."""
import triton
import triton.language as tl


@triton.jit
def jacobi_stencil_2d_kernel(x, out, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    r = (tl.program_id(1) * BR + tl.arange(0, BR))[:, None]
    c = (tl.program_id(0) * BC + tl.arange(0, BC))[None, :]
    inside = (r < rows) & (c < cols)
    interior = inside & (r > 0) & (r < rows - 1) & (c > 0) & (c < cols - 1)
    off = r.to(tl.int64) * cols + c
    dt = out.dtype.element_ty
    mid = tl.load(x + off, mask=inside)
    up = tl.load(x + off - cols, mask=interior, other=0.0).to(tl.float32)
    dn = tl.load(x + off + cols, mask=interior, other=0.0).to(tl.float32)
    lf = tl.load(x + off - 1, mask=interior, other=0.0).to(tl.float32)
    rt = tl.load(x + off + 1, mask=interior, other=0.0).to(tl.float32)
    t = (up + dn).to(dt).to(tl.float32)
    t = (t + lf).to(dt).to(tl.float32)
    t = (t + rt).to(dt).to(tl.float32)
    tl.store(out + off, tl.where(interior, (t * 0.25).to(dt), mid), mask=inside)
