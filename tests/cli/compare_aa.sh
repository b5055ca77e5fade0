#!/usr/bin/env bash
# bench/compare/aa.sh's analysis step without a GPU, on synthetic runs (tests/fixtures/
# synthetic_run.lua: medians wobbling by up to 1 % from run to run): the noise from runs 1-2, the
# A/A check on runs 1-3 and the planted check pass and exit 0 with a 5 % planted slowdown; a
# "planted" run that is not slower fails the check (exit 1) and lists the misses.
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
make() { "$TILEBENCH" script "$TILEBENCH_HOME/tests/fixtures/synthetic_run.lua" "$@"; }
for spec in "run1 11 1.0" "run2 22 1.0" "run3 33 1.0" "planted 33 1.05"; do
  set -- $spec; make "$work/aa/$1/H200/runs/r$2" "$2" "$3"
done
out=$(TB=$TILEBENCH bash "$TILEBENCH_HOME/bench/compare/aa.sh" "$work/aa" analyse 2>&1); rc=$?
check "analyse exits 0 [rc=$rc]" test $rc -eq 0
check "  the noise figure" grep -qE '^run-to-run noise \(runs 1, 2\): wrote .*noise.json: 0\.[0-9]+ % per run over 40 cases' <<<"$out"
check "  A/A quiet" grep -q '^A/A (runs 1, 3) with it: 0 FAST or SLOW of 40 cases (target 0)$' <<<"$out"
check "  planted caught" grep -q '^planted 5 % (run 1 vs planted): 0 of 40 cases not SLOW (target 0)$' <<<"$out"
check "  the planted slowdown as measured" grep -qE '^planted slowdown as measured: geomean 1\.05[0-9], ' <<<"$out"
check "  the noise file for peaks/noise/" test -s "$work/aa/noise.json"
rm -rf "$work/aa/planted"; make "$work/aa/planted/H200/runs/r44" 44 1.0
out=$(TB=$TILEBENCH bash "$TILEBENCH_HOME/bench/compare/aa.sh" "$work/aa" analyse 2>&1); rc=$?
check "a planted run that is not slower fails [rc=$rc]" test $rc -eq 1
check "  and the misses are listed" grep -qE '^  softmax,default,fp16,n_cols=' <<<"$out"
out=$(TB=$TILEBENCH bash "$TILEBENCH_HOME/bench/compare/aa.sh" "$work/none" analyse 2>&1); rc=$?
check "without the runs: exit 2, naming what is missing [rc=$rc]" test $rc -eq 2 -a -n "$(grep 'r1 is missing' <<<"$out")"
[ $fail -eq 0 ] || echo "$out"
exit $fail
