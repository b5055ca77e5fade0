"""defaults.py: which launch configuration the point-wise family's `cuda` default should be, from an
autotune run's journal (no GPU, stdlib only).

An autotune row of a tb_pointwise operator (vector_add, mul2, relu, sigmoid, swiglu) screened every
configuration of the family's space (BLOCK x UNROLL x WAVES, 32) at its case, in the same run that
timed torch beside it. The search is successive halving, so a configuration's screen time comes
from 5, 15 or 45 samples (the losers from fewer); the winner also has its full-protocol time. Each
configuration's time at a case is estimated as its screen median x (the winner's full time / the
winner's screen median), i.e. screen times put on the full protocol's scale by that case's winner.
A configuration is "behind torch" at a case when that estimate exceeds torch's time in the same
run by more than 2 % (NOISE: WINNERS.md's and REPORTS.md's noise floor of one case).

For each (operator, dtype): how many cases the committed default CSV (results/<gpu>/csv/<op>_default.csv,
another run, the configuration that was the default then) had cuda behind torch; how many the
old default (BLOCK 256, UNROLL 4, WAVES 0), the family rule (RULE below) and the autotune winner
are behind torch by the journal; the geometric mean of each one's time over the best screened
time. Then every fixed configuration ranked over all cases and per dtype size, a size-dependent
alternative checked by leaving one operator out, and a per-case table.

usage: python3 bench/pointwise/defaults.py JOURNAL [--csv-dir D] > bench/results/pointwise_defaults.md
Output on stdout, deterministic (sorted; no dates)."""
import argparse
import csv
import json
import math
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OPS = ("vector_add", "mul2", "relu", "sigmoid", "swiglu")
ARRAYS = {"vector_add": 3, "swiglu": 3}  # arrays moved per element (the others: 2, one in, one out)
SIZE = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}
DTYPE_ORDER = ("fp32", "fp16", "bf16", "int8")
NOISE = 0.02
OLD_DEFAULT = "BLOCK=256,UNROLL=4,WAVES=0"


def cfg(block, unroll, waves=0):
    return "BLOCK=%d,UNROLL=%d,WAVES=%d" % (block, unroll, waves)


# The family's default rule (oplib.pointwise_unroll, operators/_shared/oplib.lua: keep the two in
# step): BLOCK 128, WAVES 0, UNROLL 2 for 2-byte dtypes and 1 otherwise.
def rule(dtype):
    return cfg(128, 2 if SIZE[dtype] == 2 else 1)


def short(c):
    d = dict(kv.split("=") for kv in c.split(","))
    return "%sx%s%s" % (d["BLOCK"], d["UNROLL"], " w2" if d["WAVES"] != "0" else "")


def load_journal(path):
    """{(op, dtype, case_index): {"case", "nvec", "torch", "winner", "est": {config: ms}}}."""
    torch, cuda = {}, {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            op = r.get("operator")
            if op not in OPS or r.get("status") != "ok":
                continue
            key = (op, r["dtype"], r["case_index"])
            if r["impl"] == "torch":
                torch[key] = r["ms"]
            elif r["impl"] == "cuda" and r.get("autotune"):
                cuda[key] = r
    cases = {}
    for key, r in cuda.items():
        if key not in torch:
            continue
        win = [a for a in r["autotune"] if a.get("ms")]
        if len(win) != 1 or not win[0].get("screen_ms"):
            continue
        scale = win[0]["ms"] / win[0]["screen_ms"]
        est = {a["config"]: a["screen_ms"] * scale for a in r["autotune"] if a.get("screen_ms")}
        nvec = r["bytes"] // ARRAYS.get(key[0], 2) // 16
        cases[key] = {"case": r["case_id"], "nvec": nvec, "torch": torch[key], "winner": r["config"],
                      "winner_ms": win[0]["ms"], "est": est}
    return cases


def load_csv(csv_dir, op):
    """{(dtype, params): (torch_ms, cuda_ms)} of <op>_default.csv."""
    out = {}
    path = os.path.join(csv_dir, op + "_default.csv")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for r in csv.DictReader(f):
            try:
                out[(r["dtype"], r["params"])] = (float(r["torch_ms"]), float(r["cuda_ms"]))
            except (KeyError, ValueError):
                pass
    return out


def score(cases, keys, pick):
    """(cases behind torch, worst time / torch, geomean time / best screened) of pick(key) -> config."""
    behind, worst, logs = 0, 0.0, 0.0
    for k in keys:
        c = cases[k]
        t = c["est"][pick(k)] if pick(k) in c["est"] else c["winner_ms"]
        behind += t > c["torch"] * (1 + NOISE)
        worst = max(worst, t / c["torch"])
        logs += math.log(t / min(c["est"].values()))
    return behind, worst, math.exp(logs / len(keys)) if keys else float("nan")


def fmt(s):
    return "%d (%.3f) %.3f" % s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("journal")
    ap.add_argument("--csv-dir", default=os.path.join(ROOT, "results", "H200", "csv"))
    a = ap.parse_args()
    cases = load_journal(a.journal)
    if not cases:
        sys.exit("defaults.py: no autotuned cuda row with torch beside it in " + a.journal)
    keys = sorted(cases, key=lambda k: (OPS.index(k[0]), DTYPE_ORDER.index(k[1]), k[2]))
    configs = sorted({c for k in keys for c in cases[k]["est"]},
                     key=lambda c: [int(kv.split("=")[1]) for kv in c.split(",")])
    groups = []
    for k in keys:
        if not groups or groups[-1][0] != k[:2]:
            groups.append((k[:2], []))
        groups[-1][1].append(k)
    p = print

    p("# The point-wise family's `cuda` default, from the session-12 autotune journal\n")
    p("Generated by `python3 bench/pointwise/defaults.py <journal> > bench/results/pointwise_defaults.md`")
    p("(journal: results/H200/runs/20261202T094236Z-946022/journal.jsonl of session 12's autotune run,")
    p("H200; %d cases of %s with torch timed beside). A configuration's time at a case: its" % (len(keys), ", ".join(OPS)))
    p("screen median x (winner's full time / winner's screen median). *behind*: more than %d %% slower" % round(NOISE * 100))
    p("than torch in the same run. Cells: cases behind torch (worst time / torch) geomean time / best")
    p("screened time. *CSV default*: the committed %s/<op>_default.csv (another run; the" % os.path.relpath(a.csv_dir, ROOT))
    p("default then, %s): cases behind torch (worst). *rule*: BLOCK 128, UNROLL 2 for 2-byte" % short(OLD_DEFAULT))
    p("dtypes and 1 otherwise, WAVES 0 (oplib.pointwise_unroll). *autotuned*: the run's winner.\n")

    p("## Per operator and dtype\n")
    p("| operator | dtype | cases | CSV default | old default %s | rule | autotuned |" % short(OLD_DEFAULT))
    p("|---|---|---|---|---|---|---|")
    tot = {"csv": [0, 0], "old": 0, "rule": 0, "auto": 0}
    for (op, dt), ks in groups:
        csvd = load_csv(a.csv_dir, op)
        cb, cw, cn = 0, 0.0, 0
        for k in ks:
            tc = csvd.get((dt, cases[k]["case"]))
            if tc:
                cn += 1
                cb += tc[1] > tc[0] * (1 + NOISE)
                cw = max(cw, tc[1] / tc[0])
        old = score(cases, ks, lambda k: OLD_DEFAULT)
        ru = score(cases, ks, lambda k: rule(k[1]))
        au = score(cases, ks, lambda k: cases[k]["winner"])
        tot["csv"][0] += cb
        tot["csv"][1] += cn
        tot["old"] += old[0]
        tot["rule"] += ru[0]
        tot["auto"] += au[0]
        p("| %s | %s | %d | %s | %s | %s | %s |" % (op, dt, len(ks), "%d (%.3f)" % (cb, cw) if cn else "-",
                                                  fmt(old), fmt(ru), fmt(au)))
    p("| all | | %d | %d of %d | %d | %d | %d |\n" % (len(keys), tot["csv"][0], tot["csv"][1], tot["old"],
                                                     tot["rule"], tot["auto"]))

    p("## Fixed configurations, all %d cases and per dtype size\n" % len(keys))
    p("Cases behind torch (worst) geomean over best; sorted by the first column over all cases.\n")
    sizes = (4, 2, 1)
    p("| config | all | 4-byte | 2-byte | 1-byte |")
    p("|---|---|---|---|---|")
    by_size = {s: [k for k in keys if SIZE[k[1]] == s] for s in sizes}
    rows = []
    for c in configs:
        rows.append((score(cases, keys, lambda k: c), c))
    rows.sort(key=lambda x: (x[0][0], x[0][2], x[1]))
    for s, c in rows:
        p("| %s | %s | %s |" % (short(c), fmt(s), " | ".join(fmt(score(cases, by_size[z], lambda k: c)) for z in sizes)))
    p("")

    p("## A size-dependent alternative, left one operator out\n")
    p("Rule family: the old default's 256 x 4 where it makes at least LO blocks and the arrays have")
    p("fewer than 2^HI 16-byte vectors each, the rule elsewhere; (LO, HI) fitted on four operators")
    p("(fewest cases behind torch, then geomean), scored on the fifth.\n")

    def regime(lo, hi):
        def pick(k):
            nv = cases[k]["nvec"]
            if nv / 1024.0 >= lo and nv < 2 ** hi:
                return OLD_DEFAULT
            return rule(k[1])
        return pick

    grid = [(lo, hi) for lo in (0, 132, 264, 396, 528, 792, 1056) for hi in (19, 19.5, 20, 20.5, 21)]
    p("| held out | fitted (LO, HI) | on the others | held out: fitted | held out: rule |")
    p("|---|---|---|---|---|")
    held = [0, 0]
    for op in OPS:
        train = [k for k in keys if k[0] != op]
        test = [k for k in keys if k[0] == op]
        if not test or not train:
            continue
        best = min(grid, key=lambda g: (score(cases, train, regime(*g))[0], score(cases, train, regime(*g))[2], g))
        fitted, plain = score(cases, test, regime(*best)), score(cases, test, lambda k: rule(k[1]))
        held[0] += fitted[0]
        held[1] += plain[0]
        p("| %s | (%d, %s) | %s | %s | %s |" % (op, best[0], best[1], fmt(score(cases, train, regime(*best))),
                                              fmt(fitted), fmt(plain)))
    p("\nHeld out, in all: %d cases behind torch with the fitted size rule, %d with the rule by dtype." % tuple(held))
    p("On all the data the best (LO, HI) gives %d; it does not carry over to an operator it was not" %
      min(score(cases, keys, regime(*g))[0] for g in grid))
    p("fitted on, so the default stays a rule by dtype only.\n")

    p("## Per case\n")
    p("Time / torch of the old default, the rule and the best screened configuration; the configurations")
    p("within 1 % of the best.\n")
    p("| operator | dtype | case | torch µs | old | rule | best | within 1 % of the best |")
    p("|---|---|---|---|---|---|---|---|")
    for k in keys:
        c = cases[k]
        e = c["est"]
        b = min(e.values())
        near = sorted((v, x) for x, v in e.items() if v <= b * 1.01)
        p("| %s | %s | %s | %.1f | %.3f | %.3f | %.3f | %s |" % (
            k[0], k[1], c["case"], c["torch"] * 1e3, e[OLD_DEFAULT] / c["torch"], e[rule(k[1])] / c["torch"],
            b / c["torch"], ", ".join(short(x) for _, x in near)))


if __name__ == "__main__":
    main()
