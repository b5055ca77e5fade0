"""reverse_array in Triton: out[i] = x[n - 1 - i]. A program per BLOCK elements: the mirrored block
of x, x[n - (pid + 1) BLOCK .. n - pid BLOCK), loaded in order as BLOCK / V rows of V elements (V =
16 bytes of the dtype), each row flipped (within a thread: no data crosses threads) and stored as
the V elements of out its mirror covers. Loads and stores are both in ascending order, so with n
a multiple of 16 (triton's divisibility specialisation: the grid's every n) both are 16-byte
vectors (PTX ld/st.global.v4). Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def reverse_array_kernel(x, out, n, BLOCK: tl.constexpr, V: tl.constexpr):
    base = n - (tl.program_id(0).to(tl.int64) + 1) * BLOCK
    rows = tl.arange(0, BLOCK // V)
    cols = tl.arange(0, V)
    src = base + rows[:, None] * V + cols[None, :]
    blk = tl.load(x + src, mask=src >= 0)
    # x[base + r V + V - 1 - c] (row r flipped, column c) belongs at out[n - base - (r + 1) V + c]
    dst = (n - base - (rows[:, None] + 1) * V) + cols[None, :]
    tl.store(out + dst, tl.flip(blk, 1), mask=(dst >= 0) & (dst < n))
