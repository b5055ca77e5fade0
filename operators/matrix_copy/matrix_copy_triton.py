"""matrix_copy in Triton: B = A over the N * N elements (OPERATORS.md 38's `A + 0`; the copy keeps
-0.0, which compares equal to +0.0). A program per BLOCK elements. Config: BLOCK, num_warps."""
import triton
import triton.language as tl


@triton.jit
def matrix_copy_kernel(A, B, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(B + offs, tl.load(A + offs, mask=mask), mask=mask)
