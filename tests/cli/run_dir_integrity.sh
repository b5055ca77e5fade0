#!/usr/bin/env bash
# A run directory read back is input like any other (issue 13, data integrity), without a GPU
# (tests/fixtures/fake_runner.lua in the workers):
# - a journal cut mid-entry (full disk, kill) at its end or in its middle: `run --resume` starts
#   on a fresh line, re-runs exactly the entries it cannot read and ends with the CSVs of an
#   uninterrupted run; every planned entry is in the journal afterwards;
# - names read back (run.json label and run_id, a journal entry's operator and mode) that are
#   not one path component are refused as --gpu would refuse them: `run --resume` and `merge`
#   write nothing outside results/;
# - run.json stores the resolved work items (format 2): resume plans from them, not from the
#   operator's grid as it is now (a real worker then refuses a case id the grid lost:
#   runner_spec); a format-1 run.json (no items) still resumes and merges.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh" # TB, HOME_DIR, work, fail, check
ops=broken_unwritten,broken_wrong_result
csvs="broken_unwritten_default broken_wrong_result_default"
run() { # results dir, out file, args... -> prints the run dir
  local dir=$1 out=$2; shift 2
  TILEBENCH_RESULTS_DIR="$dir" "$TB" run --operator $ops --gpu fake --quiet "$@" >"$out" 2>&1 ||
    { echo "FAIL run $* (see below)" >&2; cat "$out" >&2; fail=1; }
  sed -n 's/^  results: //p' "$out"
}
id_of() { basename "$1"; }
entries() { grep -vc '"journal"' "$1"; }
readable_keys() { # journal -> sorted keys of its readable entries
  "$TB" script /dev/stdin "$1" <<'EOF'
local journal = require("tilebench.journal")
local _, rows = journal.read(arg[1])
local keys = {}
for _, r in ipairs(rows) do keys[#keys + 1] = journal.key(r) end
table.sort(keys)
print(table.concat(keys, "\n"))
EOF
}

full=$(run "$work/full" "$work/full.out")
planned=$(readable_keys "$full/journal.jsonl")
check "uninterrupted run journals 12 entries" test "$(entries "$full/journal.jsonl")" -eq 12

# ---- a journal cut at its end, then one cut in its middle ---------------------------------------
for where in end middle; do
  d=$(run "$work/$where" "$work/$where.out")
  j=$d/journal.jsonl
  if [ $where = end ]; then
    # the last entry loses its second half and its newline
    last=$(tail -n 1 "$j"); keep=$(( $(wc -c <"$j") - ${#last} / 2 - 1 ))
    truncate -s "$keep" "$j"
    lost=1
  else
    # entry 5 loses its second half and its newline: it glues itself to entry 6
    awk 'NR==6 {printf "%s", substr($0, 1, int(length($0) / 2)); next} {print}' "$j" >"$j.new" && mv "$j.new" "$j"
    lost=2
  fi
  n_before=$(readable_keys "$j" | grep -c .)
  check "$where: the cut loses $lost readable entries" test "$n_before" -eq $((12 - lost))
  TILEBENCH_RESULTS_DIR="$work/$where" "$TB" run --resume "$(id_of "$d")" --quiet >"$work/$where.resume" 2>&1
  rc=$?
  check "$where: resume exits 0 [rc=$rc]" test $rc -eq 0
  check "$where: resume reports the unreadable line" grep -q "unreadable line skipped" "$work/$where.resume"
  # end: the last case's second implementation; middle: entries 5 and 6, both of case 3
  check "$where: resume re-runs one case, nothing else" grep -q "(1 left)" "$work/$where.resume"
  check "$where: every planned entry is in the journal" diff <(echo "$planned") <(readable_keys "$j")
  check "$where: the journal ends on a whole line" test "$(tail -c 1 "$j" | od -An -c | tr -d ' ')" = '\n'
  for f in $csvs; do
    check "$where: $f equals the uninterrupted run's" cmp -s "$work/full/fake/csv/$f.csv" "$work/$where/fake/csv/$f.csv"
  done
done

# ---- names read back from a run's files --------------------------------------------------------
d=$(run "$work/names" "$work/names.out")
id=$(id_of "$d")
cp "$d/run.json" "$work/run.json.orig"
for bad in '../../../escaped' '..' 'a/b'; do
  sed "s#\"label\":\"fake\"#\"label\":\"$bad\"#" "$work/run.json.orig" >"$d/run.json"
  check "run.json label '$bad' is in place" grep -qF "\"label\":\"$bad\"" "$d/run.json"
  out=$(TILEBENCH_RESULTS_DIR="$work/names" "$TB" run --resume "$id" --gpu fake --quiet 2>&1); rc=$?
  check "resume refuses run.json label '$bad' with status 2 [rc=$rc]" test $rc -eq 2
  check "the message names run.json and the label" grep -qF "run.json: label string \"$bad\"" <<<"$out"
done
sed 's#"run_id":"[^"]*"#"run_id":"../x"#' "$work/run.json.orig" >"$d/run.json"
out=$(TILEBENCH_RESULTS_DIR="$work/names" "$TB" run --resume "$id" --gpu fake --quiet 2>&1); rc=$?
check "resume refuses a run.json run_id '../x' [rc=$rc]" test $rc -eq 2
cp "$work/run.json.orig" "$d/run.json"

# journal entries naming operators and modes outside the tree
good=$(sed -n 2p "$d/journal.jsonl")
for field in operator mode; do
  sed -E "s#\"$field\":\"[^\"]*\"#\"$field\":\"../../../escaped_$field\"#" <<<"$good" >>"$d/journal.jsonl"
done
out=$(TILEBENCH_RESULTS_DIR="$work/names" "$TB" run --resume "$id" --quiet 2>&1); rc=$?
check "resume with hostile journal entries exits 0 [rc=$rc]" test $rc -eq 0
check "both hostile entries reported" test "$(grep -c 'entry skipped' <<<"$out")" -eq 2
out=$(TILEBENCH_RESULTS_DIR="$work/names" "$TB" merge "$d" --output merged 2>&1); rc=$?
check "merge with hostile journal entries exits 0 [rc=$rc]" test $rc -eq 0
check "merge reports them" test "$(grep -c 'entry skipped' <<<"$out")" -eq 2
sed 's#"label":"fake"#"label":"../../../escaped"#' "$work/run.json.orig" >"$d/run.json"
out=$(TILEBENCH_RESULTS_DIR="$work/names" "$TB" merge "$d" --output merged2 2>&1); rc=$?
check "merge refuses a run.json label '../../../escaped' [rc=$rc]" test $rc -eq 2
check "merge names the label" grep -qF 'run.json: label string "../../../escaped" is not' <<<"$out"
# ---- run.json: the resolved work items ------------------------------------------------------------
d=$(run "$work/items" "$work/items.out")
cat >"$work/check_items.lua" <<'LUA'
local rec = assert(require("tilebench.rundir").read_run_json(arg[1]))
assert(rec.format == 2 and #rec.items == 6, "format " .. tostring(rec.format) .. ", " .. #(rec.items or {}) .. " items")
local it = rec.items[1]
assert(it.operator == "broken_unwritten" and it.case_index == 1 and it.params.n == 4096 and it.case_id == "n=4096")
assert(#it.impls == 2 and it.flops == 4096 and it.bytes == 4096 * 4 * 2 and it.baseline == "good")
LUA
check "run.json is format 2 with the 6 resolved items" "$TB" script "$work/check_items.lua" "$d"
# resume uses the stored items: an operator whose grid changed since still resumes the cases
# planned (a re-plan would run n=7 instead of n=1048576 and give another CSV)
mkdir -p "$work/ops"
cp -r "$HOME_DIR/tests/fixtures/operators/broken_unwritten" "$HOME_DIR/tests/fixtures/operators/broken_wrong_result" "$work/ops/"
d=$(TILEBENCH_OPERATOR_PATH="$work/ops" run "$work/stored" "$work/stored.out")
last=$(tail -n 1 "$d/journal.jsonl"); truncate -s $(( $(wc -c <"$d/journal.jsonl") - ${#last} - 1 )) "$d/journal.jsonl"
sed -i 's/n: \[4096, 65536, 1048576\]/n: [4096, 65536, 7]/' "$work/ops/broken_wrong_result/config.yaml"
check "the grid was changed" grep -q "n: \[4096, 65536, 7\]" "$work/ops/broken_wrong_result/config.yaml"
TILEBENCH_OPERATOR_PATH="$work/ops" TILEBENCH_RESULTS_DIR="$work/stored" "$TB" run --resume "$(id_of "$d")" --quiet \
  >"$work/stored.resume" 2>&1
rc=$?
check "resume with stored items exits 0 [rc=$rc]" test $rc -eq 0
for f in $csvs; do
  check "stored items: $f equals the uninterrupted run's" cmp -s "$work/full/fake/csv/$f.csv" "$work/stored/fake/csv/$f.csv"
done
# format 1 (before items were stored) is still read: resume and merge re-plan from its args
d=$(run "$work/old" "$work/old.out")
cat >"$work/to_format1.lua" <<'LUA'
local journal = require("tilebench.journal")
local fh = assert(io.open(arg[1], "rb")); local rec = journal.decode(fh:read("a")); fh:close()
rec.items, rec.format, rec.broken, rec.shard = nil, nil, nil, nil
fh = assert(io.open(arg[1], "wb")); fh:write(journal.encode(rec), "\n"); fh:close()
LUA
"$TB" script "$work/to_format1.lua" "$d/run.json"
check "run.json rewritten as format 1" test -z "$(grep -o '"items"\|"format"' "$d/run.json")"
last=$(tail -n 1 "$d/journal.jsonl"); truncate -s $(( $(wc -c <"$d/journal.jsonl") - ${#last} - 1 )) "$d/journal.jsonl"
TILEBENCH_RESULTS_DIR="$work/old" "$TB" run --resume "$(id_of "$d")" --quiet >"$work/old.resume" 2>&1
rc=$?
check "format 1: resume exits 0 [rc=$rc]" test $rc -eq 0
for f in $csvs; do
  check "format 1: $f equals the uninterrupted run's" cmp -s "$work/full/fake/csv/$f.csv" "$work/old/fake/csv/$f.csv"
done
out=$(TILEBENCH_RESULTS_DIR="$work/old" "$TB" merge "$d" --output merged 2>&1); rc=$?
check "format 1: merge exits 0 [rc=$rc]" test $rc -eq 0
check "format 1: the merged run.json is format 2" grep -q '"format":2' "$work/old/fake/runs/merged/run.json"
# an item naming a path outside the tree is refused like a label
d=$(run "$work/hostile" "$work/hostile.out")
sed -i 's#"operator":"broken_unwritten"#"operator":"../../../escaped"#' "$d/run.json"
out=$(TILEBENCH_RESULTS_DIR="$work/hostile" "$TB" run --resume "$(id_of "$d")" --quiet 2>&1); rc=$?
check "resume refuses a run.json item naming '../../../escaped' [rc=$rc]" test $rc -eq 2
check "the message names the item" grep -qF 'run.json: item 1: operator string "../../../escaped" is not' <<<"$out"
escaped=$(find "$work" -name '*escaped*' | head -3)
check "nothing was written outside results/ ($escaped)" test -z "$escaped"
if [ $fail -ne 0 ]; then for f in "$work"/*.resume; do echo "--- $f"; cat "$f"; done; fi
exit $fail
