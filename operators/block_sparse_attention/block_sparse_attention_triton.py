"""block_sparse_attention in Triton: causal block-sparse attention with GQA (OPERATORS.md 26), fp16
in and out, fp32 accumulation. Program (query tile of BM rows, b * H / HPC + head group): HPC query
heads of one kv group (HPC divides H / H_kv) x BM rows stacked into one [HPC * BM, HEAD_DIM] tile,
so each K and V tile it loads serves HPC heads (GQA). BM divides BLOCK_M, so the tile lies in one
layout row r; the program walks the key blocks the CSR layout lists for r (col_idx[row_ptr[r] ..
row_ptr[r + 1])), each a [BLOCK_N, HEAD_DIM] tile of kv head h // (H / H_kv): S = tl.dot(q, k^T)
scaled into the log2 domain, masked (key > query, key >= M), online softmax in fp32 (running max,
row sums, the accumulator rescaled by exp2 of the max's rise), acc += tl.dot(P as fp16, v);
O = acc / l rounded to fp16 (0 for a row with no admissible key).
Config: BM, HPC, num_warps, num_stages (operator.lua)."""
import triton
import triton.language as tl


@triton.jit
def block_sparse_attention_kernel(Q, K, V, O, row_ptr, col_idx, M, H, H_kv, scale_log2, HEAD_DIM: tl.constexpr,
                                  BM: tl.constexpr, HPC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    groups = H // HPC
    b = tl.program_id(1) // groups
    h0 = (tl.program_id(1) % groups) * HPC
    hk = h0 // (H // H_kv)  # the HPC heads share it
    kbase = (b * H_kv + hk).to(tl.int64) * M * HEAD_DIM
    idx = tl.arange(0, HPC * BM)
    rows = pid_m * BM + idx % BM  # query position of each stacked row
    heads = b * H + h0 + idx // BM  # its (b, h)
    qoff = (heads.to(tl.int64) * M + rows) * HEAD_DIM
    rmask = rows < M
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + qoff[:, None] + d[None, :], mask=rmask[:, None], other=0.0)
    m_i = tl.full([HPC * BM], -float("inf"), tl.float32)
    l_i = tl.zeros([HPC * BM], dtype=tl.float32)
    acc = tl.zeros([HPC * BM, HEAD_DIM], dtype=tl.float32)
    r = (pid_m * BM) // BLOCK_M
    start = tl.load(row_ptr + r)
    end = tl.load(row_ptr + r + 1)
    for i in range(start, end):
        cols = tl.load(col_idx + i) * BLOCK_N + tl.arange(0, BLOCK_N)
        cmask = cols < M
        k = tl.load(K + kbase + cols[None, :].to(tl.int64) * HEAD_DIM + d[:, None], mask=cmask[None, :], other=0.0)
        s = tl.dot(q, k) * scale_log2
        ok = cmask[None, :] & (cols[None, :] <= rows[:, None])
        s = tl.where(ok, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_use = tl.where(m_new == -float("inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_use)
        p = tl.math.exp2(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + kbase + cols[:, None].to(tl.int64) * HEAD_DIM + d[None, :], mask=cmask[:, None], other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(O + qoff[:, None] + d[None, :], out.to(tl.float16), mask=rmask[:, None])
