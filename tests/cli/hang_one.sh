#!/usr/bin/env bash
# A hung implementation costs its own time limit (issue 12, item 7), without a GPU: one case of
# tests/fixtures/operators/broken_hang_one runs nine implementations in one worker
# (tests/fixtures/fake_runner.lua), 'broken' sleeping forever among eight good ones that take
# TB_FAKE_IMPL_SLEEP each. The worker reports each implementation as it finishes and the parent
# limits the one in flight, so the run takes about one limit plus the good ones' time (before:
# the sum of nine limits, then each implementation again alone). Bound checked: under twice the
# per-implementation limit plus the good ones' time. A hang in the inputs/reference phase costs
# the whole case one limit (every implementation timeout), not one per implementation.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh" # TB, HOME_DIR, work, fail, check
col() { # csv, n, column -> value
  awk -F, -v n="n=$2" -v c="$3" 'NR==1 {for (i=1;i<=NF;i++) col[$i]=i; next} $1==n {print $col[c]}' "$1"
}
limit=5     # --case-timeout: each implementation's limit (no protocol timeout is set)
each=0.25   # what each good implementation takes
start=$(date +%s.%N)
TILEBENCH_RESULTS_DIR="$work" TB_FAKE_IMPL_SLEEP=$each "$TB" run --operator broken_hang_one --cases first \
  --gpu fake --case-timeout $limit >"$work/out.txt" 2>&1
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
bound=$(awk -v l=$limit -v e=$each 'BEGIN {print 2 * l + 8 * e}')
echo "took $took s (bound $bound s; the sum of the limits would be $((9 * limit)) s)"
check "run exits 0 with every status recorded [rc=$rc]" test $rc -eq 0
check "wall time $took s < $bound s" awk -v t="$took" -v b="$bound" 'BEGIN {exit !(t < b)}'
csv=$work/fake/csv/broken_hang_one_default.csv
check "broken: timeout" test "$(col "$csv" 65536 status_broken)" = timeout
for impl in good a1 a2 a3 a4 z1 z2 z3; do
  check "$impl: ok and timed" test "$(col "$csv" 65536 status_$impl)" = ok -a -n "$(col "$csv" 65536 ${impl}_ms)"
done
check "the speedup of a good one is against the baseline of the same case" test -n "$(col "$csv" 65536 speedup_z3)"
check "the reason names the limit" grep -q "no result within the time limit ($limit s)" "$csv"
check "the event names the implementation in flight" grep -q "#1 broken: no result within $limit s; worker killed; the other implementations run in a fresh worker" "$work/out.txt"
check "journal: 9 rows" test "$(grep -vc '"journal"' "$work"/fake/runs/*/journal.jsonl)" -eq 9

# A hang in the inputs/reference phase is every implementation's, charged once: one limit, not nine.
start=$(date +%s.%N)
TILEBENCH_RESULTS_DIR="$work/ref" TB_FAKE_HANG_REFERENCE=broken_hang_one "$TB" run --operator broken_hang_one \
  --cases first --gpu fake --case-timeout $limit >"$work/ref.txt" 2>&1
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
echo "reference hang: took $took s"
check "reference hang: exits 0 [rc=$rc]" test $rc -eq 0
check "reference hang: wall time $took s < 2 limits" awk -v t="$took" -v b="$((2 * limit))" 'BEGIN {exit !(t < b)}'
csv=$work/ref/fake/csv/broken_hang_one_default.csv
for impl in good a1 broken z3; do
  check "reference hang: $impl timeout" test "$(col "$csv" 65536 status_$impl)" = timeout
done
check "reference hang: the reason names the phase" grep -q "inputs/reference: no result within the time limit ($limit s)" "$csv"
[ $fail -ne 0 ] && cat "$work/out.txt" "$work/ref.txt"
exit $fail
