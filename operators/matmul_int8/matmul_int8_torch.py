"""matmul_int8 in PyTorch eager (OPERATORS.md 28): B (K/4, N) uint8 unpacked slice-major into Bu
(K, N) int8 (row i * K/4 + k = ((B[k] >> 2i) & 3) - 1), then C = A @ Bu in int32 by
torch._int_mm (cuBLASLt's int8 GEMM: exact, as the semantics ask). Where _int_mm does not take the
shape (M <= 16, K or N not a multiple of 8) the product is TileBench's own: an fp32 matmul with
allow_tf32 = False (exact for these ranges) cast to int32; unlike TileBench's run() this restores
the flag, so other operators' matmuls in the same process keep their TF32 setting. The unpack is
part of the timed computation, as in TileBench."""
import torch


def prepare(a, b, case):
    return {"shifts": torch.arange(0, 8, 2, dtype=torch.uint8, device=b.device).view(4, 1, 1)}


def forward(a, b, case, shifts=None):
    k4, n = b.shape
    bu = (((b.unsqueeze(0) >> shifts) & 3).to(torch.int8) - 1).view(4 * k4, n)
    m, k = a.shape
    if m > 16 and k % 8 == 0 and n % 8 == 0:
        return torch._int_mm(a, bu)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(a.float(), bu.float()).to(torch.int32)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
