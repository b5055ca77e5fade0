"""merge.py: joins the measurements of run.sh into timing_fidelity_<GPU>.csv (kernel, bytes, ncu_us,
tilebench_us, events_us, do_bench_us) and prints the summary against the targets: tilebench
within 3 % (from 20 us) or 10 % (2 to 20 us) of ncu's time minus its launch excess, the excess
being ncu's nop_1 minus tilebench's nop_1 of this run (issue 19's restatement of issue 3's target,
fidelity_target.py); the median of a case over 5 fresh processes within 1 % from 50 us; sweep
wall time at most 1.15 x its GPU busy time.
usage: python3 merge.py CASES OUTDIR GPU"""
import csv
import glob
import os
import re
import statistics
import sys

import fidelity_target
import ncu_csv

cases_path, out, gpu = sys.argv[1:4]
cases = [line.split() for line in open(cases_path) if len(line.split()) == 6]
names = [c[0] for c in cases]
bytes_of = {c[0]: int(c[3]) for c in cases}
kind_of = {c[0]: int(c[1]) for c in cases}

def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))

tb = {r["kernel"]: r for r in read_csv(os.path.join(out, "tilebench.csv"))}
db = {r["kernel"]: r for r in read_csv(os.path.join(out, "do_bench.csv"))}

# ncu: a case's time is the sum of gpu__time_duration over its launch sequence, median over reps.
def read_ncu(manifest_path, ncu_path):
    if not (os.path.exists(manifest_path) and os.path.exists(ncu_path)):
        return {}, "no ncu results (ncu missing or failed; see ncu.log)"
    seqs, note = ncu_csv.sequences(manifest_path, ncu_csv.kernels(ncu_path))
    return {name: statistics.median(sum(k.get("gpu__time_duration.sum", 0) for k in seq) * 1e-3 for seq in v)
            for name, v in seqs.items()}, note

ncu, ncu_note = read_ncu(os.path.join(out, "ncu_manifest.txt"), os.path.join(out, "ncu.csv"))
# kernels per launch sequence (the manifest's third field): the excess is subtracted once per kernel
launches = {}
if os.path.exists(os.path.join(out, "ncu_manifest.txt")):
    for line in open(os.path.join(out, "ncu_manifest.txt")):
        p = line.split()
        if len(p) == 3:
            launches[p[0]] = int(p[2])
ncu_ev, _ = read_ncu(os.path.join(out, "ncu_evict_manifest.txt"), os.path.join(out, "ncu_evict.csv"))
tb_write = {r["kernel"]: r for r in read_csv(os.path.join(out, "tilebench_write.csv"))}
tb_tlb = {r["kernel"]: r for r in read_csv(os.path.join(out, "tilebench_tlb.csv"))}

result = os.path.join(out, f"timing_fidelity_{gpu}.csv")
with open(result, "w", newline="\n") as f:
    f.write("kernel,bytes,ncu_us,tilebench_us,events_us,do_bench_us\n")
    for n in names:
        t, d = tb.get(n, {}), db.get(n, {})
        nc = f"{ncu[n]:.4f}" if n in ncu else ""
        f.write(f"{n},{bytes_of[n]},{nc},{t.get('tilebench_us', '')},{t.get('events_us', '')},{d.get('do_bench_us', '')}\n")

# Stability: medians of the same case over the fresh processes.
runs = [ {r["kernel"]: float(r["tilebench_us"]) for r in read_csv(p)} for p in sorted(glob.glob(os.path.join(out, "stability_*.csv")))]
stab = {}
for n in names:
    v = [r[n] for r in runs if n in r]
    if len(v) >= 2:
        stab[n] = (max(v) - min(v)) / statistics.median(v)

over = ""
m = None
if os.path.exists(os.path.join(out, "overhead.txt")):
    m = re.search(r"ratio ([0-9.]+)", open(os.path.join(out, "overhead.txt")).read())

# The launch excess of this run: ncu's empty kernel (1 block) minus tilebench's.
excess = fidelity_target.excess(ncu.get("nop_1"), float(tb["nop_1"]["tilebench_us"]) if "nop_1" in tb else None)
print()
if excess is None:
    print("excess: unknown (no nop_1 from ncu or tilebench): no case is judged")
else:
    print(f"excess: ncu nop_1 {ncu['nop_1']:.3f} us - tilebench nop_1 {float(tb['nop_1']['tilebench_us']):.3f} us = {excess:.3f} us")
print(f"{'kernel':<12} {'bytes':>12} {'ncu_us':>10} {'ref_us':>10} {'tb_us':>10} {'tb/ref':>8} {'target':>7} {'events_us':>10} {'do_bench':>10} {'5-proc spread':>13} {'n':>6} {'clock':>6}")
fails = 0
for n in names:
    t = tb.get(n)
    tbu = float(t["tilebench_us"]) if t else None
    nc = ncu.get(n)
    j = fidelity_target.judge(nc, tbu, excess, launches.get(n, 1))
    ratio, ref = j["ratio"], j["ref"]
    # The empty-kernel rows (kind 3) are diagnostics: the excess comes from nop_1.
    target = None if kind_of[n] == 3 else j["tol"]
    ok = j["verdict"] == "ok" and target is not None
    if ratio is not None and target is not None and not ok:
        fails += 1
    spread = stab.get(n)
    sp = f"{spread * 100:.2f} %" if spread is not None else "-"
    if spread is not None and tbu and tbu >= 50 and spread > 0.01:
        sp += " FAIL"
        fails += 1
    print(f"{n:<12} {bytes_of[n]:>12} {nc if nc else float('nan'):>10.2f} {ref if ref else float('nan'):>10.2f} {tbu if tbu else float('nan'):>10.2f} "
          f"{(ratio if ratio else float('nan')):>8.3f} {('ok' if ok else 'FAIL') if (ratio and target) else '-':>7} "
          f"{float(t['events_us']) if t else float('nan'):>10.2f} {float(db[n]['do_bench_us']) if n in db else float('nan'):>10.2f} "
          f"{sp:>13} {t['n'] if t else '-':>6} {t['clock'] if t else '-':>6}")
if m:
    ratio = float(m.group(1))
    print(f"\noverhead: sweep wall / GPU busy = {ratio:.3f} (target <= 1.15) {'ok' if ratio <= 1.15 else 'FAIL'}")
    fails += ratio > 1.15
if db:
    walls = [float(r["do_bench_wall_s"]) for r in db.values()]
    print(f"do_bench: {statistics.mean(walls) * 1e3:.0f} ms of wall time per case on average")
if tb:
    print(f"tilebench: {statistics.mean(float(r['wall_s']) for r in tb.values()) * 1e3:.0f} ms of wall time per case on average")
if ncu_note:
    print("note:", ncu_note)

# Protocol variants (not targets): ncu under tilebench's cache protocol (no ncu cache control, one
# read eviction before each launch sequence), tilebench with the old memset eviction and with the
# TLB page sweep. Written to variants.csv next to the main CSV.
def num(d, k, f="tilebench_us"):
    return float(d[k][f]) if k in d else None
def fmt(v):
    return f"{v:.4f}" if v is not None else ""
with open(os.path.join(out, "variants.csv"), "w", newline="\n") as f:
    f.write("kernel,bytes,ncu_us,ncu_evict_us,tb_read_us,tb_write_us,tb_tlb_us\n")
    for n in names:
        f.write(f"{n},{bytes_of[n]},{fmt(ncu.get(n))},{fmt(ncu_ev.get(n))},{fmt(num(tb, n))},{fmt(num(tb_write, n))},{fmt(num(tb_tlb, n))}\n")
if tb_write or tb_tlb or ncu_ev:
    print(f"\n{'kernel':<12} {'ncu':>9} {'ncu_evict':>11} {'tb_read':>9} {'tb_write':>9} {'tb_tlb':>9}   read/ncu write/ncu tlb/ncu read/ncu_evict")
    for n in names:
        nc = ncu.get(n)
        vals = [nc, ncu_ev.get(n), num(tb, n), num(tb_write, n), num(tb_tlb, n)]
        rat = [f"{v / nc:9.3f}" if (v and nc) else f"{'-':>9}" for v in vals[2:]]
        print(f"{n:<12} " + " ".join(f"{v:>9.2f}" if v is not None else f"{'-':>9}" for v in vals[:1]) +
              (f" {vals[1]:>11.2f}" if vals[1] is not None else f" {'-':>11}") +
              " " + " ".join(f"{v:>9.2f}" if v is not None else f"{'-':>9}" for v in vals[2:]) + "  " + " ".join(rat) +
              (f" {vals[2] / vals[1]:9.3f}" if (vals[1] and vals[2]) else f" {'-':>9}"))
for tag in ("write", "tlb"):
    p = os.path.join(out, f"overhead_{tag}.txt")
    if os.path.exists(p):
        mm = re.search(r"ratio ([0-9.]+)", open(p).read())
        if mm:
            print(f"overhead ({tag} variant): {float(mm.group(1)):.3f}")

print(f"\nwrote {result}; {fails} target(s) missed")
