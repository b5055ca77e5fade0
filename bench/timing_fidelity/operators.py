"""operators.py: the timer checked on the suite's own kernels (issue 19, section 2), the parts of
operators.sh that are not GPU work.

  python3 operators.py groups
      one line per `tilebench run` of the check: DTYPE CASES OPERATORS NCU_KERNEL_REGEX
  python3 operators.py table OUTDIR [GPU]
      joins what operators.sh left in OUTDIR into OUTDIR/timing_fidelity_operators_<GPU>.csv and
      OUTDIR/fidelity_operators.txt (the table, also printed): tilebench against ncu minus its
      launch excess (fidelity_target.py); exit 0 when every row is there and meets its target
  python3 operators.py diag-cases OUTDIR
      the diagnosis cases (shapes.py) for the launch shapes of the kernels in the ncu logs, in
      fidelity.lua's case format, on stdout; the table then adds the diagnosis when OUTDIR holds
      diag_cases.txt, tilebench_diag.csv and ncu[_evict]_diag.csv
  python3 operators.py merge FROM.csv INTO.csv
      puts FROM's rows into INTO (bench/results/timing_fidelity_<GPU>.csv): a row of the same
      kernel is replaced, a new one appended; INTO's columns and other rows stay

Rows are named <operator>_<dtype>_<first|last> (the grid's first and last case of that dtype),
plus nop_1, the empty kernel whose two times give the excess.

What operators.sh leaves in OUTDIR:
  tilebench_results/<GPU>/runs/*/raw/<operator>.json   the `tilebench run` side (row.ms, stats)
  tilebench_nop.csv    fidelity.lua's row for nop_1 (tilebench_us, events_us)
  ncu_groups.txt       `I DTYPE CASES OPERATORS` per ncu process, its log in ncu_<I>.csv
  ncu_nop.csv          ncu's log of the empty kernel launched by tilebench (fidelity.lua)
  cache_new.txt        NVRTC cache entries that appeared while ncu ran (should be none: the
                       kernels ncu profiled were loaded from the entries the tilebench side used)
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity_target  # noqa: E402
import ncu_csv  # noqa: E402
import shapes  # noqa: E402

# The rows of issue 19 section 2: (dtype, case subset, operators). One `tilebench run` each, so
# one ncu process each; a group's operators have distinct kernel names.
GROUPS = [
    ("fp32", "ends", ["vector_add", "argmax", "mean_reduction"]),
    ("fp16", "ends", ["vector_add", "softmax", "layernorm", "swiglu"]),
    ("bf16", "ends", ["rmsnorm", "relu"]),
    ("fp16", "first", ["matmul_fp32_fp16_fp8"]),
]

# The case labels a subset gives, in the order the run measures them.
LABELS = {"ends": ["first", "last"], "first": ["first"], "last": ["last"]}

# Kernel names per operator: the reference's (launched once per case, before the implementation:
# it separates the cases in ncu's log) and a regex of the `cuda` implementation's kernels.
# The point-wise and row families name theirs <op>_ref and <op>_cuda / <op>_stream (oplib.lua);
# the matmul's are the gemm family's (operators/_shared/gemm.lua, matmul_ref.cu). Plain groups
# only: the same pattern goes to ncu's regex engine and to Python's.
KERNELS = {"matmul_fp32_fp16_fp8": ("matmul_ref", r"gemm_(tma|wgmma|wgmma_ws|mma)")}


def kernels_of(op):
    return KERNELS.get(op, (f"{op}_ref", rf"{op}_(cuda|stream)"))


def ncu_regex(ops):
    """ncu's --kernel-name filter for a group: its operators' reference and cuda kernels."""
    parts = []
    for op in ops:
        ref, impl = kernels_of(op)
        parts += [ref, impl]
    return "regex:^(" + "|".join(parts) + ")$"


def row_name(op, dtype, label):
    return f"{op}_{dtype}_{label}"


def base_name(name):
    """A kernel name as ncu printed it, without parameter list or return type."""
    name = name.split("(")[0].strip()
    return name.split()[-1] if name else name


# ---- the tilebench side -----------------------------------------------------------------------
def tilebench_rows(out, gpu):
    """(op, dtype) -> cuda rows of the raw results, sorted by case index."""
    by = {}
    for path in sorted(glob.glob(os.path.join(out, "tilebench_results", gpu, "runs", "*", "raw", "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        for r in doc.get("rows", []):
            if r.get("impl") != "cuda" or "case_index" not in r:
                continue
            by.setdefault((r.get("operator"), r.get("dtype")), []).append(r)
    for v in by.values():
        v.sort(key=lambda r: r["case_index"])
    return by


def number(v):
    return v if isinstance(v, (int, float)) and v == v else None


def tilebench_nop(out):
    path = os.path.join(out, "tilebench_nop.csv")
    if not os.path.exists(path):
        return None, None
    with open(path) as f:
        for r in csv.DictReader(f):
            if r.get("kernel") == "nop_1":
                return float(r["tilebench_us"]), float(r["events_us"])
    return None, None


# ---- the ncu side -----------------------------------------------------------------------------
def ncu_groups(out, prefix="ncu"):
    """[(index, dtype, cases, [ops])] of the ncu processes operators.sh started (<prefix>_groups.txt)."""
    path = os.path.join(out, f"{prefix}_groups.txt")
    if not os.path.exists(path):
        return []
    res = []
    for line in open(path):
        p = line.split()
        if len(p) == 4:
            res.append((p[0], p[1], p[2], p[3].split(",")))
    return res


def split_cases(records, op):
    """The ncu records of op's kernels, in launch order, cut into one list of implementation
    launches per case (each case begins with its reference launch); and a note about records
    before the first reference, if any."""
    ref, impl = kernels_of(op)
    impl_re = re.compile("^" + impl + "$")
    cases, stray = [], 0
    for k in records:
        name = base_name(k.get("_name", ""))
        if name == ref:
            cases.append([])
        elif impl_re.match(name):
            if cases:
                cases[-1].append(k)
            else:
                stray += 1
    note = f"{stray} launches of the cuda kernel before the first reference" if stray else ""
    return cases, note


def ncu_time_us(launches, per_run, skip_runs=0):
    """Median over the runs of the summed gpu__time_duration of a run's kernels, in us, after the
    first skip_runs runs; the number of runs kept; a note where the launches do not divide into
    runs."""
    per_run = max(1, per_run)
    launches = launches[skip_runs * per_run:]
    runs = len(launches) // per_run
    note = ""
    if len(launches) % per_run:
        note = f"{len(launches)} launches are not whole runs of {per_run} kernels"
    if runs == 0:
        return None, 0, note or "ncu profiled no launch of the cuda kernel"
    sums = []
    for i in range(runs):
        seq = launches[i * per_run:(i + 1) * per_run]
        if any("gpu__time_duration.sum" not in k for k in seq):
            return None, runs, "ncu gave no gpu__time_duration for a launch"
        sums.append(sum(k["gpu__time_duration.sum"] for k in seq) * 1e-3)
    return statistics.median(sums), runs, note


def ncu_nop(out, prefix="ncu", skip=0):
    """Median of the empty kernel's launches in <prefix>_nop.csv after the first skip, and how many."""
    rows = ncu_csv.kernels(os.path.join(out, f"{prefix}_nop.csv"))
    t = [k["gpu__time_duration.sum"] * 1e-3 for k in rows
         if base_name(k.get("_name", "")) == "nop" and "gpu__time_duration.sum" in k][skip:]
    return (statistics.median(t), len(t)) if t else (None, 0)


def ncu_error(out, stem):
    """ncu's first ==ERROR== line in <stem>.csv (its --log-file) or <stem>.log, or None: e.g. a
    runtime where ncu cannot read the counters ('Failed to initialize the profiler')."""
    for ext in (".csv", ".log"):
        path = os.path.join(out, stem + ext)
        if os.path.exists(path):
            for line in open(path, errors="replace"):
                if line.startswith("==ERROR=="):
                    return line.strip()
    return None


def ncu_side(out, prefix, per_run, tb, skip_runs=0, shapes_by=None):
    """row name -> (ncu_us, runs, note, kernels per run) from the logs <prefix>_<i>.csv; and in
    shapes_by (when given) row name -> the (grid, block) of each kernel of the row's first run
    (shapes.shape_of; None for a launch that is not one-dimensional)."""
    ncu_by = {}
    seen = {(d, c, ",".join(o)): i for i, d, c, o in ncu_groups(out, prefix)}
    for dtype, cases, ops in GROUPS:
        labels = LABELS[cases]
        i = seen.get((dtype, cases, ",".join(ops)))
        records = ncu_csv.kernels(os.path.join(out, f"{prefix}_{i}.csv")) if i is not None else []
        for op in ops:
            if i is None:
                msg = "ncu: not run (no ncu on PATH?)"
            elif not records:
                msg = f"ncu: no kernel in {prefix}_{i}.csv (see {prefix}_{i}.log)"
                err = ncu_error(out, f"{prefix}_{i}")
                if err:
                    msg += ": " + err
            else:
                segs, note = split_cases(records, op)
                msg = None
                if len(segs) != len(labels):
                    msg = f"ncu: {len(segs)} reference launches of {op} {dtype}, expected {len(labels)}"
            if msg:
                for lab in labels:
                    ncu_by[row_name(op, dtype, lab)] = (None, 0, msg, 1)
                continue
            idx = [r["case_index"] for r in tb.get((op, dtype), [])]
            for j, lab in enumerate(labels):
                k = (per_run.get((op, dtype, idx[j])) if j < len(idx) else None) or 1
                us, runs, n2 = ncu_time_us(segs[j], k, skip_runs)
                ncu_by[row_name(op, dtype, lab)] = (us, runs, "; ".join(x for x in (note, n2) if x), k)
                if shapes_by is not None and len(segs[j]) >= k:
                    shapes_by[row_name(op, dtype, lab)] = [shapes.shape_of(rec) for rec in segs[j][:k]]
    return ncu_by


def diag_cases(out):
    """shapes.py's diagnosis cases for the launch shapes of the cuda kernels in the ncu logs of the
    target pass (ncu_<i>.csv), one `name kind n bytes grid block` line each; 1 when there is no log."""
    found, logs = set(), 0
    for i, dtype, cases, ops in ncu_groups(out, "ncu"):
        records = ncu_csv.kernels(os.path.join(out, f"ncu_{i}.csv"))
        logs += bool(records)
        for op in ops:
            for seg in split_cases(records, op)[0]:
                found.update(s for s in map(shapes.shape_of, seg) if s)
    if not logs:
        print(f"operators.py: no ncu log with kernels in {out} (ncu_groups.txt, ncu_<i>.csv)", file=sys.stderr)
        return 1
    print("\n".join(shapes.case_lines(found)))
    return 0


# ---- the table --------------------------------------------------------------------------------
def build(out, gpu):
    """The rows of the check: dicts with kernel, bytes, ncu_us, tilebench_us, events_us, ncu_runs,
    launches (kernels per run) and note (empty or why a number is missing), nop_1 last."""
    tb = tilebench_rows(out, gpu)
    per_run = {}
    for (op, dtype), rows in tb.items():
        for r in rows:
            k = number((r.get("stats") or {}).get("kernels_per_run"))
            per_run[(op, dtype, r["case_index"])] = int(round(k)) if k else 1
    shapes_by = {}
    ncu_by = ncu_side(out, "ncu", per_run, tb, shapes_by=shapes_by)
    # The variant under tilebench's own eviction (ncu --cache-control none): the first run of each
    # case (the verification run) has no eviction before it and is left out.
    evict_by = ncu_side(out, "ncu_evict", per_run, tb, skip_runs=1) if ncu_groups(out, "ncu_evict") else {}
    rows = []
    for dtype, cases, ops in GROUPS:
        labels = LABELS[cases]
        for op in ops:
            got = tb.get((op, dtype), [])
            for j, lab in enumerate(labels):
                name = row_name(op, dtype, lab)
                notes = []
                r = got[j] if len(got) == len(labels) else None
                tb_us = ev_us = None
                nbytes = ""
                if r is None:
                    notes.append(f"tilebench: {len(got)} rows for {op} {dtype}, expected {len(labels)} "
                                 "(see tilebench_run.log)")
                else:
                    ms = number(r.get("ms"))
                    if ms is None:
                        notes.append(f"tilebench: status {r.get('status')}: {r.get('reason', '')}".rstrip(": "))
                    else:
                        tb_us = ms * 1e3
                        ev = number((r.get("stats") or {}).get("events_median"))
                        ev_us = ev * 1e3 if ev is not None else None
                    if number(r.get("bytes")) is not None:
                        nbytes = str(int(r["bytes"]))
                nus, runs, nnote, launches = ncu_by.get(name, (None, 0, "ncu: no result", 1))
                if nnote:
                    notes.append(nnote)
                rows.append({"kernel": name, "bytes": nbytes, "ncu_us": nus, "tilebench_us": tb_us,
                             "events_us": ev_us, "ncu_runs": runs, "launches": launches, "note": "; ".join(notes),
                             "ncu_evict_us": evict_by.get(name, (None,))[0], "shapes": shapes_by.get(name)})
    tbn, tbn_ev = tilebench_nop(out)
    nn, nn_runs = ncu_nop(out)
    # fidelity.lua runs the plan once before measuring (no eviction before it): left out
    ne = ncu_nop(out, "ncu_evict", skip=1)[0] if evict_by else None
    notes = []
    if tbn is None:
        notes.append("tilebench: no nop_1 row in tilebench_nop.csv")
    if nn is None:
        notes.append("ncu: no nop launch in ncu_nop.csv")
    rows.append({"kernel": "nop_1", "bytes": "0", "ncu_us": nn, "tilebench_us": tbn, "events_us": tbn_ev,
                 "ncu_runs": nn_runs, "launches": 1, "note": "; ".join(notes), "ncu_evict_us": ne})
    return rows


def fmt(v, digits=4):
    return "" if v is None else f"{v:.{digits}f}"


def table(out, gpu):
    rows = build(out, gpu)
    nop = rows[-1]
    exc = fidelity_target.excess(nop["ncu_us"], nop["tilebench_us"])
    new_cache = []
    cpath = os.path.join(out, "cache_new.txt")
    if os.path.exists(cpath):
        new_cache = [l.strip() for l in open(cpath) if l.strip()]
    lines = []
    say = lines.append
    say("Timer fidelity on the suite's kernels (issue 19, section 2): tilebench (`tilebench run`, defaults)")
    say("against ncu --cache-control all --clock-control none gpu__time_duration.sum minus ncu's launch")
    say("excess (its empty-kernel time minus tilebench's, this run). Target: 3 % from 20 us, 10 % from 2 us.")
    if exc is None:
        say("excess: unknown (the empty kernel lacks a time: see nop_1's note); no row can be judged")
    else:
        say(f"excess: ncu nop_1 {nop['ncu_us']:.3f} us - tilebench nop_1 {nop['tilebench_us']:.3f} us = {exc:.3f} us")
    if new_cache:
        say(f"WARNING: {len(new_cache)} NVRTC cache entries appeared while ncu ran: ncu may have profiled "
            "kernels compiled anew, not the cubins tilebench timed (cache_new.txt)")
    say("")
    # ref_us: ncu_us minus the excess once per kernel of a run (k); runs: ncu's launches / k
    hdr = (f"{'kernel':<36} {'ncu_us':>10} {'ref_us':>10} {'tb_us':>10} {'tb/ref':>7} {'target':>7} {'verdict':>7} "
           f"{'k':>2} {'runs':>4}  note")
    say(hdr)
    fails = missing = judged = 0
    csv_rows = []
    for r in rows:
        j = fidelity_target.judge(r["ncu_us"], r["tilebench_us"], exc, r["launches"])
        if r["kernel"] == "nop_1":  # the excess's source: ref would equal tilebench_us by definition
            j = {"ref": None, "ratio": None, "tol": None, "verdict": "-" if exc is not None else "missing"}
        v = j["verdict"]
        fails += v == "FAIL"
        missing += v == "missing"
        judged += v in ("ok", "FAIL")
        say(f"{r['kernel']:<36} {fmt(r['ncu_us'], 3) or '-':>10} {fmt(j['ref'], 3) or '-':>10} "
            f"{fmt(r['tilebench_us'], 3) or '-':>10} {fmt(j['ratio'], 3) or '-':>7} "
            f"{fidelity_target.target_text(j['tol']):>7} {v:>7} {r['launches']:>2} {r['ncu_runs']:>4}  {r['note']}".rstrip())
        csv_rows.append([r["kernel"], r["bytes"], fmt(r["ncu_us"]), fmt(r["tilebench_us"]), fmt(r["events_us"]),
                         fmt(j["ref"]), fmt(j["ratio"]), "" if j["tol"] is None else f"{j['tol']:g}", v,
                         str(r["launches"]), str(r["ncu_runs"]), r["note"]])
    say("")
    say(f"{judged} rows judged: {judged - fails} ok, {fails} FAIL; {missing} missing; "
        f"{len(rows) - judged - missing} without a target (under 2 us, or the empty kernel)")
    variant(rows, say, csv_rows)
    diag_csv = shapes.report(rows, shapes.measure(out), exc, say, csv_rows)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "fidelity_operators.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, f"timing_fidelity_operators_{gpu}.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["kernel", "bytes", "ncu_us", "tilebench_us", "events_us", "ref_us", "tb_over_ref", "target",
                    "verdict", "kernels_per_run", "ncu_runs", "note", "ncu_evict_us", "ref_evict_us",
                    "tb_over_ref_evict", "verdict_evict"] + shapes.SHAPE_COLUMNS)
        w.writerows(csv_rows)
    if diag_csv:
        with open(os.path.join(out, f"timing_fidelity_diag_{gpu}.csv"), "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(diag_csv)
    sys.stdout.write(text)
    return 0 if (fails == 0 and missing == 0 and not new_cache) else 1


def variant(rows, say, csv_rows):
    """For diagnosis, not the target: ncu under tilebench's own eviction (--cache-control none, the
    read eviction before each run), with its own excess (its empty kernel, the same way). Appends
    a table to the text and four columns to each CSV row (empty where not run)."""
    nop = rows[-1]
    exc = fidelity_target.excess(nop["ncu_evict_us"], nop["tilebench_us"])
    ran = any(r["ncu_evict_us"] is not None for r in rows)
    if ran:
        say("")
        say("Variant (diagnosis only): ncu --cache-control none, tilebench's read eviction before each run")
        say("excess: unknown (no empty-kernel time)" if exc is None else
            f"excess: ncu nop_1 {nop['ncu_evict_us']:.3f} us - tilebench nop_1 {nop['tilebench_us']:.3f} us = {exc:.3f} us")
        say(f"{'kernel':<36} {'ncu_ev_us':>10} {'ref_us':>10} {'tb_us':>10} {'tb/ref':>7} {'target':>7} {'verdict':>7}")
    for r, c in zip(rows, csv_rows):
        j = fidelity_target.judge(r["ncu_evict_us"], r["tilebench_us"], exc, r["launches"])
        if r["kernel"] == "nop_1":
            j = {"ref": None, "ratio": None, "tol": None, "verdict": "-" if exc is not None else "missing"}
        if ran:
            say(f"{r['kernel']:<36} {fmt(r['ncu_evict_us'], 3) or '-':>10} {fmt(j['ref'], 3) or '-':>10} "
                f"{fmt(r['tilebench_us'], 3) or '-':>10} {fmt(j['ratio'], 3) or '-':>7} "
                f"{fidelity_target.target_text(j['tol']):>7} {j['verdict']:>7}")
        c += [fmt(r["ncu_evict_us"]), fmt(j["ref"]), fmt(j["ratio"]), j["verdict"] if ran else ""]


def merge(src, dst):
    """Puts src's measured rows into dst, keeping dst's columns: same kernel replaced, new ones
    appended. A row of src without either time is left out (dst keeps what it had)."""
    with open(src) as f:
        new = [r for r in csv.DictReader(f) if r.get("ncu_us") or r.get("tilebench_us")]
    if os.path.exists(dst):
        with open(dst) as f:
            rd = csv.DictReader(f)
            cols, old = rd.fieldnames, list(rd)
    else:
        cols, old = ["kernel", "bytes", "ncu_us", "tilebench_us", "events_us", "do_bench_us"], []
    for need in ("kernel", "ncu_us", "tilebench_us"):
        if need not in cols:
            raise SystemExit(f"{dst}: no column {need}")
    by = {r["kernel"]: {c: r.get(c, "") for c in cols} for r in new}
    merged = []
    for r in old:
        merged.append(by.pop(r["kernel"]) if r["kernel"] in by else r)
    merged += [by[r["kernel"]] for r in new if r["kernel"] in by]
    tmp = dst + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(merged)
    os.replace(tmp, dst)
    print(f"{dst}: {len(new)} rows from {src}")
    return 0


def main(argv):
    usage = "usage: operators.py groups | table OUTDIR [GPU] | diag-cases OUTDIR | merge FROM.csv INTO.csv"
    if len(argv) >= 1 and argv[0] == "groups" and len(argv) == 1:
        for dtype, cases, ops in GROUPS:
            print(dtype, cases, ",".join(ops), ncu_regex(ops))
        return 0
    if len(argv) in (2, 3) and argv[0] == "table":
        if not os.path.isdir(argv[1]):
            print(f"operators.py: {argv[1]} is not a directory", file=sys.stderr)
            return 2
        return table(argv[1], argv[2] if len(argv) == 3 else "H200")
    if len(argv) == 2 and argv[0] == "diag-cases":
        if not os.path.isdir(argv[1]):
            print(f"operators.py: {argv[1]} is not a directory", file=sys.stderr)
            return 2
        return diag_cases(argv[1])
    if len(argv) == 3 and argv[0] == "merge":
        if not os.path.exists(argv[1]):
            print(f"operators.py: {argv[1]} does not exist", file=sys.stderr)
            return 2
        return merge(argv[1], argv[2])
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
