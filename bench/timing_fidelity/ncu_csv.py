"""ncu_csv.py: reads what run.sh and diag.sh get from ncu. ncu's --csv log has one row per
(kernel, metric); the manifest fid_cases prints lists each launch sequence as `case rep kernels`
in the same order as the kernels ncu profiled."""
import csv
import os

# ncu's --print-units base writes ns; other unit names are scaled to those.
_TO_BASE = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}


def kernels(path):
    """One dict per profiled kernel, in order: metric name -> value (durations in ns), and under
    "_name" the kernel's name as ncu printed it (operators.py tells kernels apart by it), under
    "_grid" and "_block" its launch shape as ncu printed it ("(512, 1, 1)"; "" where absent)."""
    if not os.path.exists(path):
        return []
    lines = open(path).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return []
    rows, by_id = [], {}
    # ncu's own messages (==PROF==, ==WARNING==) may follow or interleave the table: not rows.
    for r in csv.DictReader(l for l in lines[start:] if not l.startswith("==")):
        if r.get("ID") is None or r.get("Metric Value") is None:
            continue
        row = by_id.get(r["ID"])
        if row is None:
            row = by_id[r["ID"]] = {"_name": r.get("Kernel Name", ""), "_grid": r.get("Grid Size", ""),
                                    "_block": r.get("Block Size", "")}
            rows.append(row)
        try:
            v = float(r["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        if r["Metric Name"].startswith("gpu__time_duration"):
            v *= _TO_BASE.get(r.get("Metric Unit", "ns"), 1.0)
        row[r["Metric Name"]] = v
    return rows


def sequences(manifest_path, rows):
    """case -> list (one per repetition) of the kernel dicts of that launch sequence; and a note
    when ncu profiled fewer kernels than the manifest lists."""
    per_case, k, note = {}, 0, ""
    if not os.path.exists(manifest_path):
        return per_case, "no manifest"
    for line in open(manifest_path):
        p = line.split()
        if len(p) != 3:
            continue
        n = int(p[2])
        if k + n > len(rows):
            note = f"ncu reported {len(rows)} kernels, fewer than the manifest lists"
            break
        per_case.setdefault(p[0], []).append(rows[k:k + n])
        k += n
    return per_case, note
