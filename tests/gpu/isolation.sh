#!/usr/bin/env bash
# GPU: each deliberately broken operator (tests/fixtures/operators) ends with its status --
# broken_oob_write failed (a sticky CUDA_ERROR_ILLEGAL_ADDRESS ends its worker), broken_endless_loop
# timeout (its worker is killed at the time limit), broken_unwritten and broken_wrong_result
# wrong -- while every 'good' implementation beside them, and every other case, completes ok.
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TILEBENCH_OPERATOR_PATH="${TILEBENCH_HOME:?}/tests/fixtures/operators"
export TILEBENCH_RESULTS_DIR="$work"
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
col() { # csv, n, column -> value
  awk -F, -v n="n=$2" -v c="$3" 'NR==1 {for (i=1;i<=NF;i++) col[$i]=i; next} $1==n {print $col[c]}' "$1"
}
start=$(date +%s)
"$TB" run --operator broken_oob_write,broken_endless_loop,broken_unwritten,broken_wrong_result \
  --gpu isolation --case-timeout 5 >"$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
echo "took $(( $(date +%s) - start )) s"
check "run exits 0 with every status recorded [rc=$rc]" test $rc -eq 0
csv=$work/isolation/csv
for n in 4096 65536 1048576; do
  for op in broken_oob_write broken_endless_loop broken_unwritten broken_wrong_result; do
    check "$op n=$n good ok" test "$(col $csv/${op}_default.csv $n status_good)" = ok
    check "$op n=$n good timed" test -n "$(col $csv/${op}_default.csv $n good_ms)"
  done
  check "oob n=$n broken failed" test "$(col $csv/broken_oob_write_default.csv $n status_broken)" = failed
  check "oob n=$n reason names the fault" grep -qE "^n=$n,.*(ILLEGAL_ADDRESS|LAUNCH_FAILED|worker killed)" "$csv/broken_oob_write_default.csv"
  check "loop n=$n broken timeout" test "$(col $csv/broken_endless_loop_default.csv $n status_broken)" = timeout
  check "unwritten n=$n broken wrong" test "$(col $csv/broken_unwritten_default.csv $n status_broken)" = wrong
  check "wrong_result n=$n broken wrong" test "$(col $csv/broken_wrong_result_default.csv $n status_broken)" = wrong
done
check "journal: 24 rows" test "$(grep -vc '"journal"' "$work"/isolation/runs/*/journal.jsonl)" -eq 24
check "worker log kept" test -f "$(ls -d "$work"/isolation/runs/*)/worker.log"
exit $fail
