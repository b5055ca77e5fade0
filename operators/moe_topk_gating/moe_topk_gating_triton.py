"""moe_topk_gating in Triton: per row of logits (rows, E), the K largest values in descending order
with equal values taken by the LOWER INDEX first (the reference's rule), weights = softmax of those
K values in fp32 (IEEE division) rounded to the dtype, indices int32. A program owns ROWS rows as
one [ROWS, BLOCK_E] tile (BLOCK_E = the next power of two of E, masked lanes unavailable); K
rounds each take the row's maximum over the still available columns and the smallest column
holding it, then mark that column taken. NaN is never generated (the rule then is torch's, NaN
first, in the reference and cuda only).
Config: ROWS, num_warps (operator.lua)."""
import triton
import triton.language as tl


@triton.jit
def moe_topk_gating_kernel(logits, weights, indices, rows, E, K: tl.constexpr, KP: tl.constexpr,
                           BLOCK_E: tl.constexpr, ROWS: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = r < rows
    c = tl.arange(0, BLOCK_E)
    avail = rmask[:, None] & (c[None, :] < E)
    v = tl.load(logits + r[:, None] * E + c[None, :], mask=avail, other=-float("inf")).to(tl.float32)
    kc = tl.arange(0, KP)
    sel_v = tl.full([ROWS, KP], -float("inf"), tl.float32)
    sel_i = tl.zeros([ROWS, KP], dtype=tl.int32)
    for s in tl.static_range(K):
        cur = tl.where(avail, v, -float("inf"))
        best = tl.max(cur, 1)
        first = tl.min(tl.where(avail & (cur == best[:, None]), c[None, :], BLOCK_E), 1)
        avail = avail & (c[None, :] != first[:, None])
        sel_v = tl.where(kc[None, :] == s, best[:, None], sel_v)
        sel_i = tl.where(kc[None, :] == s, first[:, None], sel_i)
    kmask = kc[None, :] < K
    top = tl.max(sel_v, 1)
    e = tl.where(kmask, tl.exp(sel_v - top[:, None]), 0.0)
    w = tl.math.div_rn(e, tl.sum(e, 1)[:, None])
    out = r[:, None] * K + kc[None, :]
    omask = rmask[:, None] & kmask
    tl.store(weights + out, w.to(weights.dtype.element_ty), mask=omask)
    tl.store(indices + out, sel_i, mask=omask)
