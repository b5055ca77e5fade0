#!/usr/bin/env python3
"""drift.py JOURNAL...: how much a long measurement's median depends on how long it ran.

For every measurement of 3 s or more of wall time in the journals (each keeps its samples in
order), the median of the samples of the first B seconds of GPU time (B = 1, 2, 3; the share of
samples in proportion to the measurement's GPU busy time), with and without the first 0.3 s,
against the median of all of them. Under a power cap a load keeps slowing for seconds, so these
differ; docs/PERFORMANCE.md (session 9) quotes the summary lines."""
import json
import statistics as st
import sys


def rows(paths):
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            s = r.get("stats")
            if not s or not s.get("samples") or s.get("wall_s", 0) < 3:
                continue
            x, busy = s["samples"], s.get("gpu_busy_s", 0)
            if not busy > 0:
                continue
            full, n = st.median(x), len(x)
            for b in (1.0, 2.0, 3.0):
                k = max(2, int(n * min(1.0, b / busy)))
                k0 = int(n * min(1.0, 0.3 / busy))
                yield (r["operator"], r["impl"], r["case_id"], r["dtype"], b, busy, s.get("stop_reason"),
                       100 * (st.median(x[:k]) / full - 1), 100 * (st.median(x[k0:max(k, k0 + 2)]) / full - 1))


def main(paths):
    out = list(rows(paths))
    if not out:
        print("no measurement of 3 s or more")
        return 1
    for b in (1.0, 2.0, 3.0):
        d = sorted(abs(r[7]) for r in out if r[4] == b)
        e = sorted(abs(r[8]) for r in out if r[4] == b)
        print(f"first {b:.0f} s against all: {len(d)} measurements, |diff| max {d[-1]:.2f} %, "
              f"p90 {d[int(0.9 * len(d))]:.2f} %; without the first 0.3 s: max {e[-1]:.2f} %, p90 {e[int(0.9 * len(e))]:.2f} %")
    for r in out:
        if r[4] == 2.0:
            print(f"  {r[0]} {r[1]} {r[2]} {r[3]}: busy {r[5]:.1f} s, stop {r[6]}, first 2 s {r[7]:+.2f} %, "
                  f"without 0.3 s {r[8]:+.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else (print(__doc__), 2)[1])
