"""flash_attention in Triton: a FlashAttention-2-style forward, O = softmax(Q K^T / sqrt(D) + causal)
V per (b, h), fp16 in and out. Program (query tile, b * h) holds a [BM, HEAD_DIM] Q tile, walks key
tiles of BN (causal: up to its last row), S = tl.dot(q, k^T) scaled into the log2 domain and masked
(causal: key > query; keys past S), online softmax in fp32 (running max, row sums, the accumulator
rescaled by exp2 of the max's rise), acc += tl.dot(P as fp16, v); O = acc / l rounded to fp16.
Query tiles are taken last-first (the longest causal rows start first).
Config: BM, BN, num_warps, num_stages (operator.lua)."""
import triton
import triton.language as tl


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
        n_end = tl.minimum(S, (pid_m + 1) * BM)
    else:
        n_end = S
    for n0 in range(0, n_end, BN):
        cols = n0 + tl.arange(0, BN)
        cmask = cols < S
        k = tl.load(K + base + cols[None, :].to(tl.int64) * HEAD_DIM + d[:, None], mask=cmask[None, :], other=0.0)
        s = tl.dot(q, k) * scale_log2
        ok = cmask[None, :]
        if CAUSAL:
            ok = ok & (cols[None, :] <= rows[:, None])
        s = tl.where(ok, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_use = tl.where(m_new == -float("inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_use)
        p = tl.math.exp2(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None].to(tl.int64) * HEAD_DIM + d[None, :], mask=cmask[:, None], other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(O + base + rows[:, None].to(tl.int64) * HEAD_DIM + d[None, :], out.to(tl.float16), mask=rmask[:, None])
