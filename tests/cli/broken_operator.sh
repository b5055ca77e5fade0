#!/usr/bin/env bash
# A broken operator costs itself only (issue 12, item 6), without a GPU (fake_runner in the
# workers). An operators directory made here holds vector_add, a copy whose config.yaml does not
# parse and a copy whose operator.lua raises while loading (TILEBENCH_OPERATOR_PATH puts it on
# the search path). One run of the three: both broken ones are reported with their file and
# line and their own frames (no tilebench internals), recorded as failed, vector_add runs in
# full, the exit status is 1. Fixed and resumed, the two run and replace their failed entries.
set -u
TB=${TILEBENCH:?}
HOME_DIR=${TILEBENCH_HOME:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TILEBENCH_RUNNER=tests.fixtures.fake_runner
export TILEBENCH_OPERATOR_PATH="$work/ops"
export TILEBENCH_RESULTS_DIR="$work/results"
fail=0
check() { # description, command...
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
mkdir -p "$work/ops"
cp -r "$HOME_DIR/operators/vector_add" "$work/ops/vector_add"
cp -r "$HOME_DIR/operators/vector_add" "$work/ops/bad_yaml"
cp -r "$HOME_DIR/operators/vector_add" "$work/ops/raising"
# bad_yaml: a flow sequence never closed (line 2)
cp "$work/ops/bad_yaml/config.yaml" "$work/bad_yaml.good"
printf 'case_grid:\n  n: [1024, 2048\ndtype: [fp32]\n' >"$work/ops/bad_yaml/config.yaml"
# raising: operator.lua calls a helper of its own that indexes nil while loading
cp "$work/ops/raising/operator.lua" "$work/raising.good"
awk '{print} /^local op = \{\}$/ && !done {print "local function describe(t) return t.shape.rank end"; print "op.rank = describe({})"; done=1}' \
  "$work/raising.good" >"$work/ops/raising/operator.lua"
line=$(grep -n '^op.rank = describe' "$work/ops/raising/operator.lua" | cut -d: -f1)
hline=$(grep -n '^local function describe' "$work/ops/raising/operator.lua" | cut -d: -f1)
ops=bad_yaml,raising,vector_add

"$TB" run --operator $ops --gpu fake --cases first --dry-run >"$work/dry.out" 2>"$work/dry.err"
rc=$?
check "dry run exits 1 [rc=$rc]" test $rc -eq 1
check "dry run still lists vector_add's cases" grep -q "^vector_add (Point-wise)" "$work/dry.out"

"$TB" run --operator $ops --gpu fake --cases first >"$work/run.out" 2>"$work/run.err"
rc=$?
check "the run exits 1: something failed [rc=$rc]" test $rc -eq 1
check "bad YAML reported with its file and line" grep -q "bad_yaml: failed to load.*$work/ops/bad_yaml/config.yaml:3:" "$work/run.err"
check "raising operator.lua reported with its file and line" \
  grep -q "raising: failed to load.*$work/ops/raising/operator.lua:$hline: attempt to index a nil value" "$work/run.err"
check "its own frames: the helper" grep -qE "^\s+$work/ops/raising/operator.lua:$hline: in function 'describe'" "$work/run.err"
check "its own frames: the main chunk" grep -qE "^\s+$work/ops/raising/operator.lua:$line: in main chunk" "$work/run.err"
check "no tilebench internals in the report" test -z "$(grep -E 'lua/tilebench/|\[C\]|stack traceback' "$work/run.err")"
check "the summary names both" grep -q "2 operators did not load (recorded as failed): bad_yaml, raising" "$work/run.err"
csv=$work/results/fake/csv
check "vector_add ran: its CSV is written" test -s "$csv/vector_add_default.csv"
check "vector_add's cases all ok" test -z "$(awk -F, 'NR==1 {for (i=1;i<=NF;i++) if ($i ~ /^status_/) s[i]=1; next} {for (i in s) if ($i != "ok") print $i}' "$csv/vector_add_default.csv")"
run_dir=$(ls -d "$work"/results/fake/runs/*)
for op in bad_yaml raising; do
  check "$op: a failed journal entry" grep -q "\"operator\":\"$op\".*\"status\":\"failed\"\|\"status\":\"failed\".*\"operator\":\"$op\"" "$run_dir/journal.jsonl"
  check "$op: raw/$op.json records it" grep -q '"failed"' "$run_dir/raw/$op.json"
  check "$op: no CSV (it has no cases to tabulate)" test ! -e "$csv/${op}_default.csv"
done

# Fixed, the run resumed: the two run, their failed entries are replaced
cp "$work/bad_yaml.good" "$work/ops/bad_yaml/config.yaml"
cp "$work/raising.good" "$work/ops/raising/operator.lua"
"$TB" run --resume "$(basename "$run_dir")" >"$work/resume.out" 2>&1
rc=$?
check "resumed after the fix: exits 0 [rc=$rc]" test $rc -eq 0
check "the old load failures no longer count" grep -q "finished: .*; 0 rows slow, wrong, failed or timed out" "$work/resume.out"
for op in bad_yaml raising; do
  check "$op: its CSV now" test -s "$csv/${op}_default.csv"
  check "$op: raw holds its cases, not the load failure" test -z "$(grep -o 'did not load\|failed to load\|operator.lua failed' "$run_dir/raw/$op.json")"
done
if [ $fail -ne 0 ]; then for f in "$work"/*.out "$work"/*.err; do echo "--- $f"; cat "$f"; done; fi
exit $fail
