#!/usr/bin/env bash
# `tilebench slurm --dry-run` without Slurm: the scripts it would submit (valid bash, one shard
# per array task, the merge after every task), which shards a re-submission still runs (a shard
# run as a task runs it, complete or cut short), and its usage errors. tests/slurm/array.sh runs
# the scripts through a real cluster.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh" # TB, HOME_DIR, work, fail, check
export TILEBENCH_RESULTS_DIR=$work/res
ops=broken_unwritten,broken_wrong_result,broken_oob_write # 9 items
dry() { "$TB" slurm --operator $ops --gpu fake --shards 3 --name x --gres none "$@" --dry-run; }

dry >"$work/dry.out" 2>&1
check "--dry-run exits 0" test $? -eq 0
check "all three shards to run" grep -q "^campaign x: 9 work items in 3 shards on fake; 3 shards to run$" "$work/dry.out"
awk '/^--- .*array.sbatch$/ {on=1; next} /^--- / {on=0} on' "$work/dry.out" >"$work/array.sh"
awk '/^--- .*merge.sbatch$/ {on=1; next} /^--- / {on=0} on' "$work/dry.out" >"$work/merge.sh"
check "the array script is valid bash" bash -n "$work/array.sh"
check "the merge script is valid bash" bash -n "$work/merge.sh"
check "one task per shard" grep -q "^#SBATCH --array=1-3$" "$work/array.sh"
check "--gres none asks for no GPU" test "$(grep -c gres "$work/array.sh")" -eq 0
check "each task runs its shard into its own run" \
  grep -q "run --operator $ops --gpu fake --shard \"\$k/3\" --run-id \"\$id\"" "$work/array.sh"
check "...or resumes it" grep -q 'run --resume "$id" --gpu fake' "$work/array.sh"
check "the tasks get this shell's TILEBENCH_RUNNER" grep -q "^export TILEBENCH_RUNNER=tests.fixtures.fake_runner$" "$work/array.sh"
check "the merge refuses incomplete shards" grep -q "merge --complete --gpu fake" "$work/merge.sh"
check "the merge waits for every task (afterany)" grep -q "dependency=afterany:<array job id>" "$work/dry.out"
check "nothing written" test ! -e "$work/res"

# a task's run of shard 1 (complete) and of shard 3 cut short: a re-submission runs 2 and 3
"$TB" run --operator $ops --gpu fake --quiet --shard 1/3 --run-id slurm-x-s1of3 >/dev/null 2>&1
"$TB" run --operator $ops --gpu fake --quiet --shard 3/3 --run-id slurm-x-s3of3 >/dev/null 2>&1
j=$work/res/fake/runs/slurm-x-s3of3/journal.jsonl
head -n 3 "$j" >"$j.cut" && mv "$j.cut" "$j"
dry >"$work/again.out" 2>&1
check "re-submission: shards 2 and 3 to run, 1 complete" grep -q "2 shards to run (1 complete)$" "$work/again.out"
check "...as tasks 2 and 3" grep -q "^#SBATCH --array=2-3$" "$work/again.out"

# usage errors
"$TB" slurm --operator $ops --shards 3 --dry-run >"$work/e1.out" 2>&1
check "no --gpu: exit 2" test $? -eq 2
"$TB" slurm --operator $ops --gpu fake --shards 10 --dry-run >"$work/e2.out" 2>&1
check "more shards than items: exit 2" test $? -eq 2
check "...saying how many at most" grep -q "give --shards 9 or fewer" "$work/e2.out"
"$TB" slurm --operator broken_unwritten --gpu fake --shards 3 --name x --dry-run >"$work/e3.out" 2>&1
check "another campaign under the name of existing runs: exit 2" test $? -eq 2
check "...naming the run and how it was started" grep -q "slurm-x-s1of3 was started with" "$work/e3.out"
"$TB" slurm --operator nope --gpu fake --shards 2 --dry-run >"$work/e4.out" 2>&1
check "a campaign that does not plan fails at submission (exit 2)" test $? -eq 2
if [ $fail -ne 0 ]; then for f in dry.out again.out e1.out e2.out e3.out e4.out; do echo "--- $f"; cat "$work/$f"; done; fi
exit $fail
