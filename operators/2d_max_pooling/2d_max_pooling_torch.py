"""2d_max_pooling in PyTorch eager (OPERATORS.md 35): the flat input viewed (N, C, H, W),
F.max_pool2d(kernel_size, stride, padding), the result flattened."""
import torch.nn.functional as F


def forward(input, case):
    n, c, h = case["N"], case["C"], case["H"]
    w = case.get("W", h)
    y = F.max_pool2d(input.view(n, c, h, w), kernel_size=case["kernel_size"], stride=case["stride"],
                     padding=case["padding"])
    return y.reshape(-1)
