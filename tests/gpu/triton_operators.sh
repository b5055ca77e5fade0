#!/usr/bin/env bash
# GPU (issue 21): every operator's `triton` implementation through the real runner and workers, at
# the first (smallest) case of each dtype in its default configuration: verified against the
# reference (status ok) and timed (triton_ms), with cuda beside it; provenance.json records
# triton's version. Exits 77 without a GPU or where triton does not import (the reason printed).
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%s\n' 'local ok, v = require("tilebench.triton").available()' 'print(ok and "ok" or ("no: " .. tostring(v)))' \
  > "$work/probe.lua"
probe=$("$TB" script "$work/probe.lua" 2>&1)
echo "$probe"
[ "$(head -1 <<<"$probe")" = ok ] || { echo "triton cannot run here: skipped"; exit 77; }
# the operators whose operator.lua has a `triton` implementation (the matmuls' kernel is shared)
printf '%s\n' 'for _, n in ipairs(require("tilebench.operator").list()) do' \
  '  if require("tilebench.operator").load(n).module.implementations.triton then print(n) end end' > "$work/ops.lua"
ops=$("$TB" script "$work/ops.lua" | tr '\n' ',' | sed 's/,$//')
[ -n "$ops" ] || { echo "FAIL no operator has a triton file"; exit 1; }
export TILEBENCH_RESULTS_DIR="$work"
"$TB" run --operator "$ops" --impl cuda,triton --cases first --gpu tritoncheck --protocol fixed --warmup 3 --repeat 10 \
  >"$work/ops.txt" 2>&1
rc=$?
cat "$work/ops.txt"
fail=0
[ $rc -eq 0 ] || { echo "FAIL run exited $rc"; fail=1; }
grep -q '"triton"' $(ls "$work"/tritoncheck/runs/*/provenance.json | head -1) || { echo "FAIL provenance has no triton"; fail=1; }
python3 - "$work/tritoncheck/csv" "$ops" <<'PY' || fail=1
import csv, glob, os, sys
bad = 0
for name in sys.argv[2].split(","):
    f = os.path.join(sys.argv[1], name + "_default.csv")
    if not os.path.exists(f):
        print("FAIL %s: no CSV" % name); bad = 1; continue
    for r in csv.DictReader(open(f)):
        what = "%s %s %s" % (name, r.get("dtype"), r.get("params"))
        if r.get("status_triton") != "ok":
            print("FAIL %s: triton %s: %s" % (what, r.get("status_triton"), r.get("reason_triton"))); bad = 1
        elif not r.get("triton_ms"):
            print("FAIL %s: no triton_ms" % what); bad = 1
        else:
            print("ok   %s: triton %s ms, cuda %s ms" % (what, r["triton_ms"], r.get("cuda_ms")))
sys.exit(bad)
PY
exit $fail
