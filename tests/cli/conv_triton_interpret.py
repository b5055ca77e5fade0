"""The convolutions' Triton kernels (operators/_shared/conv_triton.py) run by triton's CPU
interpreter (TRITON_INTERPRET=1, no GPU) on small odd-sized 1-D, 2-D and 3-D cases against a
float64 numpy cross-correlation: strides 1-3, padding 0-16, groups 1-4, kernel sizes 1-4, 7 x 7
and 33 (past 32 taps: the per-axis padding tests instead of tap bits), channel counts that BK does
not divide, edge tiles in m and n, both input layouts (CL 0 and 1), fp32 and
fp16, split over the K steps (SPLIT: fp32 partials, then the reduction), with the next step's
A tile prefetched through registers (PF), launched as conv_triton.lua's plan launches them (the
weight transposed to (taps, Cout, Cin_g), with CL in one launch with the input's transpose to
channels-last; the same grid). Prints one line per case; exits 1 on any mismatch, 77 when triton
or numpy does not import (TB_REQUIRE_TRITON set: 1).
usage: TRITON_INTERPRET=1 python3 conv_triton_interpret.py TILEBENCH_HOME"""
import itertools
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"
try:
    import numpy as np
    import triton  # noqa: F401
except Exception as e:  # noqa: BLE001
    print("no triton/numpy here: %s" % e)
    sys.exit(1 if os.environ.get("TB_REQUIRE_TRITON") else 77)
import importlib.util

home = sys.argv[1]
spec = importlib.util.spec_from_file_location("conv_triton", os.path.join(home, "operators/_shared/conv_triton.py"))
ct = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ct)


class _Storage:
    def __init__(self, t): self.t = t
    def data_ptr(self): return self.t.a.ctypes.data
    def cpu(self): return self
    def copy_(self, other): return self


class Host:
    """A numpy array dressed as the torch tensor the interpreter takes (already host memory, so
    its copies to and from "the device" are the array itself)."""
    def __init__(self, a):
        self.a = a
        self.dtype = {np.float32: "torch.float32", np.float16: "torch.float16"}[a.dtype.type]
    def data_ptr(self): return self.a.ctypes.data
    def untyped_storage(self): return _Storage(self)
    def new_empty(self, *a, **k): return self
    def set_(self, *a): return self
    def copy_(self, other): return self
    def storage_offset(self): return 0
    def size(self): return self.a.shape
    def stride(self): return self.a.strides


def reference(x, w, stride, pad, groups):
    """float64 grouped cross-correlation; x (B, Cin, *sp), w (Cout, Cin_g, *k), pad on every axis."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    rank = x.ndim - 2
    B, Cin = x.shape[:2]
    Cout, cin_g = w.shape[:2]
    ks = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * rank)
    outs = [(x.shape[2 + d] + 2 * pad - ks[d]) // stride + 1 for d in range(rank)]
    out = np.zeros((B, Cout) + tuple(outs))
    cout_g = Cout // groups
    for g in range(groups):
        xs = xp[:, g * cin_g:(g + 1) * cin_g]
        for tap in itertools.product(*[range(k) for k in ks]):
            sl = tuple(slice(tap[d], tap[d] + stride * (outs[d] - 1) + 1, stride) for d in range(rank))
            patch = xs[(slice(None), slice(None)) + sl]  # (B, cin_g, *outs)
            wt = w[(slice(g * cout_g, (g + 1) * cout_g), slice(None)) + tap]  # (cout_g, cin_g)
            out[:, g * cout_g:(g + 1) * cout_g] += np.einsum("bc...,oc->bo...", patch, wt)
    return out


def cdiv(a, b): return (a + b - 1) // b


def run(x, w, stride, pad, groups, BM, BN, BK, CL, SPLIT=1, PF=False):
    """conv_triton.lua's plan in numpy and the interpreter."""
    rank = x.ndim - 2
    B, Cin = x.shape[:2]
    Cout, cin_g = w.shape[:2]
    cout_g = Cout // groups
    sp = [1] * (3 - rank) + list(x.shape[2:])
    ks = [1] * (3 - rank) + list(w.shape[2:])
    outs = [1] * (3 - rank) + [(x.shape[2 + d] + 2 * pad - w.shape[2 + d]) // stride + 1 for d in range(rank)]
    taps = ks[0] * ks[1] * ks[2]
    S, M = sp[0] * sp[1] * sp[2], outs[0] * outs[1] * outs[2]
    wt = np.zeros(taps * Cout * cin_g, x.dtype)
    TR, TC = 16, 16
    wsrc = np.ascontiguousarray(w).reshape(-1)
    src = np.ascontiguousarray(x).reshape(-1)
    n_w = cdiv(Cout * cin_g, TR) * cdiv(taps, TC)
    if CL:  # one launch for both transposes
        xt = np.zeros(B * Cin * S, x.dtype)
        n_x = cdiv(Cin, TR) * cdiv(S, TC)
        ct.conv_prep_kernel[(n_w + B * n_x,)](Host(wsrc), Host(wt), Cout * cin_g, taps, Host(src), Host(xt), Cin, S,
                                              n_w, n_x, TR=TR, TC=TC)
        src = xt
    else:
        ct.conv_transpose_kernel[(n_w, 1)](Host(wsrc), Host(wt), Cout * cin_g, taps, TR=TR, TC=TC)
    n_out = B * Cout * M
    out = np.full(n_out, np.nan, x.dtype)
    ws = np.full(SPLIT * n_out, np.nan, np.float32) if SPLIT > 1 else out
    grid = (cdiv(M, BM) * cdiv(cout_g, BN), B * groups, SPLIT)
    ct.conv_kernel[grid](Host(src), Host(wt), Host(out), Host(ws), Cin, Cout, cin_g, cout_g, groups, sp[0], sp[1],
                         sp[2], outs[0], outs[1], outs[2], stride, pad, n_out, RANK=rank, KD=ks[0], KH=ks[1], KW=ks[2],
                         BM=BM, BN=BN, BK=BK, CL=CL, EVEN_C=cin_g % BK == 0, SPLIT=SPLIT, PF=PF)
    if SPLIT > 1:
        ct.conv_splitk_reduce_kernel[(cdiv(n_out, 64),)](Host(ws), Host(out), n_out, SPLIT=SPLIT, BLOCK=64)
    return out.reshape((B, Cout) + tuple(outs[3 - rank:]))


# (rank, B, Cin, Cout, spatial, k, stride, pad, groups, BM, BN, BK)
CASES = [
    (1, 2, 8, 16, (37,), 3, 1, 1, 1, 32, 16, 16),
    (1, 1, 24, 20, (50,), 4, 2, 2, 2, 16, 16, 16),     # even k, stride 2, groups 2, Cin_g 12 < BK
    (1, 1, 32, 32, (29,), 1, 1, 0, 1, 16, 32, 32),     # 1 x 1
    (1, 1, 40, 24, (19,), 3, 3, 0, 4, 16, 16, 16),     # stride 3, groups 4, Cin_g 10
    (2, 1, 16, 16, (9, 9), 3, 1, 1, 1, 32, 16, 16),
    (2, 2, 12, 18, (11, 7), 3, 2, 1, 3, 16, 16, 16),   # W != H, groups 3
    (2, 1, 32, 48, (6, 6), 2, 1, 2, 1, 16, 32, 32),    # even k, padding 2 > k - 1: zero rows
    (2, 1, 16, 16, (10, 9), 7, 1, 3, 1, 32, 16, 16),   # 49 taps: per-axis tests, not tap bits
    (1, 1, 16, 16, (70,), 33, 1, 16, 1, 32, 16, 16),   # 33 taps
    (3, 1, 8, 16, (5, 6, 7), 3, 1, 1, 1, 32, 16, 16),
    (3, 1, 16, 8, (4, 5, 5), 3, 2, 1, 2, 16, 16, 16),  # stride 2, groups 2
]

failures = 0
# every case in both layouts, fp32 and fp16 (fp16 as given with the register prefetch PF, as the
# plan runs it); then split over the K steps (SPLIT 3: uneven shares, and more splits than steps
# where a case has fewer than 3; SPLIT 2 with PF: a prefetch past each share's last step)
RUNS = []
for c in CASES:
    RUNS += [(c, np.float32, False, 1, False), (c, np.float32, True, 1, False), (c, np.float16, True, 1, False),
             (c, np.float16, False, 1, True), (c, np.float16, True, 3, False), (c, np.float16, False, 2, True)]
for (rank, B, Cin, Cout, spatial, k, stride, pad, groups, BM, BN, BK), dtype, CL, SPLIT, PF in RUNS:
    rng = np.random.default_rng(hash((rank, Cin, Cout, spatial, k)) & 0xffff)
    x = rng.standard_normal((B, Cin) + spatial).astype(dtype)
    w = rng.standard_normal((Cout, Cin // groups) + (k,) * rank).astype(dtype)
    ref = reference(x, w, stride, pad, groups)
    got = run(x, w, stride, pad, groups, BM, BN, BK, CL, SPLIT, PF).astype(np.float64)
    # fp32: the interpreter's dot is fp32 (TF32 only on the GPU); fp16: one rounding of the output
    tol = 1e-4 if dtype == np.float32 else 2e-3
    err = np.abs(got - ref) - tol * (1 + np.abs(ref))
    ok = got.shape == ref.shape and np.all(err <= 0)
    name = "rank %d x%s w%s stride %d pad %d groups %d tiles %dx%dx%d %s CL %d SPLIT %d" % (
        rank, (B, Cin) + spatial, (Cout, Cin // groups) + (k,) * rank, stride, pad, groups, BM, BN, BK,
        np.dtype(dtype).name, CL, SPLIT) + (" PF" if PF else "")
    if ok:
        print("ok   " + name)
    else:
        failures += 1
        bad = np.argwhere(~(err <= 0)) if got.shape == ref.shape else []
        print("FAIL %s: %d mismatches, first %s got %s want %s" % (
            name, len(bad), bad[0] if len(bad) else got.shape, got[tuple(bad[0])] if len(bad) else "",
            ref[tuple(bad[0])] if len(bad) else ref.shape))
print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
