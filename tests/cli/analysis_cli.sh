#!/usr/bin/env bash
# analysis_cli.sh: `tilebench aggregate`, `report` and `compare` from the command line, without a
# GPU: files written where the options say, the markdown printed, usage errors exit 2, missing
# input exits 1 with a message.
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FIX="$TILEBENCH_HOME/tests/fixtures/resultsets"

# aggregate --gpu reads results/<gpu>/csv under $TILEBENCH_RESULTS_DIR and writes aggregate/ there
mkdir -p "$tmp/results/H200-test"
cp -r "$FIX/H200-test/csv" "$tmp/results/H200-test/"
out=$(TILEBENCH_RESULTS_DIR=$tmp/results "$TILEBENCH" aggregate --gpu H200-test 2>"$tmp/err"); rc=$?
[ $rc -eq 0 ] || fail "aggregate exited $rc: $(cat "$tmp/err")"
grep -q '^# Aggregate: H200-test' <<<"$out" || fail "markdown title"
grep -q '| cuda | 2 | 1.12x | 14 / 15 |' <<<"$out" || fail "suite row of cuda"
grep -q '## Slow and failed cases (5)' <<<"$out" || fail "problems heading"
for f in summary.md suite.csv categories.csv operators.csv per_dtype.csv problems.csv; do
  [ -s "$tmp/results/H200-test/aggregate/$f" ] || fail "aggregate did not write $f"
done
grep -q '^default,cuda,2,1.1213,14,15,1,14,0.0714$' "$tmp/results/H200-test/aggregate/suite.csv" \
  || fail "suite.csv: $(cat "$tmp/results/H200-test/aggregate/suite.csv")"

# --mode keeps one mode
out=$(TILEBENCH_RESULTS_DIR=$tmp/results "$TILEBENCH" aggregate --gpu H200-test --mode autotune --output "$tmp/agg2" 2>/dev/null)
grep -q '## Suite, mode autotune' <<<"$out" || fail "--mode autotune"
grep -q '## Suite, mode default' <<<"$out" && fail "--mode autotune still shows default"

# usage errors: exit 2
"$TILEBENCH" aggregate >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "aggregate without --gpu: exit $rc"
grep -q 'give --gpu LABEL or --csv-dir DIR' "$tmp/err" || fail "aggregate usage message: $(cat "$tmp/err")"
"$TILEBENCH" compare only-one >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "compare with one argument: exit $rc"
"$TILEBENCH" compare a b --map nonsense >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "compare --map nonsense: exit $rc"
# missing input: exit 1 with the path
"$TILEBENCH" aggregate --csv-dir "$tmp/nope" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "aggregate on a missing dir: exit $rc"
grep -q "no such file or directory: $tmp/nope" "$tmp/err" || fail "missing dir message: $(cat "$tmp/err")"

# compare: exit 0 even when cases differ
out=$("$TILEBENCH" compare "$FIX/H200-test/runs/run-a" "$FIX/H200-test/runs/run-b"); rc=$?
[ $rc -eq 0 ] || fail "compare exited $rc"
grep -qE '^all +1 +1 +19 +3 ' <<<"$out" || fail "compare totals: $out"

# report: one file where --output says
out=$("$TILEBENCH" report --csv-dir "$FIX/H200-test/csv" --output "$tmp/rep"); rc=$?
[ $rc -eq 0 ] || fail "report exited $rc"
[ -s "$tmp/rep/report.html" ] || fail "report.html not written"
[ "$(ls "$tmp/rep")" = "report.html" ] || fail "report wrote more than one file: $(ls "$tmp/rep")"
grep -q '<title>tilebench report: H200-test</title>' "$tmp/rep/report.html" || fail "report title"

# help texts
for c in aggregate report compare; do
  "$TILEBENCH" $c --help | grep -q "usage: tilebench $c" || fail "$c --help"
done
echo "aggregate/report/compare CLI: ok"
