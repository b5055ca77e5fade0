"""torch_kernels.py: which CUDA kernels our `torch` implementations launch, and how long each takes,
at the largest case of the operators whose torch time docs/WINNERS.md leaves unexplained:
- weight_dequant fp16, M = 10240: TileBench's torch, the same formulation, took 4.6x ours on the GH200;
- matmul_int8, K = 20480: torch._int_mm at 13x our cuda kernel's time (which cuBLASLt kernel?);
- gaussian_blur fp32, 10240^2 with a 7 x 7 kernel: torch's conv2d at 10x its fp16 time (which engine?);
- 1d_conv fp16, L = 2621440: cuDNN far from both roofs (the engine PyTorch's conv1d gets).
Runs each operator's own <op>_torch.py forward (the code tilebench times) under torch.profiler,
three calls after a warm-up, and prints the kernels sorted by their GPU time. Needs a GPU and torch.
usage: python3 bench/winners/torch_kernels.py [NAME...]   (NAMEs: weight_dequant matmul_int8 gaussian_blur 1d_conv)"""
import importlib.util
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEV = "cuda"


def load(op):
    """The operator's torch implementation module (operators/<op>/<op>_torch.py)."""
    path = os.path.join(ROOT, "operators", op, op + "_torch.py")
    spec = importlib.util.spec_from_file_location(op + "_torch", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def show(name, fn):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
    print("== %s (3 calls)" % name)
    table = None
    for key in ("self_device_time_total", "self_cuda_time_total"):  # the key's name moved in torch 2.x
        try:
            table = prof.key_averages().table(sort_by=key, row_limit=15)
            break
        except (AttributeError, KeyError, ValueError):
            continue
    print(table if table is not None else prof.key_averages())


def weight_dequant():
    m = load("weight_dequant")
    x = torch.randn(10240, 10240, device=DEV, dtype=torch.float16)
    s = torch.randn(80, 80, device=DEV, dtype=torch.float16)
    show("weight_dequant fp16 M=10240", lambda: m.forward(x, s, {"TILE_SIZE": 128}))


def matmul_int8():
    m = load("matmul_int8")
    a = torch.randint(-64, 65, (2048, 20480), device=DEV, dtype=torch.int8)
    b = torch.randint(0, 256, (5120, 2048), device=DEV, dtype=torch.uint8)
    extra = m.prepare(a, b, {})
    show("matmul_int8 K=20480", lambda: m.forward(a, b, {}, **extra))


def gaussian_blur():
    m = load("gaussian_blur")
    x = torch.randn(10240 * 10240, device=DEV, dtype=torch.float32)
    k = torch.rand(49, device=DEV, dtype=torch.float32)
    case = {"input_rows": 10240, "input_cols": 10240, "kernel_rows": 7, "kernel_cols": 7}
    show("gaussian_blur fp32 10240^2 7x7", lambda: m.forward(x, k / k.sum(), case))


def conv1d():
    m = load("1d_conv")
    x = torch.randn(1, 128, 2621440, device=DEV, dtype=torch.float16)
    w = torch.randn(128, 128, 3, device=DEV, dtype=torch.float16)
    case = {"stride": 1, "padding": 1, "groups": 1}
    show("1d_conv fp16 L=2621440", lambda: m.forward(x, w, case))


RUNS = {"weight_dequant": weight_dequant, "matmul_int8": matmul_int8, "gaussian_blur": gaussian_blur,
        "1d_conv": conv1d}

if __name__ == "__main__":
    names = sys.argv[1:] or list(RUNS)
    for n in names:
        if n not in RUNS:
            sys.exit("unknown name %s (known: %s)" % (n, " ".join(RUNS)))
    print("torch", torch.__version__, torch.cuda.get_device_name(0))
    for n in names:
        RUNS[n]()
