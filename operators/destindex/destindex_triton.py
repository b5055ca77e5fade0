"""destindex in Triton: out_nope[dest_loc[t]] = kv_nope[t], out_rope[dest_loc[t]] = kv_rope[t] (the
scatter of index_copy_; dest_loc is a permutation, so no clone: docs/LAYOUT.md). A program per
token t: its kv_nope row of LN elements in BLOCK-element chunks, its kv_rope row of LR elements
whole (BR = LR rounded up to a power of two). A dest_loc outside [0, T) is skipped.
Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def destindex_kernel(kv_nope, kv_rope, dest_loc, out_nope, out_rope, T,
                     LN: tl.constexpr, LR: tl.constexpr, BLOCK: tl.constexpr, BR: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    d = tl.load(dest_loc + t)
    ok = (d >= 0) & (d < T)
    for s in tl.static_range(0, LN, BLOCK):
        offs = s + tl.arange(0, BLOCK)
        m = (offs < LN) & ok
        tl.store(out_nope + d * LN + offs, tl.load(kv_nope + t * LN + offs, mask=m), mask=m)
    offs = tl.arange(0, BR)
    m = (offs < LR) & ok
    tl.store(out_rope + d * LR + offs, tl.load(kv_rope + t * LR + offs, mask=m), mask=m)
