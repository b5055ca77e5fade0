"""diag_summary.py: prints diag.sh's tables: per case, ncu's duration against the GPC window and
the clocks, and tilebench's CUPTI and events medians. usage: diag_summary.py OUTDIR"""
import csv
import os
import statistics
import sys

import ncu_csv

out = sys.argv[1]
cases = [l.split() for l in open(os.path.join(out, "cases.txt")) if len(l.split()) == 6]

clk, _ = ncu_csv.sequences(os.path.join(out, "ncu_clocks_manifest.txt"),
                          ncu_csv.kernels(os.path.join(out, "ncu_clocks.csv")))

def tb(path):
    if not os.path.exists(path):
        return {}
    return {r["kernel"]: r for r in csv.DictReader(open(path))}
tbd = tb(os.path.join(out, "tb_default.csv"))

print(f"{'case':<12} {'ncu_us':>9} {'gpc_win_us':>10} {'ncu-win':>8} {'sm_MHz':>7} {'gpc_MHz':>7} {'dram_MHz':>8} "
      f"{'tb_us':>9} {'ev_us':>9} {'ncu-tb':>7}")
for c in cases:
    name = c[0]
    dur = win = sm = gpc = dram = None
    if name in clk:
        # sum over a launch sequence's kernels, median over reps
        d, w, s, g, m = [], [], [], [], []
        for seq in clk[name]:
            d.append(sum(k.get("gpu__time_duration.sum", 0) for k in seq) * 1e-3)
            w.append(sum(k.get("gpc__cycles_elapsed.max", 0) / max(k.get("gpc__cycles_elapsed.avg.per_second", 1), 1)
                         for k in seq) * 1e6)
            s.append(statistics.mean(k.get("sm__cycles_elapsed.avg.per_second", 0) for k in seq) * 1e-6)
            g.append(statistics.mean(k.get("gpc__cycles_elapsed.avg.per_second", 0) for k in seq) * 1e-6)
            m.append(statistics.mean(k.get("dram__cycles_elapsed.avg.per_second", 0) for k in seq) * 1e-6)
        dur, win, sm, gpc, dram = (statistics.median(v) for v in (d, w, s, g, m))
    t = tbd.get(name)
    tbu = float(t["tilebench_us"]) if t else None
    ev = float(t["events_us"]) if t else None
    f = lambda v, w=9, p=2: f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"
    print(f"{name:<12} {f(dur)} {f(win, 10)} {f(dur - win if dur and win else None, 8)} {f(sm, 7, 0)} {f(gpc, 7, 0)} "
          f"{f(dram, 8, 0)} {f(tbu)} {f(ev)} {f(dur - tbu if dur and tbu else None, 7)}")

for v in ("default", "graph_group_8", "graph_false"):
    p = os.path.join(out, f"tb_{v}.txt")
    if os.path.exists(p):
        print(f"\n[{v}]")
        print(open(p).read().strip())
    rows = tb(os.path.join(out, f"tb_{v}.csv"))
    if rows:
        print(f"{'case':<12} {'n':>6} {'wall_s':>7} {'busy_s':>7} {'span_s':>7} {'enq_s':>7} {'enq_ev_s':>8} {'grp_s':>7} {'wait_s':>7} {'coll_s':>7} {'flush_s':>7}")
        for name, r in rows.items():
            g = lambda k: float(r.get(k) or 0)
            print(f"{name:<12} {r['n']:>6} {g('wall_s'):7.4f} {g('gpu_busy_s'):7.4f} {g('gpu_span_s'):7.4f} {g('enqueue_s'):7.4f} "
                  f"{g('enqueue_events_s'):8.4f} {g('group_setup_s'):7.4f} {g('wait_s'):7.4f} {g('collect_s'):7.4f} {g('flush_s'):7.4f}")
