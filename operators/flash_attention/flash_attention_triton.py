"""flash_attention in Triton: a FlashAttention-2-style forward, O = softmax(Q K^T / sqrt(D) + causal)
V per (b, h), fp16 in and out. Program (query tile, b * h) holds a [BM, HEAD_DIM] Q tile and walks
key tiles of BN: S = tl.dot(q, k^T) (wgmma), online softmax in fp32 in the log2 domain (running
max m of the scaled scores, row sums, the accumulator rescaled by exp2 of the max's rise; the
scale folds into one FFMA per score: exp2(s * scale_log2 - m)), acc += tl.dot(P as fp16, v)
(wgmma); O = acc / l rounded to fp16. Two loops: the key tiles wholly below the diagonal (causal)
or wholly inside S (not causal) without any mask, then the diagonal / last tiles with the mask
(causal: key > query; keys past S). Query tiles are taken last-first within a head (the longest
causal rows start first; a head's programs stay together for L2 reuse of its K and V).
Until session 9 every tile was masked (a compare and a select per score: 150 of the 562
instructions of a BN = 64 step), with a separate scale multiply and a -inf guard per row.
Config: BM, BN, num_warps, num_stages (operator.lua)."""
import triton
import triton.language as tl


@triton.jit
def _step(q, K, V, base, n0, rows, d, m_i, l_i, acc, S, scale_log2, HEAD_DIM: tl.constexpr, BN: tl.constexpr,
          MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    cols = n0 + tl.arange(0, BN)
    if MASKED:
        cmask = cols < S
        k = tl.load(K + base + cols[None, :].to(tl.int64) * HEAD_DIM + d[:, None], mask=cmask[None, :], other=0.0)
    else:
        k = tl.load(K + base + cols[None, :].to(tl.int64) * HEAD_DIM + d[:, None])
    s = tl.dot(q, k)
    if MASKED:
        ok = cmask[None, :]
        if CAUSAL:
            ok = ok & (cols[None, :] <= rows[:, None])
        s = tl.where(ok, s, -float("inf"))
    # every row has an admissible key in the first tile it sees (key 0 or its own diagonal), so
    # m stays finite from the first step on
    m_new = tl.maximum(m_i, tl.max(s, 1) * scale_log2)
    alpha = tl.math.exp2(m_i - m_new)
    p = tl.math.exp2(s * scale_log2 - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    if MASKED:
        v = tl.load(V + base + cols[:, None].to(tl.int64) * HEAD_DIM + d[None, :], mask=cmask[:, None], other=0.0)
    else:
        v = tl.load(V + base + cols[:, None].to(tl.int64) * HEAD_DIM + d[None, :])
    acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
    return m_new, l_i, acc


@triton.jit
def flash_attention_kernel(Q, K, V, O, S, scale_log2, HEAD_DIM: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                           CAUSAL: tl.constexpr):
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * S * HEAD_DIM
    rows = pid_m * BM + tl.arange(0, BM)
    rmask = rows < S
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + rows[:, None].to(tl.int64) * HEAD_DIM + d[None, :], mask=rmask[:, None], other=0.0)
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        lo = (pid_m * BM) // BN * BN  # key tiles wholly before the query tile's first row: all admissible
        hi = tl.minimum(S, (pid_m + 1) * BM)
    else:
        lo = (S // BN) * BN
        hi = S
    for n0 in range(0, lo, BN):
        m_i, l_i, acc = _step(q, K, V, base, n0, rows, d, m_i, l_i, acc, S, scale_log2, HEAD_DIM, BN, False, CAUSAL)
    for n0 in range(lo, hi, BN):
        m_i, l_i, acc = _step(q, K, V, base, n0, rows, d, m_i, l_i, acc, S, scale_log2, HEAD_DIM, BN, True, CAUSAL)
    out = acc / l_i[:, None]
    tl.store(O + base + rows[:, None].to(tl.int64) * HEAD_DIM + d[None, :], out.to(tl.float16), mask=rmask[:, None])
