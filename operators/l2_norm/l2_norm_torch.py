"""l2_norm in PyTorch eager (OPERATORS.md 16): TileBench's reference, the norm in fp32
(vector_norm(..., dtype=float32)), squared, y = (x * rsqrt(norm_sq + eps)).to(x.dtype): the multiply
in fp32, one cast. eps = 1e-6."""
import torch


def forward(x, case):
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True, dtype=torch.float32)
    return (x * torch.rsqrt(norm * norm + case["eps"])).to(x.dtype)
