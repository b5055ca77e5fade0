#!/usr/bin/env bash
# `tilebench merge` without a GPU (tests/fixtures/fake_runner.lua in the workers): a campaign run
# as --shard 1/3, 2/3, 3/3 into one results dir (as Slurm array tasks on a shared file system)
# and merged ends with the CSVs and raw JSON of the same campaign run unsharded; a missing shard
# is a warning and `run --resume` of the merged run fills it in; runs that do not belong
# together are refused with exit status 2 and a message naming them.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh" # TB, HOME_DIR, work, fail, check
expect() { # status, pattern, merge args... (results dir: $work/cluster)
  local want=$1 pat=$2; shift 2
  local out rc
  out=$(TILEBENCH_RESULTS_DIR="$work/cluster" "$TB" merge "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pat" <<<"$out"; then
    echo "FAIL merge $* -> rc=$rc (want $want, /$pat/), output: $out"; fail=1
  else
    echo "ok   merge ${*##*/} -> $rc"
  fi
}
# every column but the times (as campaign_isolation.sh compares after a resume)
strip() { awk -F, 'NR==1 {for (i=1;i<=NF;i++) if ($i !~ /_ms$|^speedup_|^rho_|^elib_/) keep[i]=1}
  {out=""; for (i=1;i<=NF;i++) if (keep[i]) out=out $i ","; print out}' "$1"; }
run() { # results dir, out file, run args... -> prints the run dir
  local dir=$1 out=$2; shift 2
  TILEBENCH_RESULTS_DIR="$dir" "$TB" run --operator $ops --gpu fake --quiet "$@" >"$out" 2>&1 ||
    { echo "FAIL run $* (see below)" >&2; cat "$out" >&2; fail=1; }
  sed -n 's/^  results: //p' "$out"
}
same_outputs() { # csv dir A, csv dir B, run dir A, run dir B [, order]: CSVs and raw JSON agree
  local a=$1 b=$2 ra=$3 rb=$4 order=${5:-same-order} f
  for f in $csvs; do
    check "$f: CSV equals the unsharded run's (non-time columns)" diff <(strip "$a/$f.csv") <(strip "$b/$f.csv")
    check "$f: CSV identical including times (deterministic fake)" cmp -s "$a/$f.csv" "$b/$f.csv"
  done
  check "raw/<op>.json: the unsharded run's entries ($order)" \
    "$TB" script "$work/same_raw.lua" $order "$ra/raw" "$rb/raw" broken_unwritten broken_wrong_result broken_oob_write
}
cat >"$work/same_raw.lua" <<'EOF'
-- same_raw.lua same-order|any-order DIR-A DIR-B OP...: raw/<op>.json of two runs hold the same
-- rows (run_id aside), in the same order or in any
local journal = require("tilebench.journal")
local util = require("tilebench.util")
local function load(p)
  local fh = assert(io.open(p, "rb")); local v = journal.decode(fh:read("a")); fh:close()
  v.run_id = nil
  if arg[1] == "any-order" then
    table.sort(v.rows, function(x, y) return journal.key(x) < journal.key(y) end)
  end
  return util.json_encode(v, { invalid_numbers = "null" })
end
for i = 4, #arg do
  local a, b = load(arg[2] .. "/" .. arg[i] .. ".json"), load(arg[3] .. "/" .. arg[i] .. ".json")
  if a ~= b then io.stderr:write("raw JSON of ", arg[i], " differs\n"); os.exit(1) end
end
EOF

ops=broken_unwritten,broken_wrong_result,broken_oob_write
csvs="broken_unwritten_default broken_wrong_result_default broken_oob_write_default"

# ---- the same campaign unsharded and in three shards ---------------------------------------------
full=$(run "$work/full" "$work/full.out")
s1=$(run "$work/cluster" "$work/s1.out" --shard 1/3)
s2=$(run "$work/cluster" "$work/s2.out" --shard 2/3)
s3=$(run "$work/cluster" "$work/s3.out" --shard 3/3)
check "unsharded journal holds 18 entries" test "$(grep -vc '"journal"' "$full/journal.jsonl")" -eq 18
check "shards hold 18 entries together" \
  test $(( $(grep -vc '"journal"' "$s1/journal.jsonl") + $(grep -vc '"journal"' "$s2/journal.jsonl") + $(grep -vc '"journal"' "$s3/journal.jsonl") )) -eq 18
# before the merge, the shared CSVs are the last shard's (so the comparison below can fail)
differ=0
for f in $csvs; do cmp -s "$work/full/fake/csv/$f.csv" "$work/cluster/fake/csv/$f.csv" || differ=1; done
check "before merging, the shards' CSVs are not the whole campaign's" test $differ -eq 1

TILEBENCH_RESULTS_DIR="$work/cluster" "$TB" merge "$s1" "$s2" "$s3" --output merged \
  >"$work/merge.out" 2>"$work/merge.err"
rc=$?
check "merge of 3 shards exits 0 [rc=$rc]" test $rc -eq 0
check "merge prints no warning" test ! -s "$work/merge.err"
check "merge says what it merged" grep -q "^merged 3 runs (shards 1/3, 2/3, 3/3) of one campaign: 18 entries" "$work/merge.out"
m=$work/cluster/fake/runs/merged
check "merged journal holds 18 entries + header" test "$(wc -l <"$m/journal.jsonl")" -eq 19
check "merged journal: every entry once" test "$(grep -v '"journal"' "$m/journal.jsonl" | \
  sed -E 's/.*"operator":"([^"]*)".*/\1/' | wc -l)" -eq 18
cat >"$work/prov.lua" <<'EOF'
-- prov.lua MERGED-DIR RUN-DIR...: the merged provenance names each run, its shard and its own
-- provenance, in the order given
local journal = require("tilebench.journal")
local function load(p) local fh = assert(io.open(p, "rb")); local v = journal.decode(fh:read("a")); fh:close(); return v end
local m = load(arg[1] .. "/provenance.json")
assert(#m.merged_from == #arg - 1, "merged_from has " .. #m.merged_from .. " runs")
assert(m.shard_count == #arg - 1 and m.missing_shards == nil, "shard count / missing shards")
for i = 2, #arg do
  local own, rec = load(arg[i] .. "/provenance.json"), m.merged_from[i - 1]
  assert(rec.dir == arg[i], "dir " .. tostring(rec.dir))
  assert(rec.shard == string.format("%d/%d", i - 1, #arg - 1), "shard " .. tostring(rec.shard))
  assert(rec.run_id == own.run_id and rec.provenance.run_id == own.run_id, "run id")
  assert(rec.provenance.device.name == "Fake GPU" and rec.provenance.shard == own.shard, "own provenance")
end
EOF
check "merged provenance names the three runs, their shards and provenance" \
  "$TB" script "$work/prov.lua" "$m" "$s1" "$s2" "$s3"
check "merged run.json keeps the campaign's args without --shard" \
  grep -q '"args":\["--operator","broken_unwritten,broken_wrong_result,broken_oob_write","--gpu","fake","--quiet"\]' "$m/run.json"
same_outputs "$work/full/fake/csv" "$work/cluster/fake/csv" "$full" "$m"

# ---- a single run: allowed, rewrites the outputs --------------------------------------------------
rm -f "$work/full/fake/csv/"*.csv
TILEBENCH_RESULTS_DIR="$work/full" "$TB" merge "$full" --output again >"$work/single.out" 2>&1
rc=$?
check "merge of one run exits 0 [rc=$rc]" test $rc -eq 0
same_outputs "$work/full/fake/csv" "$work/cluster/fake/csv" "$work/full/fake/runs/again" "$m"

# ---- a missing shard: warned; resuming the merged run runs its cases --------------------------------
TILEBENCH_RESULTS_DIR="$work/cluster" "$TB" merge "$s1" "$s3" --output partial >"$work/partial.out" 2>"$work/partial.err"
rc=$?
check "merge without shard 2/3 exits 0 [rc=$rc]" test $rc -eq 0
check "warns that shard 2/3 is missing" grep -q "warning: shard 2/3 missing.*tilebench run --resume partial --gpu fake" "$work/partial.err"
p=$work/cluster/fake/runs/partial
check "partial merge holds 12 entries" test "$(grep -vc '"journal"' "$p/journal.jsonl")" -eq 12
TILEBENCH_RESULTS_DIR="$work/cluster" "$TB" run --resume partial --quiet >"$work/fill.out" 2>&1
rc=$?
check "run --resume of the partial merge exits 0 [rc=$rc]" test $rc -eq 0
check "it ran the missing shard's 3 cases" grep -q "^run partial (resumed): .*(3 left)" "$work/fill.out"
# (the resumed entries are journalled after the merged ones)
same_outputs "$work/full/fake/csv" "$work/cluster/fake/csv" "$full" "$p" any-order

# ---- refusals ------------------------------------------------------------------------------------
other=$(run "$work/cluster" "$work/other.out" --shard 2/3 --cases first)
again=$(run "$work/cluster" "$work/again.out" --shard 1/3)
four=$(run "$work/cluster" "$work/four.out" --shard 2/4)
TILEBENCH_RESULTS_DIR="$work/cluster" "$TB" run --operator $ops --gpu other --quiet --shard 2/3 >"$work/label.out" 2>&1
relabelled=$(sed -n 's/^  results: //p' "$work/label.out")
expect 2 "not shards of one campaign: they differ in cases \(null vs \"first\"\)" "$s1" "$other" "$s3"
expect 2 "$s1 and $other are not shards of one campaign" "$s1" "$other" "$s3"
expect 2 "shard 1/3 given twice: $s1 and $again" "$s1" "$again" "$s2"
expect 2 "they differ in shard count \(3 vs 4\)" "$s1" "$four"
expect 2 "no run directory '$work/nope'" "$s1" "$work/nope"
expect 2 "option --gpu must be one path component of \[A-Za-z0-9._\+-\], got '\.\./x'" "$s1" "$s2" "$s3" --gpu ../x
expect 2 "different GPU labels .*; give --gpu LABEL" "$s1" "$relabelled" "$s3"
expect 0 "^merged 3 runs" "$s1" "$relabelled" "$s3" --gpu fake --output relabelled
expect 2 "option --output: .*/fake/runs/merged already exists" "$s1" "$s2" "$s3" --output merged
expect 2 "option --output: '\.\./x' is not a run id" "$s1" --output ../x
expect 2 "run directory '$s1' given twice" "$s1" "$s1"
expect 2 "run.json is missing" "$work"
# a run that claims to be shard 3/3 but holds shard 2/3's cases: entries in two runs
mkdir -p "$work/forged" && cp -r "$s2" "$work/forged/s3" && cp -r "$s3" "$work/forged/short"
sed -i 's#"shard":"2\\/3"#"shard":"3\\/3"#' "$work/forged/s3/provenance.json"
expect 2 "6 journal entries are in more than one run, e\.g\. .* in both $s2 and $work/forged/s3" "$s1" "$s2" "$work/forged/s3"
# a shard cut short (killed, not resumed) is merged with a warning naming it and its resume
head -n 4 "$s3/journal.jsonl" >"$work/forged/short/journal.jsonl"
expect 0 "warning: $work/forged/short \(shard 3/3\) lacks 3 of its 6 entries .*tilebench run --resume ${s3##*/} --gpu fake" \
  "$s1" "$s2" "$work/forged/short" --output short
# --complete (the Slurm merge job): a missing or incomplete shard is refused, naming it
expect 2 "merge: --complete: shard 2/3 missing" "$s1" "$s3" --complete
expect 2 "merge: --complete: $work/forged/short \(shard 3/3\) lacks 3 of its 6 entries .*tilebench run --resume ${s3##*/} --gpu fake" \
  "$s1" "$s2" "$work/forged/short" --complete
expect 2 "give the run directories to merge"
check "refused merges wrote no run" test "$(ls "$work/cluster/fake/runs" | wc -l)" -eq 10
if [ $fail -ne 0 ]; then
  echo "--- merge.out"; cat "$work/merge.out"; echo "--- merge.err"; cat "$work/merge.err"
fi
exit $fail
