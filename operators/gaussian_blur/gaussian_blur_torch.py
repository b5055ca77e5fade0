"""gaussian_blur in PyTorch eager (OPERATORS.md 37): TileBench's reference, F.conv2d of the image
viewed (1, 1, R, C) with the kernel viewed (1, 1, kr, kc), padding (kr // 2, kc // 2), cropped to
(R, C) and flattened (cuDNN; fp32 may run in TF32, PyTorch's default cudnn.allow_tf32)."""
import torch.nn.functional as F


def forward(input, kernel, case):
    r, c = case["input_rows"], case.get("input_cols", case["input_rows"])
    kr, kc = case["kernel_rows"], case["kernel_cols"]
    y = F.conv2d(input.view(1, 1, r, c), kernel.view(1, 1, kr, kc), padding=(kr // 2, kc // 2))
    return y[0, 0, :r, :c].reshape(-1)
