#!/usr/bin/env bash
# `tilebench merge RUN --recompute-metrics` without a GPU (fake_runner in the workers): a run made
# before an operator's essential_bytes_expr existed, with an older peaks file and a journal
# written before the rho_tilebench / ceiling_gbs / l2_* columns (as runs before issue 19), is
# brought up to date: every entry's rho is the current formula's on the current ceilings, the
# new columns are filled for every row, the gate is applied again, the times are untouched; an
# operator that no longer exists keeps its entries and metrics with a warning naming it; the
# provenance says the metrics were recomputed and on which peaks file.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh"
export TILEBENCH_RESULTS_DIR="$work/results"
mkdir -p "$work/ops" "$work/peaks"
cp -r "$HOME_DIR/tests/fixtures/operators/broken_wrong_result" "$work/ops/essential_op"
cp -r "$HOME_DIR/tests/fixtures/operators/broken_unwritten" "$work/ops/gone_op"
sed -i 's/bytes_expr: "n \* dtype_size \* 2"/bytes_expr: "n * dtype_size * 3"/' "$work/ops/essential_op/config.yaml"
export TILEBENCH_OPERATOR_PATH="$work/ops:$TILEBENCH_OPERATOR_PATH"
export TILEBENCH_PEAKS_DIR="$work/peaks"
# the peaks of before: one bandwidth for every ceiling
cat >"$work/peaks/fake.json" <<'JSON'
{"gpu": "fake", "device": {"name": "fake"}, "bandwidth_gbs": 4000, "fp32_tflops": 50, "matrix_tflops": {}}
JSON
"$TB" run --operator essential_op,gone_op --gpu fake --quiet --gate-rho 0.0001 >"$work/run.out" 2>&1
rc=$?
check "the run exits 0 [rc=$rc]" test $rc -eq 0
old=$(sed -n 's/^  results: //p' "$work/run.out")
# a journal of before the new columns: the derived ones are dropped from every entry
cat >"$work/strip.lua" <<'EOF'
local journal = require("tilebench.journal")
local path = arg[1]
local fh = assert(io.open(path, "rb")); local lines = {}
for l in fh:lines() do
  local v = journal.decode(l)
  if not v.journal and v.extra then
    for _, k in ipairs({ "rho_tilebench", "ceiling_gbs", "l2_ratio", "l2_near" }) do v.extra[k] = nil end
  end
  lines[#lines + 1] = journal.encode(v)
end
fh:close()
fh = assert(io.open(path, "wb")); fh:write(table.concat(lines, "\n"), "\n"); fh:close()
EOF
"$TB" script "$work/strip.lua" "$old/journal.jsonl"
csv=$work/results/fake/csv/essential_op_default.csv
gone_csv=$work/results/fake/csv/gone_op_default.csv

# ---- what changed since: the essential bytes, the ceilings, the operator gone_op -----------------
sed -i 's/bytes_expr: "n \* dtype_size \* 3"/bytes_expr: "n * dtype_size * 3"\n  essential_bytes_expr: "n * dtype_size * 2"\n  essential_note: "x read once, y written once"/' \
  "$work/ops/essential_op/config.yaml"
cat >"$work/peaks/fake.json" <<'JSON'
{"gpu": "fake", "device": {"name": "fake", "l2_bytes": 1000000}, "bandwidth_gbs": 4000, "memory_ceiling_gbs": 5000,
 "fp32_tflops": 50, "matrix_tflops": {}, "bandwidth_mixes": {"read": 5000, "copy": 4000}}
JSON
rm -r "$work/ops/gone_op"

# a plain merge keeps the stale values (so the checks below can fail)
"$TB" merge "$old" --output plain >"$work/plain.out" 2>&1
cp "$csv" "$work/plain.csv"; cp "$gone_csv" "$work/gone_before.csv"
check "a plain merge leaves the new columns out" bash -c "! head -1 '$csv' | grep -q rho_tilebench_good"
# rho (and the gate: rho < 0.0001 is slow) on the old work: 12n / (t * 4000 GB/s)
check "a plain merge keeps rho as run" awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next}
  { split($1, kv, "="); t = $c["good_ms"] * 1e-3; want = 12 * kv[2] / (t * 4000e9)
    if ((want - $c["rho_good"])^2 > (1e-5 * want)^2) exit 1 }' "$csv"

"$TB" merge "$old" --recompute-metrics --output fresh >"$work/fresh.out" 2>"$work/fresh.err"
rc=$?
cp "$csv" "$work/fresh.csv"
check "merge --recompute-metrics exits 0 [rc=$rc]" test $rc -eq 0
check "it says what it recomputed, against which peaks" \
  grep -q "^recomputed the metrics of 6 entries (3 cases) against $work/peaks/fake.json; 3 cases kept theirs" "$work/fresh.out"
check "the vanished operator is named in a warning, its entries kept" \
  grep -q "warning: operator gone_op no longer exists (not on the operator search path): 6 entries keep the metrics they were run with" "$work/fresh.err"
f=$work/results/fake/runs/fresh
check "the merged journal keeps all 12 entries" test "$(grep -vc '"journal"' "$f/journal.jsonl")" -eq 12
header=$(head -1 "$csv")
check "standard columns first, unchanged" grep -q '^params,dtype,good_ms,speedup_good,rho_good,elib_good,status_good,reason_good,broken_ms,' <<<"$header"
check "the new columns after them" grep -q ',ceiling_gbs_good,ceiling_gbs_broken,l2_near_good,l2_near_broken,l2_ratio_good,l2_ratio_broken,rho_tilebench_good,rho_tilebench_broken$' <<<"$header"
# now rho = 8n / (t * 5000 GB/s) (8 MiB and beyond the L2 use the DRAM ceiling; the smaller ones
# near the L2 have no bandwidth_by_size, so theirs too), rho_tilebench = 12n / (t * 4000 GB/s)
check "rho is the current formula's on the current ceilings, every row, every column filled" awk -F, '
  NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next}
  { split($1, kv, "="); n = kv[2]; t = $c["good_ms"] * 1e-3
    want = 8 * n / (t * 5000e9); tb = 12 * n / (t * 4000e9)
    if ((want - $c["rho_good"])^2 > (1e-5 * want)^2) exit 1
    if ((tb - $c["rho_tilebench_good"])^2 > (1e-5 * tb)^2) exit 2
    if ($c["ceiling_gbs_good"] != 5000 || $c["l2_near_good"] != (n < 1000000) || ($c["l2_ratio_good"] - 8 * n / 1e6)^2 > (1e-5 * n / 1e5)^2) exit 3
    rows++ }
  END { if (rows != 3) exit 4 }' "$csv"
times() { awk -F, 'NR==1 {for (i=1;i<=NF;i++) if ($i ~ /_ms$|^params$|^status_/) keep[i]=1} {out=""; for (i=1;i<=NF;i++) if (keep[i]) out=out $i ","; print out}' "$1"; }
check "the times and statuses are the run's" diff <(times "$work/plain.csv") <(times "$work/fresh.csv")
check "and rho is not (the recomputation changed it)" bash -c "! cmp -s '$work/plain.csv' '$work/fresh.csv'"
check "the vanished operator's CSV keeps its rows and metrics" cmp -s "$work/gone_before.csv" "$gone_csv"
cat >"$work/prov.lua" <<'EOF'
local journal = require("tilebench.journal")
local fh = assert(io.open(arg[1] .. "/provenance.json", "rb")); local p = journal.decode(fh:read("a")); fh:close()
local r = assert(p.recomputed_metrics, "no recomputed_metrics")
assert(r.peaks.path == arg[2], "peaks path " .. tostring(r.peaks.path))
assert(#r.peaks.sha256 == 64, "peaks sha256")
assert(r.entries == 6 and r.cases == 3 and #r.kept == 3 and r.kept[1].entries == 2 and r.kept[1].operator == "gone_op", "counts")
assert(p.tilebench.version and p.tilebench.build_sha, "tilebench version and build")
assert(p.merged_from[1].provenance.run_id == arg[3], "the measuring run's provenance")
EOF
check "the provenance records the recomputation, the peaks file and tilebench" \
  "$TB" script "$work/prov.lua" "$f" "$work/peaks/fake.json" "${old##*/}"

# the gate is applied again: a rho gate over every recomputed rho makes the good rows slow, and a
# recomputation under a lower gate makes them ok again
sed -i 's/"gate":{"rho":0.0001}/"gate":{"rho":1000}/' "$old/run.json" "$old/provenance.json"
"$TB" merge "$old" --recompute-metrics --output gated >"$work/gated.out" 2>&1
check "a case under the stored gate becomes slow" grep -q ',slow,rho .* < gate 1e+03,' "$csv"
g=$work/results/fake/runs/gated
sed -i 's/"gate":{"rho":1000}/"gate":{"rho":0.0001}/' "$g/run.json" "$g/provenance.json"
check "the gated run's journal holds slow entries" grep -q '"status":"slow"' "$g/journal.jsonl"
"$TB" merge "$g" --recompute-metrics --output ungated >"$work/ungated.out" 2>&1
check "recomputed under the gate it was run with: slow rows are ok again" bash -c "! grep -q ',slow,' '$csv' && grep -q ',ok,' '$csv'"

# without the peaks file: refused, nothing written
mv "$work/peaks/fake.json" "$work/peaks.json"
out=$("$TB" merge "$old" --recompute-metrics --output none 2>&1); rc=$?
check "no peaks: refused with status 2 [rc=$rc]" test $rc -eq 2
check "no peaks: the message says what is missing" grep -q "needs the device's ceilings: no peaks for GPU label 'fake'" <<<"$out"
check "no peaks: no run written" test ! -e "$work/results/fake/runs/none"
if [ $fail -ne 0 ]; then cat "$work/run.out" "$work/fresh.out" "$work/fresh.err"; cat "$csv"; echo "$out"; fi
exit $fail
