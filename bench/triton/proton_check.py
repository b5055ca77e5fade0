"""proton_check.py: issue 21's timer check against a profiler we did not write. For each Triton
launch bench/triton/launches.lua describes, the same cubin (tilebench's, handed to triton's rebuild
of the kernel by tb_triton.adopt_binary, which checks its SHA-256 and launch metadata) is launched
through triton's own launcher on tensors of the same shapes and dtypes, under the eviction tilebench uses
by default (a read of 2 x L2 before every sample), inside a Proton session (triton.profiler, CUPTI
backend): one Proton scope per sample, so every sample's kernel time is known, and the median is
compared with the time tilebench reported for the same case (the <impl>_ms column of a
`tilebench run --impl triton` CSV). Target: within 3 % for kernels of 20 us or more.

usage: python3 proton_check.py LAUNCHES.json CSV_DIR OUT_PREFIX [--repeat N] [--warmup N]"""
import argparse
import csv
import json
import os
import statistics
import sys

import torch
import triton.profiler as proton

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "host", "python"))
import tb_triton  # noqa: E402  (tilebench's own compile driver: the same _build as the cache's)

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
          "fp8_e4m3": torch.float8_e4m3fn, "int8": torch.int8, "int32": torch.int32,
          "int64": torch.int64, "uint8": torch.uint8}


def make_tensor(a):
    dt = DTYPES[a["dtype"]]
    shape = tuple(a["shape"])
    if dt.is_floating_point:
        return torch.randn(shape, device="cuda").to(dt)
    return torch.randint(0, 8, shape, dtype=dt, device="cuda")


def build_launch(d):
    """A callable launching the kernel of description d through triton's launcher."""
    built = tb_triton._build(d)
    if isinstance(built, dict):
        raise RuntimeError(built.get("unsupported") or built.get("error"))
    _triton, ck, params, consts, _div, _target = built
    identical = tb_triton.adopt_binary(ck, d)  # launch tilebench's cubin, not a rebuild
    fn = getattr(tb_triton._load(d["file"]), d["kernel"])
    keep, args = [], []
    for a in fn.arg_names:
        if a in consts:
            args.append(consts[a])
        elif "value" in d["args"][a]:
            args.append(d["args"][a]["value"])
        else:
            t = make_tensor(d["args"][a])
            keep.append(t)
            args.append(t)
    grid = tuple(list(d["grid"]) + [1, 1])[:3]
    return (lambda: ck[grid](*args)), ck.metadata.name, keep, identical


def kernel_times(node, names, prefix, out):
    """{scope: summed time in ns of kernels named in names} from Proton's hatchet tree."""
    frame = node.get("frame", {}).get("name", "")
    if frame.startswith(prefix):
        total = [0.0]

        def walk(n):
            if n.get("frame", {}).get("name") in names:
                total[0] += float(n.get("metrics", {}).get("time (ns)", 0.0))
            for c in n.get("children", []):
                walk(c)
        walk(node)
        out[frame] = total[0]
        return
    for c in node.get("children", []):
        kernel_times(c, names, prefix, out)


def time_entry(e, repeat, warmup, flush_buf, tmpdir):
    launches = [build_launch(d) for d in e["launches"]]
    names = {name for _, name, _, _ in launches}

    def sample():
        for call, _, _, _ in launches:
            call()

    for _ in range(warmup):
        flush_buf.sum()
        sample()
    torch.cuda.synchronize()
    path = os.path.join(tmpdir, "proton_%s_%s" % (e["operator"], e["dtype"]))
    proton.start(path, backend="cupti")
    for i in range(repeat):
        flush_buf.sum()  # the eviction tilebench does by default: read 2 x L2
        with proton.scope("sample_%05d" % i):
            sample()
    torch.cuda.synchronize()
    proton.finalize()
    with open(path + ".hatchet") as f:
        tree = json.load(f)
    per = {}
    for root in (tree if isinstance(tree, list) else [tree]):
        kernel_times(root, names, "sample_", per)
    if len(per) != repeat:
        raise RuntimeError("Proton recorded %d samples, expected %d" % (len(per), repeat))
    return statistics.median(per.values()) / 1e6, sorted(names)


def tilebench_ms(csv_dir, e, col):
    path = os.path.join(csv_dir, e["operator"] + "_default.csv")
    if not os.path.exists(path):
        return None
    for r in csv.DictReader(open(path)):
        if r.get("params") == e["case_id"] and r.get("dtype") == e["dtype"] and r.get(col):
            return float(r[col])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("launches")
    ap.add_argument("csv_dir")
    ap.add_argument("out")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()
    entries = json.load(open(a.launches))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush_buf = torch.ones(2 * l2 // 4, dtype=torch.float32, device="cuda")
    tmpdir = os.path.dirname(os.path.abspath(a.out))
    rows = []
    for e in entries:
        tb = tilebench_ms(a.csv_dir, e, "triton_ms")
        try:
            pm, names = time_entry(e, a.repeat, a.warmup, flush_buf, tmpdir)
            err = ""
        except Exception as ex:  # one entry's failure is its row's, the others still run
            pm, names, err = None, [], ("%s: %s" % (type(ex).__name__, ex)).splitlines()[0][:160]
        diff = (tb / pm - 1) * 100 if tb and pm else None
        rows.append({"operator": e["operator"], "dtype": e["dtype"], "case": e["case_id"],
                     "kernels": " ".join(names), "tilebench_ms": tb, "proton_ms": pm, "diff_pct": diff,
                     "within_3pct": (abs(diff) <= 3) if diff is not None else None, "error": err})
        print("%-22s %-6s %-28s tilebench %-10s proton %-10s %s" % (
            e["operator"], e["dtype"], e["case_id"], tb, pm, ("%+.2f %%" % diff) if diff is not None else err), flush=True)
    import triton
    with open(a.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(a.out + ".md", "w") as f:
        f.write("triton %s, torch %s, %s; Proton (CUPTI) median of %d samples, each after a 2 x L2 read\n\n"
                % (triton.__version__, torch.__version__, torch.cuda.get_device_name(0), a.repeat))
        f.write("| operator | dtype | case | kernel | tilebench ms | Proton ms | diff | within 3 % |\n|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            fmt = lambda v: "%.5f" % v if isinstance(v, float) else ("" if v is None else str(v))
            f.write("| %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                r["operator"], r["dtype"], r["case"], r["kernels"], fmt(r["tilebench_ms"]), fmt(r["proton_ms"]),
                "%+.2f %%" % r["diff_pct"] if r["diff_pct"] is not None else r["error"],
                {True: "yes", False: "NO", None: ""}[r["within_3pct"]]))
        ok = [r for r in rows if r["within_3pct"]]
        f.write("\n%d of %d kernels within 3 %%.\n" % (len(ok), len(rows)))


if __name__ == "__main__":
    main()
