"""quantize_global in PyTorch eager (OPERATORS.md 10): out = x.to(torch.float16), round to nearest
even; no absmax, scale or clamp."""
import torch


def forward(x, case):
    return x.to(torch.float16)
