"""block_sparse_attention in PyTorch eager (OPERATORS.md 26): causal block-sparse attention with GQA.
TileBench's reference is torch.compile(flex_attention) with a BlockMask; this is the eager
computation with the same semantics: F.scaled_dot_product_attention(q, k, v, attn_mask,
scale=1/sqrt(D), enable_gqa=True), attn_mask the boolean (M, M) matrix of admissible (query, key)
pairs -- key block (m // BLOCK_M, n // BLOCK_N) listed in the CSR layout, and n <= m -- broadcast
over batch and heads. prepare() builds that mask once per case from the layout tensors (untimed: it
is a function of the layout alone, as a BlockMask is built once for a layout); PyTorch picks the
SDPA kernel that takes a boolean mask and GQA (docs/ATTENTION.md)."""
import torch
import torch.nn.functional as F


def prepare(q, k, v, layout_crow, layout_col, case):
    m = q.shape[2]
    bm, bn = int(case["BLOCK_M"]), int(case["BLOCK_N"])
    rows = layout_crow.shape[0] - 1
    cols = (m + bn - 1) // bn
    crow = layout_crow.long()
    counts = crow[1:] - crow[:-1]
    r = torch.repeat_interleave(torch.arange(rows, device=q.device), counts)
    c = layout_col.long()[: int(crow[-1].item())]
    blocks = torch.zeros((rows, cols), dtype=torch.bool, device=q.device)
    blocks[r, c] = True
    mask = blocks.repeat_interleave(bm, 0).repeat_interleave(bn, 1)[:m, :m]
    mask &= torch.ones((m, m), dtype=torch.bool, device=q.device).tril()
    return {"mask": mask}


def forward(q, k, v, layout_crow, layout_col, case, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0 / float(case["D"]) ** 0.5,
                                          enable_gqa=True)
