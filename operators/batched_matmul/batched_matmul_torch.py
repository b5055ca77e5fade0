"""batched_matmul in PyTorch eager (OPERATORS.md): flat A viewed as (BATCH, M, K), flat B as
(BATCH, K, N), C = torch.matmul(A3, B3) returned flattened to (BATCH*M*N,); allow_tf32 = True for
fp32 (set at import, process-wide, as TileBench's module did)."""
import torch

torch.backends.cuda.matmul.allow_tf32 = True


def forward(A, B, case):
    b, m = case["BATCH"], case["M"]  # N = K = M
    return torch.matmul(A.view(b, m, m), B.view(b, m, m)).view(-1)
