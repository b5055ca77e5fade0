"""weight_dequant in Triton: Y[i, j] = X[i, j] * S[i // T, j // T], fp32 product rounded once to the
dtype. A program per TPB tile widths of one row (program_id 0: the tile block, 1: the row): X as a
(TPB, TP2) block, TP2 = T rounded up to a power of two (the excess masked), the TPB scales loaded
once and broadcast. Config: TPB, num_warps."""
import triton
import triton.language as tl


@triton.jit
def weight_dequant_kernel(X, S, Y, N, SN, T: tl.constexpr, TP2: tl.constexpr, TPB: tl.constexpr):
    row = tl.program_id(1).to(tl.int64)
    tiles = tl.program_id(0) * TPB + tl.arange(0, TPB)
    within = tl.arange(0, TP2)
    cols = tiles[:, None] * T + within[None, :]
    mask = (within[None, :] < T) & (cols < N)
    x = tl.load(X + row * N + cols, mask=mask).to(tl.float32)
    s = tl.load(S + (row // T) * SN + tiles, mask=tiles < SN).to(tl.float32)
    tl.store(Y + row * N + cols, (x * s[:, None]).to(Y.dtype.element_ty), mask=mask)
