"""crosscheck.py: times each operator's torch call in a plain Python process, the way tilebench's
timer does (an L2 eviction that reads 2 x L2 before every run; a sample is the union of the
call's kernel intervals from CUPTI, through torch.profiler; median over the samples), and compares
with the torch_ms tilebench reported for the same case (issue 15's check that the embedding adds
nothing to the timed interval: target within 5 %).

usage: python3 crosscheck.py CASES.json TILEBENCH_CSV_DIR[,DIR...] OUT_PREFIX [--python-times F[,F...]]
                              [--repeat N] [--warmup N]
       python3 crosscheck.py CASES.json --time-only OUT.json [--repeat N] [--warmup N]
  CASES.json: bench/torch/cases.lua's output; TILEBENCH_CSV_DIR: results/<gpu>/csv of a
  `tilebench run --impl torch --cases first` run. Writes OUT_PREFIX.csv and OUT_PREFIX.md.
  Rounds (crosscheck.sh): each side's time of a case is the median of its per-round medians, the
  tilebench runs and the Python passes (--time-only) alternating, so that run-to-run differences
  (clocks, where the buffers land) do not decide a 2 us kernel's comparison."""
import argparse
import csv
import importlib.util
import json
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
          "fp8_e4m3": torch.float8_e4m3fn, "int8": torch.int8, "int32": torch.int32, "int64": torch.int64}


def make_input(t, params):
    dt = DTYPES[t["dtype"]]
    shape = tuple(t["shape"])
    if dt == torch.int8:
        return torch.randint(-32, 33, shape, dtype=dt, device="cuda")
    if not dt.is_floating_point:  # indices and counts (targets, bins): small non-negative values
        return torch.randint(0, 2, shape, dtype=dt, device="cuda")
    if dt == torch.float8_e4m3fn:
        k = params.get("K", 1)
        return (torch.randn(shape, device="cuda") * k ** -0.5).to(dt)
    x = torch.randn(shape, dtype=dt, device="cuda")
    if "K" in params and t["name"] in ("a", "b"):  # the matmul inputs are drawn as randn * K^-0.5
        x = x * params["K"] ** -0.5
    return x


def kernels(prof):
    """The profiled kernels in start order, as (start_us, end_us): no memcpy or memset records."""
    evs = []
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        if e.name.startswith(("Memcpy", "Memset", "Activity Buffer")):  # not kernels
            continue
        evs.append((e.time_range.start, e.time_range.end))
    return sorted(evs)


def union_us(iv):
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(iv):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def count_kernels(fn):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return len(kernels(prof))


def time_case(c, repeat, warmup, flush_buf):
    spec = importlib.util.spec_from_file_location("op_torch", c["file"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    params = c["params"]
    ins = {t["name"]: make_input(t, params) for t in c["inputs"]}
    kwargs = dict(ins)
    if hasattr(mod, "prepare"):
        kwargs.update(mod.prepare(case=params, **ins) or {})
    stream = torch.cuda.Stream()  # tilebench's stream is a non-blocking one of its own, too

    def call():
        with torch.cuda.stream(stream):
            return mod.forward(**kwargs, case=params)

    def evict():
        with torch.cuda.stream(stream):
            return flush_buf.sum()  # reads 2 x L2: the eviction tilebench does by default (read)

    for _ in range(warmup):
        evict()
        call()
    per_call = count_kernels(call)
    per_evict = count_kernels(evict)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(repeat):
            evict()
            call()
        torch.cuda.synchronize()
    ks = kernels(prof)
    step = per_call + per_evict
    if len(ks) != repeat * step:
        raise RuntimeError("%d kernels recorded, expected %d x (%d eviction + %d call)"
                           % (len(ks), repeat, per_evict, per_call))
    samples = [union_us(ks[i * step + per_evict:(i + 1) * step]) / 1e3 for i in range(repeat)]
    return statistics.median(samples), per_call


def case_key(c):
    return "%s|%s|%s" % (c["operator"], c["dtype"], c["case_id"])


def tilebench_ms(csv_dir, c):
    path = os.path.join(csv_dir, c["operator"] + "_default.csv")
    if os.path.exists(path):
        for r in csv.DictReader(open(path)):
            if r.get("params") == c["case_id"] and r.get("dtype") in (c["dtype"], c["dtype"].replace("fp8_e4m3", "fp8_e4m3fn")):
                return float(r["torch_ms"]) if r.get("torch_ms") else None
    return None


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def time_all(cases, a, flush_buf):
    """{case key: {"ms", "kernels", "error"}} for every case, each timed once in this process."""
    out = {}
    for c in cases:
        try:
            ms, nk = time_case(c, a.repeat, a.warmup, flush_buf)
            out[case_key(c)] = {"ms": ms, "kernels": nk, "error": ""}
        except Exception as e:  # one case's failure is reported in its row, the others still run
            out[case_key(c)] = {"ms": None, "kernels": None, "error": str(e).splitlines()[0][:120]}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("csv_dirs", nargs="?", help="comma-separated: each side's time is the median over them")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--time-only", metavar="OUT.json", help="only time the cases here and write them")
    ap.add_argument("--python-times", help="comma-separated --time-only files, used instead of timing now")
    ap.add_argument("--repeat", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()
    cases = json.load(open(a.cases))
    if a.time_only is None and (a.csv_dirs is None or a.out is None):
        ap.error("CSV_DIR and OUT_PREFIX are needed unless --time-only")
    torch.backends.cuda.matmul.allow_tf32 = True
    flush_buf = None
    if a.time_only or not a.python_times:
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        flush_buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda").fill_(1)
    if a.time_only:
        with open(a.time_only, "w") as f:
            json.dump(time_all(cases, a, flush_buf), f)
        return
    rounds = [json.load(open(p)) for p in a.python_times.split(",")] if a.python_times else [time_all(cases, a, flush_buf)]
    csv_dirs = a.csv_dirs.split(",")
    rows = []
    for c in cases:
        tb_ms = median_of([tilebench_ms(d, c) for d in csv_dirs])
        got = [r.get(case_key(c), {}) for r in rounds]
        py_ms = median_of([g.get("ms") for g in got])
        nk = next((g["kernels"] for g in got if g.get("kernels") is not None), None)
        err = "" if py_ms is not None else next((g.get("error") for g in got if g.get("error")), "not timed")
        diff = (tb_ms / py_ms - 1) * 100 if tb_ms and py_ms else None
        rows.append({"operator": c["operator"], "dtype": c["dtype"], "case": c["case_id"], "kernels": nk,
                     "tilebench_ms": tb_ms, "python_cupti_ms": py_ms, "diff_pct": diff,
                     "within_5pct": (abs(diff) <= 5) if diff is not None else None, "error": err})
        print("%-22s %-9s %-22s tilebench %-10s python %-10s %s" % (
            c["operator"], c["dtype"], c["case_id"], tb_ms, py_ms,
            ("%+.1f %%" % diff) if diff is not None else err), flush=True)
    with open(a.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(a.out + ".md", "w") as f:
        f.write("torch %s (CUDA %s), python %s, %s; each side the median of %d tilebench run(s) and %d "
                "Python pass(es)\n\n" % (torch.__version__, torch.version.cuda, sys.version.split()[0],
                                          torch.cuda.get_device_name(0), len(csv_dirs), len(rounds)))
        f.write("| operator | dtype | case | kernels | tilebench torch ms | python CUPTI ms | diff | within 5 % |\n")
        f.write("|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            fmt = lambda v: "%.4f" % v if isinstance(v, float) else ("" if v is None else str(v))
            f.write("| %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                r["operator"], r["dtype"], r["case"], fmt(r["kernels"]), fmt(r["tilebench_ms"]),
                fmt(r["python_cupti_ms"]), "%+.1f %%" % r["diff_pct"] if r["diff_pct"] is not None else r["error"],
                {True: "yes", False: "NO", None: ""}[r["within_5pct"]]))
        ok = [r for r in rows if r["within_5pct"]]
        f.write("\n%d of %d cases within 5 %%.\n" % (len(ok), len(rows)))


if __name__ == "__main__":
    main()
