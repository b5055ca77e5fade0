"""flash_decode in Triton: flash-decoding's stage 2 (the lse-weighted combine of split-KV partial
outputs), split over the KV blocks like the `cuda` kernel but in two launches:
- flash_decode_split_kernel: program (s, bh) takes blocks [s * CHUNK, (s + 1) * CHUNK) of the
  nb = min(ceil(b_seqlen[b] / block_seq), num_blocks) of row bh as one [CHUNK, BLOCK_D] tile,
  m = max lse, w = exp(lse - m), l = sum w, acc = sum w * mid_o (fp32), stored as row (bh, s) of
  part: acc (head_dim floats), m, l;
- flash_decode_combine_kernel: program bh reads its S partial rows (BLOCK_S at a time), M = max m,
  out = sum e^(m - M) acc / (sum e^(m - M) l + 1e-10). Empty shares (m = -inf) weigh 0.
Config: CHUNK (blocks per program), num_warps (operator.lua)."""
import triton
import triton.language as tl


@triton.jit
def flash_decode_split_kernel(mid_o, lse, b_seqlen, part, heads, num_blocks, block_seq, head_dim,
                              CHUNK: tl.constexpr, BLOCK_D: tl.constexpr):
    s = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    nsplit = tl.num_programs(0)
    length = tl.load(b_seqlen + bh // heads)
    nb = tl.minimum(tl.where(length <= 0, 0, (length - 1) // block_seq + 1), num_blocks)
    r = s * CHUNK + tl.arange(0, CHUNK)
    rm = r < nb
    d = tl.arange(0, BLOCK_D)
    dm = d < head_dim
    e = tl.load(lse + bh * num_blocks + r, mask=rm, other=-float("inf"))
    v = tl.load(mid_o + (bh * num_blocks + r)[:, None] * head_dim + d[None, :], mask=rm[:, None] & dm[None, :],
                other=0.0)
    m = tl.max(e, 0)
    w = tl.where(rm, tl.exp(e - m), 0.0)
    acc = tl.sum(w[:, None] * v, 0)
    base = (bh * nsplit + s) * (head_dim + 2)
    tl.store(part + base + d, acc, mask=dm)
    tl.store(part + base + head_dim, m)
    tl.store(part + base + head_dim + 1, tl.sum(w, 0))


@triton.jit
def flash_decode_combine_kernel(part, out, head_dim, nsplit, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    row = head_dim + 2
    base = bh * nsplit * row
    d = tl.arange(0, BLOCK_D)
    dm = d < head_dim
    mm = tl.full([BLOCK_S], -float("inf"), tl.float32)
    for start in range(0, nsplit, BLOCK_S):
        c = start + tl.arange(0, BLOCK_S)
        mm = tl.maximum(mm, tl.load(part + base + c * row + head_dim, mask=c < nsplit, other=-float("inf")))
    mx = tl.max(mm, 0)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    ls = tl.zeros([BLOCK_S], dtype=tl.float32)
    for start in range(0, nsplit, BLOCK_S):
        c = start + tl.arange(0, BLOCK_S)
        cm = c < nsplit
        mc = tl.load(part + base + c * row + head_dim, mask=cm, other=-float("inf"))
        lc = tl.load(part + base + c * row + head_dim + 1, mask=cm, other=0.0)
        w = tl.where(cm & (mc > -float("inf")), tl.exp(mc - mx), 0.0)
        ls += w * lc
        v = tl.load(part + base + c[:, None] * row + d[None, :], mask=cm[:, None] & dm[None, :], other=0.0)
        acc += tl.sum(w[:, None] * v, 0)
    tl.store(out + bh * head_dim + d, acc / (tl.sum(ls, 0) + 1e-10), mask=dm)
