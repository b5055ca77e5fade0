#!/usr/bin/env bash
# A metric a campaign registers reaches the CSV and the report (issue 12, item 3), end to end
# without a GPU (fake_runner in the workers): a campaign script with metrics = {name = fn} is
# run; results/<gpu>/csv/<op>_<mode>.csv gets the columns <name>_<impl> after the standard ones
# with fn's value per row, and `tilebench report` shows them. A name
# that cannot be a column is refused.
set -u
TB=${TILEBENCH:?}
HOME_DIR=${TILEBENCH_HOME:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TILEBENCH_OPERATOR_PATH="$HOME_DIR/tests/fixtures/operators"
export TILEBENCH_RUNNER=tests.fixtures.fake_runner
export TILEBENCH_RESULTS_DIR="$work/results"
fail=0
check() { # description, command...
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
cat >"$work/metric.lua" <<'EOF'
return {
  name = "metric-test",
  operators = { "broken_wrong_result" },
  metrics = {
    double_ms = function(row) return row.ms and 2 * row.ms end,
    per_element_ns = function(row) return row.ms and row.ms * 1e6 / row.params.n end,
  },
}
EOF
"$TB" run "$work/metric.lua" --gpu fake --quiet >"$work/run.out" 2>&1
rc=$?
check "the run exits 0 [rc=$rc]" test $rc -eq 0
csv=$work/results/fake/csv/broken_wrong_result_default.csv
header=$(head -1 "$csv")
check "standard columns first, unchanged" grep -q '^params,dtype,good_ms,speedup_good,rho_good,elib_good,status_good,reason_good,broken_ms,' <<<"$header"
check "metric columns at the end, <name>_<impl>" grep -q ',double_ms_good,double_ms_broken,per_element_ns_good,per_element_ns_broken$' <<<"$header"
# the values are the function's: 2 * good_ms, and empty where there is no time (broken is wrong)
check "double_ms_good = 2 * good_ms on every line" awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next}
  {a=$c["good_ms"]; b=$c["double_ms_good"]; if (a == "" || b == "" || (b - 2*a) > 1e-5*b || (2*a - b) > 1e-5*b) exit 1}' "$csv"
check "no value without a time" awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} $c["double_ms_broken"] != "" {exit 1}' "$csv"
check "three cases" test "$(wc -l <"$csv")" -eq 4

"$TB" report --gpu fake --output "$work/report" >"$work/report.out" 2>&1
rc=$?
check "report exits 0 [rc=$rc]" test $rc -eq 0
check "the report has the campaign's metrics" grep -q "<h4>Campaign metrics</h4>" "$work/report/report.html"
check "the report names both" grep -q "<th>double_ms</th><th>per_element_ns</th>" "$work/report/report.html"

printf 'return { operators = {"broken_wrong_result"}, metrics = { rho = function() return 1 end } }\n' >"$work/bad.lua"
out=$("$TB" run "$work/bad.lua" --gpu fake --quiet 2>&1); rc=$?
check "a metric named like a standard column is refused [rc=$rc]" test $rc -eq 2
check "the message says why" grep -q "'rho' cannot name CSV columns" <<<"$out"
if [ $fail -ne 0 ]; then cat "$work/run.out" "$work/report.out"; head -3 "$csv"; fi
exit $fail
