#!/usr/bin/env bash
# rho on the essential work, TileBench's rho beside it, and the L2 mark (issue 19), end to end
# without a GPU (fake_runner in the workers): an operator whose config states an
# essential_bytes_expr is run with a peaks file of the new format; the CSV keeps its standard
# columns first and adds rho_tilebench_<impl>, ceiling_gbs_<impl>, l2_near_<impl> and
# l2_ratio_<impl> after them, with the values the formulas give.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh"
export TILEBENCH_RESULTS_DIR="$work/results"
mkdir -p "$work/ops" "$work/peaks"
cp -r "$HOME_DIR/tests/fixtures/operators/broken_wrong_result" "$work/ops/essential_op"
# TileBench's count: 3 x n x 4 bytes; the essential one: 2 x n x 4.
sed -i 's/bytes_expr: "n \* dtype_size \* 2"/bytes_expr: "n * dtype_size * 3"\n  essential_bytes_expr: "n * dtype_size * 2"\n  essential_note: "x read once, y written once"/' \
  "$work/ops/essential_op/config.yaml"
export TILEBENCH_OPERATOR_PATH="$work/ops:$TILEBENCH_OPERATOR_PATH"
export TILEBENCH_PEAKS_DIR="$work/peaks"
# L2 of 1 MB: the cases of 4096, 65536 and 1048576 floats move 32 KiB, 512 KiB and 8 MiB (essential).
cat >"$work/peaks/fake.json" <<'JSON'
{"gpu": "fake", "device": {"name": "fake", "l2_bytes": 1000000}, "bandwidth_gbs": 4000, "memory_ceiling_gbs": 5000,
 "fp32_tflops": 50, "matrix_tflops": {}, "bandwidth_mixes": {"read": 5000, "copy": 4000},
 "bandwidth_by_size": [{"bytes": 250000, "gbs": 3000}, {"bytes": 1000000, "gbs": 8000}, {"bytes": 4000000, "gbs": 6000}]}
JSON
"$TB" run --operator essential_op --gpu fake --quiet >"$work/run.out" 2>&1
rc=$?
check "the run exits 0 [rc=$rc]" test $rc -eq 0
csv=$work/results/fake/csv/essential_op_default.csv
header=$(head -1 "$csv")
check "standard columns first, unchanged" grep -q '^params,dtype,good_ms,speedup_good,rho_good,elib_good,status_good,reason_good,broken_ms,' <<<"$header"
check "the new columns after them" grep -q ',ceiling_gbs_good,ceiling_gbs_broken,l2_near_good,l2_near_broken,l2_ratio_good,l2_ratio_broken,rho_tilebench_good,rho_tilebench_broken$' <<<"$header"
# rho = 8n / (t * ceiling); rho_tilebench = 12n / (t * 4000 GB/s); n from the params cell.
check "rho on the essential bytes, rho_tilebench on TileBench's, per line" awk -F, '
  NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next}
  { split($1, kv, "="); n = kv[2]; t = $c["good_ms"] * 1e-3; ceil = $c["ceiling_gbs_good"]
    want = 8 * n / (t * ceil * 1e9); tb = 12 * n / (t * 4000e9)
    if (t <= 0 || ceil == "") exit 1
    if ((want - $c["rho_good"])^2 > (1e-5 * want)^2) exit 2
    if ((tb - $c["rho_tilebench_good"])^2 > (1e-5 * tb)^2) exit 3 }' "$csv"
# 32 KiB: near, the ladder (3000) under the DRAM 5000 -> 5000; 512 KiB: near, interpolated in
# log(size) between 250 KB (3000) and 1 MB (8000); 8 MiB: 8.4 x L2, not near -> 5000.
check "ceilings by working set" awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next}
  NR==2 && !($c["ceiling_gbs_good"] == 5000 && $c["l2_near_good"] == 1) {exit 1}
  NR==3 { want = 3000 + log(524288 / 250000) / log(4) * 5000
          if (($c["ceiling_gbs_good"] - want)^2 > 1 || $c["l2_near_good"] != 1) exit 2 }
  NR==4 && !($c["ceiling_gbs_good"] == 5000 && $c["l2_near_good"] == 0 && $c["l2_ratio_good"] == 8.38861) {exit 3}' "$csv"
out=$("$TB" show essential_op 2>&1)
check "show says the formulas differ and why" grep -q "differs: x read once, y written once" <<<"$out"
check "  the essential bytes" grep -q '^  essential bytes: n \* dtype_size \* 2  (rho; ' <<<"$out"
cp -r "$work/ops/essential_op" "$work/ops/essential_flops_op"
sed -i 's/^  flops_expr: "n"$/  flops_expr: "2 * n"\n  essential_flops_expr: "n"/' "$work/ops/essential_flops_op/config.yaml"
out=$("$TB" show essential_flops_op 2>&1)
check "show prints an essential flops formula" grep -q '^  essential flops: n  (rho; TileBench.s flops above give rho_tilebench)$' <<<"$out"
printf 'return { operators = {"essential_op"}, metrics = { rho_tilebench = function() return 1 end } }\n' >"$work/bad.lua"
out=$("$TB" run "$work/bad.lua" --gpu fake --quiet 2>&1); rc=$?
check "a campaign metric cannot take rho_tilebench's name [rc=$rc]" test $rc -eq 2
# bench/rho/check.lua recomputes the target on the committed CSVs (no GPU): a line per operator,
# exit 1 with the cases over the limit.
out=$(cd "$HOME_DIR" && TILEBENCH_PEAKS_DIR="$HOME_DIR/peaks" "$TB" script bench/rho/check.lua results/H200/csv H200 100 2>&1); rc=$?
check "rho check: within a limit of 100 [rc=$rc]" test $rc -eq 0
check "  a line per operator, TileBench's rmsnorm rho above the essential one" awk '$1 == "rmsnorm" && $5 > $3 {ok=1} END {exit !ok}' <<<"$out"
out=$(cd "$HOME_DIR" && TILEBENCH_PEAKS_DIR="$HOME_DIR/peaks" "$TB" script bench/rho/check.lua results/H200/csv H200 0.5 2>&1); rc=$?
check "rho check: over a limit of 0.5 exits 1 and lists cases [rc=$rc]" test $rc -eq 1 -a -n "$(grep -E '^  [a-z_0-9]+ [a-z]+ [a-z0-9_]+ .*: rho [0-9.]+ \(ceiling' <<<"$out")"
if [ $fail -ne 0 ]; then cat "$work/run.out"; cat "$csv"; echo "$out"; fi
exit $fail
