"""2d_max_pooling in Triton: a program per BR x BC tile of the output viewed as (N*C*Hout, Wout),
the K x K taps as strided masked loads (-inf outside the image), NaN-propagating maxima.
Config: BR, BC, num_warps."""
import triton
import triton.language as tl


@triton.jit
def max_pool2d_kernel(x, out, out_rows, H, W, Hout, Wout, K: tl.constexpr, S: tl.constexpr, P: tl.constexpr,
                      BR: tl.constexpr, BC: tl.constexpr):
    orow = (tl.program_id(1) * BR + tl.arange(0, BR))[:, None]
    ow = (tl.program_id(0) * BC + tl.arange(0, BC))[None, :]
    plane = (orow // Hout).to(tl.int64)
    oh = orow % Hout
    live = (orow < out_rows) & (ow < Wout)
    m = tl.full((BR, BC), float("-inf"), tl.float32)
    for a in tl.static_range(K):
        r = oh * S - P + a
        row_ok = live & (r >= 0) & (r < H)
        base = (plane * H + r) * W
        for b in tl.static_range(K):
            c = ow * S - P + b
            v = tl.load(x + base + c, mask=row_ok & (c >= 0) & (c < W), other=float("-inf")).to(tl.float32)
            m = tl.maximum(m, v, propagate_nan=tl.PropagateNan.ALL)
    tl.store(out + orow.to(tl.int64) * Wout + ow, m.to(out.dtype.element_ty), mask=live)
