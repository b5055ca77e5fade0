"""batch_normalization in Triton: training-mode batch norm of x (N, C) over the rows, statistics in
fp32, y = x * scale + shift (scale = gamma / sqrt(var + eps), shift = beta - mean * scale) rounded to
the dtype. Three kernels:
- batch_normalization_stats_kernel, over (column tiles, row ranges of rows_per rows): sums of
  d = x - K and d^2 per column over its range in a [BLOCK_N, BLOCK_C] fp32 accumulator,
  K = x[0, c] (shifted data: no cancellation), stored as row rb of part (2, nsplit, C);
- batch_normalization_finalize_kernel, over column tiles: totals the nsplit partial rows of its
  columns (BLOCK_R at a time), mean = K + S1 / N, var = S2 / N - (S1 / N)^2, and stores the
  columns' scale and shift (ss, 2 x C fp32): the partials are read once in all;
- batch_normalization_apply_kernel, over (column tiles, row ranges): y = x * scale + shift over its
  range, the ranges in reverse order (the stats kernel's last ranges are the ones still in L2).
Until session 9 the apply kernel totalled the partials itself: every one of its nsplit x tiles
programs read all nsplit partial rows of its columns (128 MB of L2 reads at C = 1024, nsplit = 128,
about 0.1 ms whatever N).
Config: BLOCK_C, BLOCK_N, SPLIT (row ranges), num_warps (operator.lua)."""
import triton
import triton.language as tl


@triton.jit
def batch_normalization_stats_kernel(x, part, N, C, rows_per, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    rb = tl.program_id(1)
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = c < C
    k = tl.load(x + c, mask=cm, other=0.0).to(tl.float32)
    r0 = rb.to(tl.int64) * rows_per
    acc1 = tl.zeros([BLOCK_N, BLOCK_C], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_N, BLOCK_C], dtype=tl.float32)
    for start in range(0, rows_per, BLOCK_N):
        i = start + tl.arange(0, BLOCK_N)
        r = r0 + i
        m = ((i < rows_per) & (r < N))[:, None] & cm[None, :]
        v = tl.load(x + r[:, None] * C + c[None, :], mask=m, other=0.0).to(tl.float32)
        d = tl.where(m, v - k[None, :], 0.0)
        acc1 += d
        acc2 += d * d
    nsplit = tl.num_programs(1).to(tl.int64)
    tl.store(part + rb.to(tl.int64) * C + c, tl.sum(acc1, 0), mask=cm)
    tl.store(part + (nsplit + rb) * C + c, tl.sum(acc2, 0), mask=cm)


@triton.jit
def batch_normalization_finalize_kernel(x, gamma, beta, part, ss, N, C, nsplit, eps, BLOCK_C: tl.constexpr,
                                        BLOCK_R: tl.constexpr):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = c < C
    k = tl.load(x + c, mask=cm, other=0.0).to(tl.float32)
    s1 = tl.zeros([BLOCK_C], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, nsplit, BLOCK_R):
        rr = (start + tl.arange(0, BLOCK_R)).to(tl.int64)
        m = (rr < nsplit)[:, None] & cm[None, :]
        s1 += tl.sum(tl.load(part + rr[:, None] * C + c[None, :], mask=m, other=0.0), 0)
        s2 += tl.sum(tl.load(part + (nsplit + rr)[:, None] * C + c[None, :], mask=m, other=0.0), 0)
    md = s1 / N
    var = tl.maximum(s2 / N - md * md, 0.0)
    rstd = tl.math.div_rn(1.0, tl.sqrt_rn(var + eps))
    scale = tl.load(gamma + c, mask=cm, other=0.0).to(tl.float32) * rstd
    shift = tl.load(beta + c, mask=cm, other=0.0).to(tl.float32) - (k + md) * scale
    tl.store(ss + c, scale, mask=cm)
    tl.store(ss + C + c, shift, mask=cm)


@triton.jit
def batch_normalization_apply_kernel(x, ss, y, N, C, rows_per, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    rb = tl.num_programs(1) - 1 - tl.program_id(1)
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = c < C
    scale = tl.load(ss + c, mask=cm, other=0.0)
    shift = tl.load(ss + C + c, mask=cm, other=0.0)
    r0 = rb.to(tl.int64) * rows_per
    for start in range(0, rows_per, BLOCK_N):
        i = start + tl.arange(0, BLOCK_N)
        r = r0 + i
        m = ((i < rows_per) & (r < N))[:, None] & cm[None, :]
        offs = r[:, None] * C + c[None, :]
        v = tl.load(x + offs, mask=m, other=0.0).to(tl.float32)
        tl.store(y + offs, (v * scale[None, :] + shift[None, :]).to(y.dtype.element_ty), mask=m)
