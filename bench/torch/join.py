"""join.py: crosscheck.py's plain-Python CUPTI times (its OUT.csv) beside the torch_ms a full
`tilebench run --impl torch,...` reported for the same first cases (results/<gpu>/csv, default
protocol: CUDA graphs), as a markdown table with the share within 5 %. For when the times of
tilebench's own cross-check runs are missing or a full run is the one to check.
usage: python3 bench/torch/join.py CROSSCHECK.csv CSV_DIR [MODE]"""
import csv
import os
import sys

xc, csv_dir = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "default"
rows, ok = [], 0
for r in csv.DictReader(open(xc)):
    path = os.path.join(csv_dir, "%s_%s.csv" % (r["operator"], mode))
    if not os.path.exists(path) or not r["python_cupti_ms"]:
        continue
    dt = "fp8_e4m3" if r["dtype"].startswith("fp8") else r["dtype"]
    m = [x for x in csv.DictReader(open(path)) if x["params"] == r["case"] and x["dtype"] == dt and x.get("torch_ms")]
    if not m:
        continue
    tb, py = float(m[0]["torch_ms"]), float(r["python_cupti_ms"])
    d = (tb / py - 1) * 100
    ok += abs(d) <= 5
    rows.append("| %s | %s | %s | %s | %.4f | %.4f | %+.1f %% | %s |" % (
        r["operator"], r["dtype"], r["case"], r["kernels"], tb, py, d, "yes" if abs(d) <= 5 else "NO"))
print("| operator | dtype | case | kernels | tilebench torch_ms | python CUPTI ms | diff | within 5 % |")
print("|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
print("\n%d of %d cases within 5 %%." % (ok, len(rows)))
