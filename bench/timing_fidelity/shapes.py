"""shapes.py: the diagnosis part of operators.sh for small kernels (docs/MEASUREMENT.md, "The
small-kernel misses of session 12"). Not the target: the target stays operators.py's, against the
excess of the one-block empty kernel (fidelity_target.py). This part measures what separates the
hypotheses for the rows that read lower than ncu minus that excess:

  nop_g<G>x<B>   the empty kernel at the launch shape (grid G, block B) of each operator kernel ncu
                 profiled: is ncu's excess per launch larger for that grid than for one block?
  nop_p8_1       the empty kernel with 64 bytes of parameters: does the excess grow with them?
  loop_1, code_1 the same chain of 2048 dependent FMAs per thread, as a loop (fma_loop, ~2 KiB of
                 code) and unrolled (code_line, ~32 KiB): code_1 - loop_1 is the cost of fetching
                 the code, in each tool's cache state (ncu's --cache-control all flushes the
                 instruction caches too?); also at the 512 x 128 shape of the failing row kernels.

Each case is timed by tilebench (fidelity.lua, defaults) and, launched by tilebench in the same
way as nop_1, by ncu --cache-control all (<prefix> ncu) and none (ncu_evict, under tilebench's read
eviction). The files in OUTDIR: diag_cases.txt (written by `operators.py diag-cases`),
tilebench_diag.csv, ncu_diag.csv, ncu_evict_diag.csv.
"""
import csv
import os
import re
import statistics

import fidelity_target
import ncu_csv

# kernels.cu's kernel of each case kind (fidelity.lua: 1 fma_loop, 3 nop, 4 code_line, 5 nop_p8)
KIND_KERNEL = {1: "fma_loop", 3: "nop", 4: "code_line", 5: "nop_p8"}
NCU_REGEX = "regex:^(" + "|".join(sorted(set(KIND_KERNEL.values()))) + ")$"
LOOP_ITERS = 1024  # code_line's chain: 1024 iterations of two dependent FMAs, unrolled
# (name, kind, n, grid, block): the cases besides the launch shapes
FIXED = [
    ("nop_1", 3, 1, 1, 256),
    ("nop_p8_1", 5, 0, 1, 256),
    ("loop_1", 1, LOOP_ITERS, 1, 128),
    ("code_1", 4, 0, 1, 128),
    ("loop_g512x128", 1, LOOP_ITERS, 512, 128),
    ("code_g512x128", 4, 0, 512, 128),
]


def dim(text):
    """ncu's "(512, 1, 1)" as a tuple of ints, or None."""
    nums = re.findall(r"\d+", text or "")
    return tuple(int(x) for x in nums) if nums else None


def shape_of(rec):
    """(grid, block) of a one-dimensional launch as ncu printed it, or None (2-D/3-D, or absent)."""
    g, b = dim(rec.get("_grid")), dim(rec.get("_block"))
    if not g or not b or any(x != 1 for x in g[1:] + b[1:]):
        return None
    return (g[0], b[0])


def shape_name(shape):
    return f"nop_g{shape[0]}x{shape[1]}"


def case_lines(shapes):
    """diag_cases.txt: `name kind n bytes grid block` per case (fidelity.lua's format)."""
    lines = [f"{n} {k} {it} 0 {g} {b}" for n, k, it, g, b in FIXED]
    for s in sorted(set(shapes)):
        if s != (1, 256):  # that is nop_1
            lines.append(f"{shape_name(s)} 3 {s[0]} 0 {s[0]} {s[1]}")
    return lines


def read_cases(out):
    """[(name, kind, grid, block)] of OUTDIR/diag_cases.txt ([] when the diagnosis did not run)."""
    path = os.path.join(out, "diag_cases.txt")
    if not os.path.exists(path):
        return []
    res = []
    for line in open(path):
        p = line.split()
        if len(p) == 6:
            res.append((p[0], int(p[1]), int(p[4]), int(p[5])))
    return res


def ncu_times(out, prefix, skip):
    """(kernel, grid, block) -> (median us of its launches after the first skip, launches kept)."""
    by = {}
    for k in ncu_csv.kernels(os.path.join(out, f"{prefix}_diag.csv")):
        name = k.get("_name", "").split("(")[0].strip().split()
        s = shape_of(k)
        if name and s and "gpu__time_duration.sum" in k:
            by.setdefault((name[-1],) + s, []).append(k["gpu__time_duration.sum"] * 1e-3)
    return {key: (statistics.median(v[skip:]), len(v[skip:])) for key, v in by.items() if v[skip:]}


def tilebench_times(out):
    path = os.path.join(out, "tilebench_diag.csv")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {r["kernel"]: float(r["tilebench_us"]) for r in csv.DictReader(f) if r.get("tilebench_us")}


def measure(out):
    """The diagnosis cases with their times: dicts name, kernel, grid, block, tb_us, ncu_us,
    ncu_runs, ncu_evict_us, excess, excess_evict (None where missing). [] when not run."""
    cases = read_cases(out)
    if not cases:
        return []
    tb = tilebench_times(out)
    # as for nop_1: ncu's cache control flushes before every launch, all are kept; without it the
    # first launch (fidelity.lua's run before timing, no eviction before it) is left out
    nc, ne = ncu_times(out, "ncu", 0), ncu_times(out, "ncu_evict", 1)
    rows = []
    for name, kind, grid, block in cases:
        key = (KIND_KERNEL.get(kind, "?"), grid, block)
        t = tb.get(name)
        n, runs = nc.get(key, (None, 0))
        e = ne.get(key, (None, 0))[0]
        rows.append({"name": name, "kernel": key[0], "grid": grid, "block": block, "tb_us": t, "ncu_us": n,
                     "ncu_runs": runs, "ncu_evict_us": e, "excess": fidelity_target.excess(n, t),
                     "excess_evict": fidelity_target.excess(e, t)})
    return rows


def shape_excess(diag, shapes, field):
    """The mean excess (field: excess or excess_evict) over a run's launch shapes, or None where a
    shape was not measured."""
    by = {(r["grid"], r["block"]): r[field] for r in diag if r["kernel"] == "nop"}
    vals = [by.get(s) for s in shapes]
    if not vals or any(v is None for v in vals):
        return None
    return sum(vals) / len(vals)


def num(v):
    return "" if v is None else f"{v:.4f}"


def fmt(v, digits=3, sign=False):
    if v is None:
        return "-"
    return f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"


def report(rows, diag, target_exc, say, csv_rows):
    """Appends the diagnosis to the text (say) and seven columns to each row of csv_rows (rows:
    operators.py's rows with 'shapes', the launch shapes of one run). Returns the diagnosis CSV's
    rows (with its header first), or [] when the diagnosis did not run."""
    by = {r["name"]: r for r in diag}
    if diag:
        say("")
        say("Diagnosis (not the target): empty kernels at each operator kernel's launch shape, and the code-size")
        say("pair, timed by tilebench and by ncu like nop_1 (ncu_ev: --cache-control none under tilebench's")
        say("read eviction). excess = ncu - tilebench.")
        say(f"{'case':<22} {'kernel':<10} {'grid x block':>13} {'tb_us':>8} {'ncu_us':>8} {'excess':>8} "
            f"{'ncu_ev_us':>9} {'excess_ev':>9}")
        for r in diag:
            say(f"{r['name']:<22} {r['kernel']:<10} {str(r['grid']) + ' x ' + str(r['block']):>13} "
                f"{fmt(r['tb_us']):>8} {fmt(r['ncu_us']):>8} {fmt(r['excess']):>8} {fmt(r['ncu_evict_us']):>9} "
                f"{fmt(r['excess_evict']):>9}")

        def diff(a, b, f):
            x, y = by.get(a, {}).get(f), by.get(b, {}).get(f)
            return None if x is None or y is None else x - y

        for a, b, what in (("code_1", "loop_1", "code fetch, 1 block (code_1 - loop_1: ~32 KiB vs ~2 KiB of code)"),
                           ("code_g512x128", "loop_g512x128", "code fetch, 512 x 128"),
                           ("nop_p8_1", "nop_1", "64 bytes of parameters (nop_p8_1 - nop_1)")):
            say(f"{what}: tilebench {fmt(diff(a, b, 'tb_us'), sign=True)} us, "
                f"ncu {fmt(diff(a, b, 'ncu_us'), sign=True)} us, ncu_ev {fmt(diff(a, b, 'ncu_evict_us'), sign=True)} us")
        say("")
        say("Each row against ncu minus the excess of the empty kernel at its own launch shape (diagnosis only):")
        say(f"{'kernel':<36} {'shape':>12} {'exc_1':>7} {'exc_shape':>9} {'ref_us':>9} {'tb/ref':>7} {'verdict':>7} "
            f"{'exc_ev':>7} {'tb/ref_ev':>9}")
    for r, c in zip(rows, csv_rows):
        shapes = r.get("shapes") or []
        exc = shape_excess(diag, shapes, "excess") if diag else None
        exc_ev = shape_excess(diag, shapes, "excess_evict") if diag else None
        k, op_row = max(1, r["launches"]), r["kernel"] != "nop_1"
        j = fidelity_target.judge(r["ncu_us"], r["tilebench_us"], exc, k) if op_row else {}
        je = fidelity_target.judge(r.get("ncu_evict_us"), r["tilebench_us"], exc_ev, k) if op_row else {}
        sh = ("-" if shapes[0] is None else f"{shapes[0][0]}x{shapes[0][1]}") if shapes else ""
        sh += "+" if len(set(shapes)) > 1 else ""  # a plan of several shapes: the first, marked
        verdict = j.get("verdict", "-") if diag else ""
        if diag and op_row:
            say(f"{r['kernel']:<36} {sh or '-':>12} {fmt(target_exc):>7} {fmt(exc):>9} {fmt(j.get('ref')):>9} "
                f"{fmt(j.get('ratio')):>7} {verdict:>7} {fmt(exc_ev):>7} {fmt(je.get('ratio')):>9}")
        c += [sh, num(exc), num(j.get("ref")), num(j.get("ratio")), verdict if op_row else "",
              num(exc_ev), num(je.get("ratio"))]
    if not diag:
        return []
    out = [["kernel", "launch", "grid", "block", "tilebench_us", "ncu_us", "ncu_runs", "ncu_evict_us", "excess_us",
            "excess_evict_us"]]
    for r in diag:
        out.append([r["name"], r["kernel"], str(r["grid"]), str(r["block"]), num(r["tb_us"]), num(r["ncu_us"]),
                    str(r["ncu_runs"]), num(r["ncu_evict_us"]), num(r["excess"]), num(r["excess_evict"])])
    return out


SHAPE_COLUMNS = ["launch_shape", "excess_shape_us", "ref_shape_us", "tb_over_ref_shape", "verdict_shape_diag",
                 "excess_shape_evict_us", "tb_over_ref_shape_evict"]
