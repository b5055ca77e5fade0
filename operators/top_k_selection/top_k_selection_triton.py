"""top_k_selection in Triton: the k largest values, descending, by rounds of per-program top-KP:
topk_stage_kernel sorts a BLOCK-element chunk of its input descending (tl.sort) and keeps the first
COUNT (KP, the power of two >= k, while several chunks remain; k in the last round, which has one
program). Each round divides the candidates by BLOCK / KP, so a round or three cover the grid.
Values are compared as int32 keys that order like the floats, NaN the largest (docs/SORTING.md):
key = bits ^ ((bits >> 31) & 0x7FFFFFFF), every NaN to 0x7FFFFFFF; lanes past the end hold the
smallest key (-2^31, never a real value's), which a round keeps only where its chunk has fewer
than COUNT real values. The rounds pass keys (int32) between them; the last writes values.
Config: BLOCK (a power of two, at least 2 KP), num_warps."""
import triton
import triton.language as tl


@triton.jit
def topk_stage_kernel(src, dst, n, COUNT: tl.constexpr, BLOCK: tl.constexpr, IN_FLOAT: tl.constexpr,
                      OUT_FLOAT: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    i = pid.to(tl.int64) * BLOCK + r
    m = i < n
    if IN_FLOAT:
        x = tl.load(src + i, mask=m, other=0.0)
        bits = x.to(tl.int32, bitcast=True)
        key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
        key = tl.where(x != x, 0x7FFFFFFF, key)
        key = tl.where(m, key, -2147483648)
    else:
        key = tl.load(src + i, mask=m, other=-2147483648)
    s = tl.sort(key, descending=True)
    o = pid.to(tl.int64) * COUNT + r
    if OUT_FLOAT:
        v = (s ^ ((s >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)
        tl.store(dst + o, v, mask=r < COUNT)
    else:
        tl.store(dst + o, s, mask=r < COUNT)
