"""flash_attention in PyTorch eager (OPERATORS.md 24): F.scaled_dot_product_attention(q, k, v,
is_causal=True), fp16 in and out; PyTorch picks its fused SDPA kernel (fp32 accumulation)."""
import torch.nn.functional as F


def forward(q, k, v, case):
    return F.scaled_dot_product_attention(q, k, v, is_causal=bool(case.get("causal", True)))
