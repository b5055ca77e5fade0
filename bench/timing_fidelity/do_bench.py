"""do_bench.py: times the cases of kernels.cu with triton.testing.do_bench (its defaults: 25 ms
warm-up, 100 ms of repetitions, L2 flush by a 256 MB zero_ before each call), launching the same
cubin tilebench loads, through the driver API on torch's current stream.
usage: python3 do_bench.py CUBIN CASES OUT.csv    (writes kernel,do_bench_us,do_bench_wall_s)"""
import ctypes
import sys
import time

import torch
import triton.testing

cubin, cases_path, out_path = sys.argv[1:4]
cases = []
for line in open(cases_path):
    p = line.split()
    if len(p) == 6:
        cases.append(dict(name=p[0], kind=int(p[1]), n=int(p[2]), grid=int(p[4]), block=int(p[5])))

cuda = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cuda.cuGetErrorName(r, ctypes.byref(s))
        raise RuntimeError(f"{what}: {s.value.decode() if s.value else r}")

torch.empty(1, device="cuda")  # the primary context, current on this thread
mod = ctypes.c_void_p()
ck(cuda.cuModuleLoad(ctypes.byref(mod), cubin.encode()), "cuModuleLoad")
fns = {}
for name in ("copy4", "scale4", "add4", "fma_loop", "nop"):
    f = ctypes.c_void_p()
    ck(cuda.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()), "cuModuleGetFunction " + name)
    fns[name] = f

max_n = max(c["n"] for c in cases if c["kind"] in (0, 2))
a = torch.empty(max_n * 4, dtype=torch.float32, device="cuda")
b = torch.empty(max_n * 4, dtype=torch.float32, device="cuda")
c3 = torch.empty(16 << 20, dtype=torch.float32, device="cuda")
out = torch.empty(1024, dtype=torch.float32, device="cuda")

def launcher(fn, grid, block, args):
    holders = [ctypes.c_uint64(x.data_ptr()) if torch.is_tensor(x) else x for x in args]
    arr = (ctypes.c_void_p * len(holders))(*[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
    def run():
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        ck(cuda.cuLaunchKernel(fns[fn], grid, 1, 1, block, 1, 1, 0, stream, arr, None), "cuLaunchKernel " + fn)
    run.keep = (holders, arr)
    return run

def case_fn(c):
    g, bl, n = c["grid"], c["block"], ctypes.c_int64(c["n"])
    if c["kind"] == 0:
        return launcher("copy4", g, bl, [a, b, n])
    if c["kind"] == 1:
        return launcher("fma_loop", g, bl, [out, ctypes.c_int32(c["n"])])
    if c["kind"] == 3:
        return launcher("nop", g, bl, [])
    steps = [launcher("scale4", g, bl, [a, b, n, ctypes.c_float(2.0)]),
             launcher("add4", g, bl, [a, b, c3, n]),
             launcher("copy4", g, bl, [c3, a, n])]
    def run():
        for s in steps:
            s()
    return run

with open(out_path, "w") as f:
    f.write("kernel,do_bench_us,do_bench_wall_s\n")
    for c in cases:
        fn = case_fn(c)
        fn()
        torch.cuda.synchronize()
        t0 = time.monotonic()
        ms = triton.testing.do_bench(fn, return_mode="median")
        f.write(f"{c['name']},{ms * 1e3:.4f},{time.monotonic() - t0:.4f}\n")
        f.flush()
