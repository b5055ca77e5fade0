"""rope in PyTorch eager (OPERATORS.md 9): the rotate-half rotation of q (B, S, H, D) by cos, sin
(S, D/2), broadcast over batch and heads, elementwise ops in q's dtype; a new tensor."""
import torch


def forward(q, cos, sin, case):
    half = q.shape[-1] // 2
    q1, q2 = q[..., :half], q[..., half:]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    return torch.cat([q1 * c - q2 * s, q2 * c + q1 * s], dim=-1)
