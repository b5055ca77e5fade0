#!/usr/bin/env python3
"""bench/power/estimators.py: issue 19's run-order spreads of bench/power/order.sh's processes under
three estimators of each row's time: the median of its samples (what rows reported until session
13), the mean, and the 5 % trimmed mean (heavy_estimate = "trimmed_mean", the default for loads
sampled on an exposure since session 13). Reads the journals order.sh left.

usage: estimators.py ORDER_DIR [ORDER_DIR ...]   (each: an order.sh OUTDIR, with runs.txt and
       results/<label>/runs/<id>/journal.jsonl)
Prints a markdown table per directory: each implementation's spread over all its processes and
over the processes that ran both (max - min over the median of the per-process values), and
E_lib's spread (lib / cuda within each process that ran both)."""
import glob
import json
import os
import statistics as S
import sys


def trimmed(xs, frac=0.05):
    s = sorted(xs)
    k = int(len(s) * frac)  # floor(n / 20) each end, as host/stats.c
    return S.fmean(s[k:len(s) - k])


ESTIMATORS = (("median", S.median), ("mean", S.fmean), ("trimmed mean", trimmed))


def spread(v):
    return 100 * (max(v) - min(v)) / S.median(v) if v else float("nan")


def rows_of(d):
    out = []
    for line in open(os.path.join(d, "runs.txt")):
        f = line.split()
        if len(f) < 5:
            continue
        rep, order, rid = f[3], f[2], f[4]
        js = glob.glob(os.path.join(d, "results", "*", "runs", rid, "journal.jsonl"))
        if not js:
            continue
        for jl in open(js[0]):
            x = json.loads(jl)
            if "impl" in x and x.get("samples"):
                out.append((rep, order, x["impl"], x["samples"]))
    return out


def main(dirs):
    for d in dirs:
        rows = rows_of(d)
        print(f"## {os.path.basename(os.path.normpath(d))}\n")
        print("| estimator | lib, all | lib, in pairs | cuda, all | cuda, in pairs | E_lib |")
        print("|---|---|---|---|---|---|")
        for name, f in ESTIMATORS:
            cells = []
            for impl in ("lib", "cuda"):
                allv = [f(s) for _, o, i, s in rows if i == impl]
                pair = [f(s) for _, o, i, s in rows if i == impl and o != impl]
                cells += [f"{spread(allv):.2f} %", f"{spread(pair):.2f} %"]
            e = []
            for rep in sorted({r[0] for r in rows}):
                for order in ("lib,cuda", "cuda,lib"):
                    lib = [f(s) for r, o, i, s in rows if r == rep and o == order and i == "lib"]
                    cu = [f(s) for r, o, i, s in rows if r == rep and o == order and i == "cuda"]
                    if lib and cu:
                        e.append(lib[0] / cu[0])
            print(f"| {name} | " + " | ".join(cells) + f" | {spread(e):.2f} % (median {S.median(e):.4f}, {len(e)} processes) |")
        print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
