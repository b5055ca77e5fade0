"""matrix_transpose in Triton: out[j, i] = x[i, j], x (m, n), out (n, m). A program per (BM, BN) tile
of x (program_id 0: the column block, 1: the row block): the tile is loaded along x's rows and
stored along out's rows, triton converting the layout between the two through shared memory.
Config: BM, BN, num_warps."""
import triton
import triton.language as tl


@triton.jit
def matrix_transpose_kernel(x, out, m, n, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(1).to(tl.int64) * BM + tl.arange(0, BM)
    rn = tl.program_id(0).to(tl.int64) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < m) & (rn[None, :] < n)
    t = tl.load(x + rm[:, None] * n + rn[None, :], mask=mask)
    tl.store(out + rn[:, None] * m + rm[None, :], tl.trans(t), mask=tl.trans(mask))
