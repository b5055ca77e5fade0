"""argmax in Triton over the last dimension, as int64: the first index of the maximum; the first NaN
wins (torch.argmax). A program per row streams it in chunks of BLOCK columns; each lane keeps its
first strictly larger value and its index, and its first NaN; then the row's maximum over the
lanes and the smallest index holding it (or the smallest NaN index).
Config: BLOCK, num_warps, num_stages (oplib.triton_rows, loop mode)."""
import triton
import triton.language as tl


@triton.jit
def argmax_kernel(x, out, rows, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    offs = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], -float("inf"), tl.float32)
    best_i = tl.full([BLOCK], 2147483647, tl.int32)
    nan_i = tl.full([BLOCK], 2147483647, tl.int32)
    for start in range(0, cols, BLOCK):
        c = start + offs
        m = c < cols
        v = tl.load(x + base + c, mask=m, other=-float("inf")).to(tl.float32)
        take = m & ((v > best) | (best_i == 2147483647))
        best = tl.where(take, v, best)
        best_i = tl.where(take, c, best_i)
        nan_i = tl.where(m & (v != v) & (nan_i == 2147483647), c, nan_i)
    top = tl.max(best, 0)
    first = tl.min(tl.where(best == top, best_i, 2147483647), 0)
    first_nan = tl.min(nan_i, 0)
    res = tl.where(first_nan < 2147483647, first_nan, first)
    tl.store(out + row, res.to(tl.int64))
