#!/usr/bin/env bash
# GPU (issue 15): PyTorch eager as an implementation, end to end with the real runner and workers.
#  1. every operator's torch implementation, at the first (smallest) case of each dtype, verifies
#     against the reference (status ok), is timed (torch_ms) and is the speedup baseline
#     (speedup_cuda set); cuda and lib run beside it;
#  2. bad torch functions (tests/fixtures/operators/broken_torch) get the statuses any
#     implementation gets: raises -> failed (traceback naming the file), wrong shape or dtype ->
#     wrong (with the reason), never returns -> timeout, wrong values -> wrong; the good rows stay ok.
# Exits 77 without a GPU, or where torch cannot run (the reason is printed).
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/probe.lua" <<'LUA'
-- available() gives true, info or false, why, info
local ok, a, b = require("tilebench.torch").available(0)
local why, info = (not ok) and a or nil, (ok and a or b) or {}
io.write(ok and "ok" or ("no: " .. tostring(why)), "\n")
io.write(string.format("python %s, torch %s, torch CUDA %s\n", tostring(info.python), tostring(info.torch),
  tostring(info.torch_cuda)))
LUA
probe=$("$TB" script "$work/probe.lua" 2>&1)
echo "$probe"
[ "$(head -1 <<<"$probe")" = ok ] || { echo "torch cannot run here: skipped"; exit 77; }
export TILEBENCH_RESULTS_DIR="$work"
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }

# 1. the twelve operators, smallest case of each dtype
ops=$(cd "${TILEBENCH_HOME:?}/operators" && ls */*_torch.py | cut -d/ -f1 | tr '\n' ',' | sed 's/,$//')
"$TB" run --operator "$ops" --impl torch,cuda,lib --cases first --gpu torchcheck --protocol fixed --warmup 3 --repeat 10 >"$work/ops.txt" 2>&1
rc=$?
cat "$work/ops.txt"
check "run of the 12 operators exits 0 [rc=$rc]" test $rc -eq 0
check "provenance.json records python, torch and torch's CUDA" \
  grep -q '"torch_cuda"' $(ls "$work"/torchcheck/runs/*/provenance.json | head -1)
python3 - "$work/torchcheck/csv" <<'PY' || fail=1
import csv, glob, os, sys
bad = 0
files = sorted(glob.glob(os.path.join(sys.argv[1], "*_default.csv")))
ops = {os.path.basename(f)[:-len("_default.csv")] for f in files}
for name in ["argmax", "batched_matmul", "layernorm", "matmul_fp32_fp16_fp8", "mean_reduction", "mul2",
             "relu", "rmsnorm", "sigmoid", "softmax", "swiglu", "vector_add"]:
    if name not in ops:
        print("FAIL %s: no CSV" % name); bad = 1
for f in files:
    for r in csv.DictReader(open(f)):
        what = "%s %s %s" % (os.path.basename(f), r.get("dtype"), r.get("params"))
        if r.get("status_torch") != "ok":
            print("FAIL %s: torch %s: %s" % (what, r.get("status_torch"), r.get("reason_torch"))); bad = 1
        elif not r.get("torch_ms"):
            print("FAIL %s: no torch_ms" % what); bad = 1
        elif r.get("status_cuda") == "ok" and not r.get("speedup_cuda"):
            print("FAIL %s: cuda has no speedup over torch" % what); bad = 1
        else:
            print("ok   %s: torch %s ms, cuda x%s" % (what, r["torch_ms"], r.get("speedup_cuda")))
sys.exit(bad)
PY

# 2. misbehaving torch functions
export TILEBENCH_OPERATOR_PATH="${TILEBENCH_HOME:?}/tests/fixtures/operators"
"$TB" run --operator broken_torch --impl torch,good --gpu torchbad --case-timeout 20 >"$work/bad.txt" 2>&1
rc=$?
cat "$work/bad.txt"
check "broken_torch run exits 0 with every status recorded [rc=$rc]" test $rc -eq 0
python3 - "$work/torchbad/csv/broken_torch_default.csv" <<'PY' || fail=1
import csv, sys
want = {1: ("ok", None), 2: ("failed", ["broken_torch_torch.py", "ValueError: broken_torch raises on purpose"]),
        3: ("wrong", ["shape (65535,), expected (65536,)"]), 4: ("wrong", ["dtype torch.float64, expected torch.float32"]),
        5: ("timeout", None), 6: ("wrong", ["outside atol"])}
rows = {r["params"]: r for r in csv.DictReader(open(sys.argv[1]))}
bad = 0
for mode, (status, reasons) in want.items():
    r = rows.get("mode=%d" % mode)
    if r is None:
        print("FAIL mode=%d: no row" % mode); bad = 1; continue
    ok = r["status_torch"] == status and all(s in r["reason_torch"] for s in reasons or [])
    ok = ok and r["status_good"] == "ok"
    print("%s mode=%d: torch %s (want %s): %s; good %s" % ("ok  " if ok else "FAIL", mode, r["status_torch"], status,
          r["reason_torch"][:200].replace("\n", " | "), r["status_good"]))
    bad |= not ok
sys.exit(bad)
PY
exit $fail
