#!/usr/bin/env bash
# GPU: a hung implementation costs its own time limit (issue 12, item 7) with the real runner.
# One case of tests/fixtures/operators/broken_hang_one runs nine implementations in one worker;
# 'broken' spins forever on the device. It ends timeout after one --case-timeout, the eight good
# ones are ok and timed, and the run takes well under the sum of nine limits (the bound leaves
# room for compiling and timing the good ones; tests/cli/hang_one.sh checks the tight bound
# without a GPU).
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
limit=15
start=$(date +%s)
"$TB" run --operator broken_hang_one --cases first --gpu hang --case-timeout $limit >"$work/out.txt" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$work/out.txt"
echo "took $took s (limit $limit s per implementation; nine limits: $((9 * limit)) s)"
check "run exits 0 with every status recorded [rc=$rc]" test $rc -eq 0
csv=$work/hang/csv/broken_hang_one_default.csv
check "broken: timeout" test "$(col "$csv" 65536 status_broken)" = timeout
for impl in good a1 a2 a3 a4 z1 z2 z3; do
  check "$impl: ok" test "$(col "$csv" 65536 status_$impl)" = ok
  check "$impl: timed" test -n "$(col "$csv" 65536 ${impl}_ms)"
done
check "wall time $took s under 2 limits + 60 s for the good ones" test "$took" -lt $((2 * limit + 60))
exit $fail
