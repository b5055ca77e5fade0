"""tables.py: the tables docs/PERFORMANCE.md quotes from a results/<gpu>/csv directory with torch
as the baseline (issues 15 and 21): per operator, the geometric mean over its verified cases of
each implementation's speedup over torch (t_torch / t_impl, TileBench's definition), the median
rho, and the cases where the implementation is slower than torch; then per category; then, where
TileBench's published GH200 CSVs have the operator, our speedup_triton beside theirs per dtype.
usage: python3 bench/speedups/tables.py [CSV_DIR] [MODE] [ANCHOR_DIR]
defaults: results/H200/csv default ../shared/anchors/tilebench-GH200"""
import csv
import math
import os
import statistics
import sys

csv_dir = sys.argv[1] if len(sys.argv) > 1 else "results/H200/csv"
mode = sys.argv[2] if len(sys.argv) > 2 else "default"
anchor_dir = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "anchors", "tilebench-GH200")
CATEGORY = {"vector_add": "Point-wise", "mul2": "Point-wise", "relu": "Point-wise", "sigmoid": "Point-wise",
            "swiglu": "Point-wise", "softmax": "Reduction/Norm", "layernorm": "Reduction/Norm",
            "rmsnorm": "Reduction/Norm", "mean_reduction": "Reduction/Norm", "argmax": "Reduction/Norm",
            "matmul_fp32_fp16_fp8": "MatMul/Attn", "batched_matmul": "MatMul/Attn"}
ALIASES = {"fp8_e4m3fn": "fp8_e4m3"}


def num(v):
    try:
        x = float(v)
        return x if x > 0 and math.isfinite(x) else None
    except (TypeError, ValueError):
        return None


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, f="%.2f"):
    return f % x if x is not None else ""


ops = sorted(f[:-len("_%s.csv" % mode)] for f in os.listdir(csv_dir) if f.endswith("_%s.csv" % mode))
impls_all = ["cuda", "triton", "lib"]
by_cat = {}
print("| operator | cases | speedup over torch: cuda | triton | lib | median rho: torch | cuda | triton | cuda slower than torch | triton slower than torch |")
print("|---|---|---|---|---|---|---|---|---|---|")
for op in ops:
    rows = list(csv.DictReader(open(os.path.join(csv_dir, "%s_%s.csv" % (op, mode)))))
    if not rows or "torch_ms" not in rows[0]:
        continue
    sp, rho, slower = {}, {}, {}
    for r in rows:
        t = num(r.get("torch_ms")) if r.get("status_torch") == "ok" else None
        for impl in ["torch"] + impls_all:
            if r.get("status_%s" % impl) != "ok":
                continue
            ti = num(r.get("%s_ms" % impl))
            if ti and t and impl != "torch":
                sp.setdefault(impl, []).append(t / ti)
                if ti > t:
                    slower.setdefault(impl, []).append("%s %s" % (r["dtype"], r["params"]))
            rv = num(r.get("rho_%s" % impl))
            if rv:
                rho.setdefault(impl, []).append(rv)
    cat = CATEGORY.get(op, "?")
    for impl, xs in sp.items():
        by_cat.setdefault((cat, impl), []).extend(xs)
        by_cat.setdefault(("all", impl), []).extend(xs)
    med = lambda impl: statistics.median(rho[impl]) if rho.get(impl) else None
    print("| %s | %d | %s | %s | %s | %s | %s | %s | %d | %d |" % (
        op, len(rows), fmt(gmean(sp.get("cuda"))), fmt(gmean(sp.get("triton"))), fmt(gmean(sp.get("lib"))),
        fmt(med("torch")), fmt(med("cuda")), fmt(med("triton")), len(slower.get("cuda", [])), len(slower.get("triton", []))))
print()
print("| category | geomean speedup over torch: cuda | triton | lib |")
print("|---|---|---|---|")
for cat in ["Point-wise", "Reduction/Norm", "MatMul/Attn", "all"]:
    print("| %s | %s | %s | %s |" % (cat, fmt(gmean(by_cat.get((cat, "cuda")))), fmt(gmean(by_cat.get((cat, "triton")))),
                                     fmt(gmean(by_cat.get((cat, "lib"))))))
print()
if os.path.isdir(anchor_dir):
    print("| operator | dtype | cases | our H200 speedup_triton (geomean) | TileBench GH200 speedup_triton (geomean) | ratio | our largest case | theirs |")
    print("|---|---|---|---|---|---|---|---|")
    for op in ops:
        a = os.path.join(anchor_dir, "%s_%s.csv" % (op, mode))
        if not os.path.exists(a):
            continue
        theirs = {(r["params"], ALIASES.get(r["dtype"], r["dtype"])): r for r in csv.DictReader(open(a))}
        ours = list(csv.DictReader(open(os.path.join(csv_dir, "%s_%s.csv" % (op, mode)))))
        for dt in sorted({r["dtype"] for r in ours}, key=lambda d: [r["dtype"] for r in ours].index(d)):
            o, t, last = [], [], None
            for r in ours:
                if r["dtype"] != dt or r.get("status_triton") != "ok" or r.get("status_torch") != "ok":
                    continue
                th = theirs.get((r["params"], dt))
                mine = num(r.get("torch_ms")) and num(r.get("triton_ms")) and num(r["torch_ms"]) / num(r["triton_ms"])
                their = th and num(th.get("speedup_triton"))
                if mine and their:
                    o.append(mine)
                    t.append(their)
                    last = (mine, their)
            if o:
                print("| %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f |" % (op, dt, len(o), gmean(o), gmean(t), gmean(o) / gmean(t), last[0], last[1]))
