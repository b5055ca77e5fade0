"""flash_decode in PyTorch eager (OPERATORS.md 25): flash-decoding's stage 2. For each (b, h):
nb = ceil(b_seqlen[b] / block_seq), m = max over s < nb of lse, w_s = exp(lse - m) (0 for s >= nb),
out = sum_s w_s * mid_o[b, h, s, :] / (sum_s w_s + 1e-10). The block mask is built on the device
from b_seqlen (no host read); block_seq is the case's (TileBench passes it as a 0-d CPU tensor)."""
import torch


def forward(mid_o, mid_o_lse, b_seqlen, case):
    block_seq = case["block_seq"]
    nb = torch.div(b_seqlen.to(torch.int64) + block_seq - 1, block_seq, rounding_mode="floor")
    keep = torch.arange(mid_o.shape[2], device=mid_o.device)[None, :] < nb[:, None]  # (batch, num_blocks)
    lse = mid_o_lse.masked_fill(~keep[:, None, :], float("-inf"))
    m = lse.max(dim=-1, keepdim=True).values
    w = torch.exp(lse - m).nan_to_num(0.0)  # a row with no block: -inf - -inf
    return (w.unsqueeze(-1) * mid_o).sum(dim=2) / (w.sum(dim=-1, keepdim=True) + 1e-10)
