"""2d_conv in PyTorch eager (OPERATORS.md 33): TileBench's reference, F.conv2d(input, weight,
None, stride, padding, groups) (cuDNN; fp32 may run in TF32: PyTorch's default
torch.backends.cudnn.allow_tf32 = True, left as it is)."""
import torch.nn.functional as F


def forward(input, weight, case):
    return F.conv2d(input, weight, None, case["stride"], case["padding"], case["groups"])
