#!/usr/bin/env python3
"""csv_diff.py: compare two folders of tilebench result CSVs (results/<gpu>/csv) case by case.

  python3 scripts/csv_diff.py OLD_DIR NEW_DIR [--mode default]

For every <op>_<mode>.csv present in either folder: the columns of both, the rows matched by
(params, dtype), each implementation's status, and its time ratio new/old. Prints one line per
file and a total; exits 1 when a file, a column, a row or a status differs (columns appended
after all the old ones are reported, not a difference) (times never fail:
they are reported, with their geomean and range, for a reader to judge against run-to-run noise).
"""
import csv
import math
import os
import sys


def load(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        rows = {(row["params"], row["dtype"]): row for row in r}
        return r.fieldnames or [], rows


def impls(fields):
    return [c[len("status_"):] for c in fields if c.startswith("status_")]


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    mode = None
    if "--mode" in argv:
        mode = argv[argv.index("--mode") + 1]
        args.remove(mode)
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    old_dir, new_dir = args
    names = sorted(set(os.listdir(old_dir)) | set(os.listdir(new_dir)))
    names = [n for n in names if n.endswith(".csv") and (mode is None or n.endswith("_" + mode + ".csv"))]
    bad = 0
    all_ratios = []
    for name in names:
        po, pn = os.path.join(old_dir, name), os.path.join(new_dir, name)
        if not os.path.exists(po) or not os.path.exists(pn):
            print(f"{name}: only in {'new' if os.path.exists(pn) else 'old'}")
            bad += 1
            continue
        fo, ro = load(po)
        fn, rn = load(pn)
        problems = []
        notes = []
        if fn[:len(fo)] == fo and len(fn) > len(fo):
            # columns appended after the old ones (e.g. issue 19's rho_tilebench_<impl>): not a difference
            notes.append(f"{len(fn) - len(fo)} columns added ({', '.join(fn[len(fo):][:4])}{', ...' if len(fn) - len(fo) > 4 else ''})")
        elif fo != fn:
            problems.append(f"columns differ: old {fo} new {fn}")
        missing = sorted(set(ro) - set(rn))
        extra = sorted(set(rn) - set(ro))
        if missing:
            problems.append(f"{len(missing)} rows missing in new, e.g. {missing[0]}")
        if extra:
            problems.append(f"{len(extra)} rows only in new, e.g. {extra[0]}")
        changes = []
        ratios = []
        for key in sorted(set(ro) & set(rn)):
            for impl in impls(fo):
                so, sn = ro[key].get("status_" + impl), rn[key].get("status_" + impl)
                if so != sn:
                    changes.append(f"{key} {impl}: {so} -> {sn} ({rn[key].get('reason_' + impl, '')})")
                to, tn = ro[key].get(impl + "_ms"), rn[key].get(impl + "_ms")
                try:
                    a, b = float(to), float(tn)
                    if a > 0 and b > 0:
                        ratios.append(b / a)
                except (TypeError, ValueError):
                    pass
        if changes:
            problems.append(f"{len(changes)} status changes, e.g. {changes[0]}")
        all_ratios += ratios
        if ratios:
            g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            tim = f"time new/old geomean {g:.3f} [{min(ratios):.3f}, {max(ratios):.3f}] over {len(ratios)}"
        else:
            tim = "no times"
        print(f"{name}: {len(ro)} old rows, {len(rn)} new; {'; '.join(problems + notes) or 'statuses identical'}; {tim}")
        for c in changes[1:20]:
            print("    " + c)
        bad += bool(problems)
    if all_ratios:
        g = math.exp(sum(math.log(r) for r in all_ratios) / len(all_ratios))
        print(f"total: {len(names)} files, {bad} differ; time new/old geomean {g:.3f} over {len(all_ratios)} timings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
