"""layernorm in PyTorch eager (OPERATORS.md 14): F.layer_norm over the last dim K with weight and
bias, eps = 1e-5 (TileBench's run() default), statistics in fp32, output in the input dtype."""
import torch.nn.functional as F


def forward(x, weight, bias, case):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)
