"""gaussian_blur in Triton: a program per BR x BC tile of the output (rows x cols, flat), the KR x KC
taps as shifted masked loads of the image (zero outside it; the shifts hit L1/L2 after the first),
each times its weight, summed in fp32 and rounded once to the dtype. Config: BR, BC, num_warps."""
import triton
import triton.language as tl


@triton.jit
def gaussian_blur_kernel(x, w, out, rows, cols, KR: tl.constexpr, KC: tl.constexpr, BR: tl.constexpr,
                         BC: tl.constexpr):
    r = (tl.program_id(1) * BR + tl.arange(0, BR))[:, None]
    c = (tl.program_id(0) * BC + tl.arange(0, BC))[None, :]
    acc = tl.zeros((BR, BC), dtype=tl.float32)
    for i in tl.static_range(KR):
        rr = r + (i - KR // 2)
        row_ok = (rr >= 0) & (rr < rows)
        base = rr.to(tl.int64) * cols
        for j in tl.static_range(KC):
            cc = c + (j - KC // 2)
            m = row_ok & (cc >= 0) & (cc < cols)
            wv = tl.load(w + i * KC + j).to(tl.float32)
            acc += tl.load(x + base + cc, mask=m, other=0.0).to(tl.float32) * wv
    tl.store(out + r.to(tl.int64) * cols + c, acc.to(out.dtype.element_ty), mask=(r < rows) & (c < cols))
