"""kl_divergence in Triton: loss[r] = sum_c y[r, c] * (log y[r, c] - lp[r, c]), fp32. A program per row
streams both rows in chunks of BLOCK columns into a BLOCK-wide fp32 accumulator (num_stages
pipelines the chunks), then one tree sum. Masked lanes load y = 1, lp = 0: a zero term.
Config: BLOCK, num_warps, num_stages (oplib.triton_rows, loop mode)."""
import triton
import triton.language as tl


@triton.jit
def kl_divergence_kernel(log_y_pred, y_true, out, rows, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + offs
        m = c < cols
        lp = tl.load(log_y_pred + base + c, mask=m, other=0.0)
        y = tl.load(y_true + base + c, mask=m, other=1.0)
        acc += y * (tl.log(y) - lp)
    tl.store(out + row, tl.sum(acc, 0))
