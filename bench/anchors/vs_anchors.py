"""vs_anchors.py: our committed per-case results against TileBench's published ones, case by case.
For each operator with both CSVs: the cases present in both (matched by params and dtype), the
geometric mean of (fastest published backend's time / our cuda implementation's time), the cases
where ours is faster, and the largest case of each dtype. Different devices (ours an H200, the
anchors a GH200 with about 0.8x its memory bandwidth), so a ratio near 1.2 on a memory-bound
operator is parity, not a win; see ../shared/anchors/README.md.
usage: python3 bench/anchors/vs_anchors.py [OURS_CSV_DIR] [ANCHOR_DIR] [MODE]
defaults: results/H200/csv, ../shared/anchors/tilebench-GH200, default"""
import csv
import math
import os
import sys

ours_dir = sys.argv[1] if len(sys.argv) > 1 else "results/H200/csv"
anchor_dir = sys.argv[2] if len(sys.argv) > 2 else "../shared/anchors/tilebench-GH200"
mode = sys.argv[3] if len(sys.argv) > 3 else "default"
BACKENDS = ("torch_ms", "triton_ms", "cutile_ms", "tilelang_ms")
ALIASES = {"fp8_e4m3fn": "fp8_e4m3"}  # the anchors name torch's dtype, we name the format


def rows(path):
    with open(path, newline="") as f:
        return {(r["params"], ALIASES.get(r["dtype"], r["dtype"])): r for r in csv.DictReader(f)}


def number(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if x > 0 and math.isfinite(x) else None


print("| operator | cases | geomean best published / ours | ours faster | largest case: ours vs best published (us) |")
print("|---|---|---|---|---|")
for name in sorted(os.listdir(ours_dir)):
    if not name.endswith("_%s.csv" % mode):
        continue
    op = name[: -len("_%s.csv" % mode)]
    anchor = os.path.join(anchor_dir, name)
    if not os.path.exists(anchor):
        continue
    ours, theirs = rows(os.path.join(ours_dir, name)), rows(anchor)
    logs, faster, last = [], 0, {}
    for key, r in ours.items():
        mine = number(r.get("cuda_ms"))
        a = theirs.get(key)
        if mine is None or a is None or r.get("status_cuda") != "ok":
            continue
        published = [(number(a.get(b)), b[:-3]) for b in BACKENDS]
        published = [p for p in published if p[0] is not None]
        if not published:
            continue
        best, who = min(published)
        logs.append(math.log(best / mine))
        faster += best > mine
        last[key[1]] = (mine, best, who, key[0])
    if not logs:
        continue
    tail = "; ".join("%s %s: %.1f vs %.1f (%s)" % (d, p, m * 1e3, b * 1e3, w) for d, (m, b, w, p) in last.items())
    print("| %s | %d | %.2f | %d | %s |" % (op, len(logs), math.exp(sum(logs) / len(logs)), faster, tail))
