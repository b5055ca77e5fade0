"""cross_entropy in PyTorch eager (OPERATORS.md 17): F.cross_entropy(logits, targets,
reduction="none"), the per-row loss in the logits dtype (the log-softmax in fp32 inside)."""
import torch.nn.functional as F


def forward(logits, targets, case):
    return F.cross_entropy(logits, targets, reduction="none")
