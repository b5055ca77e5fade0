"""matmul_fp32_fp16_fp8 in PyTorch eager (OPERATORS.md): C (M, N) = A (M, K) @ B (K, N).
fp32: torch.matmul with allow_tf32 = True (set at import, process-wide, as TileBench's module did);
fp16: torch.matmul (fp32 accumulation, fp16 output); fp8 e4m3: torch._scaled_mm(a, b as a
column-major view, scale_a = ones(M, 1), scale_b = ones(1, N), out_dtype = bf16) then .to(e4m3fn).
_scaled_mm takes B only column-major (cuBLASLt runs fp8 only as TN), and b arrives as the operator
defines it, row-major (K, N): the column-major copy is made inside the timed call, as TileBench's
run(a, b) made it and as every other implementation's plan transposes B inside its timed interval
(docs/MEASUREMENT.md, "Layouts an implementation needs"). The unit scales depend on no input value:
prepare() makes them once per case, untimed, as the lib plan makes cuBLASLt's once."""
import torch

torch.backends.cuda.matmul.allow_tf32 = True


def prepare(a, b, case):
    if a.dtype != torch.float8_e4m3fn:
        return {}
    m, n = a.shape[0], b.shape[1]
    return {"scale_a": torch.ones((m, 1), dtype=torch.float32, device=a.device),
            "scale_b": torch.ones((1, n), dtype=torch.float32, device=a.device)}


def forward(a, b, case, scale_a=None, scale_b=None):
    if scale_a is None:
        return torch.matmul(a, b)
    b_col = b.t().contiguous().t()  # timed: the layout _scaled_mm needs, from the operator's b
    c = torch._scaled_mm(a, b_col, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)
    return c.to(torch.float8_e4m3fn)
