#!/usr/bin/env bash
# GPU: matmul_fp32_fp16_fp8's fp8, where every implementation must make the K-major B it needs
# from the operator's row-major b inside its timed interval (docs/MEASUREMENT.md, "Layouts an
# implementation needs"): torch (b.t().contiguous().t() inside forward), lib and cuda (a
# transpose step first in the plan) and triton where it imports, at the first and last fp8 cases,
# under `run --checks`. Every row must be ok: a layout made once from the first inputs (torch's
# old prepare()) is wrong on fresh inputs and refused by fresh_inputs. Then the timed torch call
# must include the copy: its kernels per timed run (CUPTI) are at least 3 (the copy, _scaled_mm,
# the cast to e4m3), where the old forward ran 2.
# Exits 77 without a GPU, or where torch cannot run (the reason is printed).
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/probe.lua" <<'LUA'
local ok, why = require("tilebench.torch").available(0)
io.write(ok and "ok" or ("no: " .. tostring(why)), "\n")
local tri = require("tilebench.triton").available()
io.write(tri and "triton" or "no-triton", "\n")
LUA
probe=$("$TB" script "$work/probe.lua" 2>&1)
echo "$probe"
[ "$(head -1 <<<"$probe")" = ok ] || { echo "torch cannot run here: skipped"; exit 77; }
impls=torch,lib,cuda
[ "$(sed -n 2p <<<"$probe")" = triton ] && impls=$impls,triton
export TILEBENCH_RESULTS_DIR="$work"
"$TB" run --operator matmul_fp32_fp16_fp8 --dtype fp8_e4m3 --cases ends --impl "$impls" --checks \
  --gpu fp8layout --protocol fixed --warmup 3 --repeat 10 >"$work/run.txt" 2>&1
rc=$?
cat "$work/run.txt"
fail=0
[ $rc -eq 0 ] || { echo "FAIL run exits $rc"; fail=1; }
python3 - "$work/fp8layout" "$impls" <<'PY' || fail=1
import csv, glob, json, sys
root, impls = sys.argv[1], sys.argv[2].split(",")
rows = [r for f in glob.glob(root + "/csv/matmul_fp32_fp16_fp8_*.csv") for r in csv.DictReader(open(f))]
bad = 0
if len(rows) != 2:
    print("FAIL want 2 fp8 rows (first and last case), got", len(rows)); bad = 1
for r in rows:
    for i in impls:
        st = r.get("status_" + i)
        print(f"{r['params']} {r['dtype']} {i}: {st} {r.get(i + '_ms')} {r.get('reason_' + i) or ''}")
        if st != "ok":
            print(f"FAIL {i} at {r['params']}: status {st}"); bad = 1
# the journal's torch samples: kernels per timed run (CUPTI clock)
seen = 0
for f in glob.glob(root + "/runs/*/journal.jsonl"):
    for line in open(f):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("impl") != "torch":
            continue
        k = e.get("kernels_per_run") or (e.get("stats") or {}).get("kernels_per_run")
        if isinstance(k, (int, float)):
            seen += 1
            print("torch kernels per timed run:", k)
            if k < 3:
                print("FAIL torch's timed call ran", k, "kernels: the copy of b is not in it"); bad = 1
if seen == 0:
    print("note: no kernels_per_run in the journal (events clock?): the kernel count was not checked")
sys.exit(bad)
PY
[ $fail -eq 0 ] && echo "matmul fp8 layouts: ok"
exit $fail
