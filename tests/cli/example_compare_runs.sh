#!/usr/bin/env bash
# example_compare_runs.sh: runs examples/compare_runs.sh (needs no GPU) and checks its verdicts:
# the planted 10 % speed-up and 12 % slow-down of the fixture runs, and the noise rule on CSVs.
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(TMPDIR=$tmp TILEBENCH=$TILEBENCH bash "$TILEBENCH_HOME/examples/compare_runs.sh" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "example exited $rc"
grep -qE '^cuda +1 +1 +5 +1 ' <<<"$out" || fail "cuda summary should be 1 FAST, 1 SLOW, 5 SAME, 1 N/A"
grep -qE '^FAST +vector_add +default +fp16 +n=4194304 +cuda .*U test p=' <<<"$out" || fail "missing the FAST case"
grep -qE '^SLOW +vector_add +default +fp32 +n=1048576 +cuda .*U test p=' <<<"$out" || fail "missing the SLOW case"
grep -qE '^lib/torch +2 +0 +2 +0 ' <<<"$out" || fail "lib vs torch summary"
grep -qE 'every case: .*compare.csv \(24 rows\)' <<<"$out" || fail "the --csv file should hold 24 rows"
echo "example compare_runs: ok"
