"""rmsnorm in PyTorch eager (OPERATORS.md 15): F.rms_norm(x, (K,), weight=rms_w, eps=1e-6),
statistics in fp32, output in the input dtype."""
import torch.nn.functional as F


def forward(x, rms_w, case):
    return F.rms_norm(x, (x.shape[-1],), weight=rms_w, eps=1e-6)
