#!/usr/bin/env bash
# `tilebench slurm` through a real one-node Slurm cluster (scripts/slurm_local.sh: Debian's
# slurmctld, slurmd and munge on localhost), no GPU: the tasks run campaigns of the fixture
# operators on tests/fixtures/fake_runner.lua. A 3-task array (each `tilebench run --shard K/3`
# into its own run) plus the dependent merge job; task 2 is killed part-way (SIGKILL), so the
# merge refuses its incomplete shard; submitting the same command again runs task 2 alone, which
# resumes its run, and the merge then gives the CSVs of one unsharded run. Every wait is bounded.
# Skips (77) without Slurm, without root, or unless TB_SLURM_TEST=1 (it starts daemons: .ci/run
# and `make test-slurm` ask for it).
set -u
[ "${TB_SLURM_TEST:-}" = 1 ] || { echo "skip: set TB_SLURM_TEST=1 to start a Slurm cluster"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: needs root (slurmd)"; exit 77; }
for b in slurmctld slurmd sbatch squeue scancel munged; do
  command -v $b >/dev/null || { echo "skip: $b not installed"; exit 77; }
done
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh" # TB, HOME_DIR, work, fail, check
cluster=$work/cluster
cleanup() { "$HOME_DIR/scripts/slurm_local.sh" stop "$cluster" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
timeout 90 "$HOME_DIR/scripts/slurm_local.sh" start "$cluster" 1 || { echo "FAIL the one-node cluster did not start"; exit 1; }
export SLURM_CONF=$cluster/slurm.conf
export TILEBENCH_CACHE_DIR=$work/cache
ops=broken_unwritten,broken_wrong_result,broken_oob_write # 9 items, 18 entries
csvs="broken_unwritten_default broken_wrong_result_default broken_oob_write_default"
res=$work/res
jobdir=$res/fake/slurm/ci

wait_jobs() { # job ids (comma-separated): until squeue lists none of them, at most $2 s
  local i
  for ((i = 0; i < $2 * 2; i++)); do
    [ -z "$(timeout 10 squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  echo "timeout: jobs $1 still queued after $2 s"; timeout 10 squeue; return 1
}
ids_of() { sed -n 's/^follow: *squeue -j \([0-9,]*\).*/\1/p' "$1"; }

# ---- the reference: one unsharded run ------------------------------------------------------------
TILEBENCH_RESULTS_DIR=$work/ref "$TB" run --operator $ops --gpu fake --quiet >"$work/ref.out" 2>&1
check "unsharded run exits 0" test $? -eq 0

# ---- --dry-run: the scripts, nothing submitted -----------------------------------------------------
TILEBENCH_RESULTS_DIR=$res "$TB" slurm --operator $ops --gpu fake --shards 3 --name ci --gres gpu:1 --time 10 \
  --dry-run >"$work/dry.out" 2>&1
check "--dry-run exits 0" test $? -eq 0
check "--dry-run prints the array script" grep -q "^#SBATCH --array=1-3" "$work/dry.out"
check "--dry-run prints the merge job's dependency" grep -q "dependency=afterany:" "$work/dry.out"
check "--dry-run submits nothing" test -z "$(timeout 10 squeue -h)"
check "--dry-run writes nothing" test ! -e "$jobdir"

# ---- submit; kill task 2 part-way ---------------------------------------------------------------------
TILEBENCH_RESULTS_DIR=$res TB_FAKE_SLEEP_TASK=2:1.5 timeout 60 "$TB" slurm --operator $ops --gpu fake --shards 3 \
  --name ci --gres gpu:1 --time 10 >"$work/sub1.out" 2>&1
check "tilebench slurm submits (exit 0)" test $? -eq 0
check "prints the job ids and the squeue/sacct commands" grep -q "^afterwards: sacct -j" "$work/sub1.out"
ids1=$(ids_of "$work/sub1.out")
array1=${ids1%%,*}
j2=$res/fake/runs/slurm-ci-s2of3/journal.jsonl
for _ in $(seq 1 120); do # task 2 has journalled an item (of its 3): kill it
  [ -f "$j2" ] && [ "$(wc -l <"$j2")" -ge 3 ] && break
  sleep 0.25
done
timeout 10 scancel --signal=KILL --full "${array1}_2"
check "the first submission ends (array and merge job)" wait_jobs "$ids1" 120
lines=$(wc -l <"$j2" 2>/dev/null || echo 0)
check "task 2 was killed part-way ($lines journal lines of 7)" test "$lines" -ge 3 -a "$lines" -lt 7
merge1=$(ls "$jobdir"/logs/merge-*.out 2>/dev/null | head -1)
check "the merge job ran after the killed task (afterany)" test -n "$merge1"
check "the merge refused the incomplete shard, naming it and the way on" \
  grep -q "slurm-ci-s2of3 (shard 2/3) lacks .* submit the same command again" "${merge1:-/dev/null}"

# ---- submit again: only task 2 runs, resuming its run; then the merge ----------------------------
TILEBENCH_RESULTS_DIR=$res TB_FAKE_SLEEP_TASK=2:0.2 timeout 60 "$TB" slurm --operator $ops --gpu fake --shards 3 \
  --name ci --gres gpu:1 --time 10 >"$work/sub2.out" 2>&1
check "re-submission exits 0" test $? -eq 0
check "re-submission runs shard 2 alone (1 and 3 complete)" grep -q "1 shard to run (1,3 complete)" "$work/sub2.out"
check "...as array task 2" grep -q "^submitted array job [0-9]* (tasks 2 of 3)" "$work/sub2.out"
ids2=$(ids_of "$work/sub2.out")
check "the second submission ends" wait_jobs "$ids2" 120
check "task 2 resumed its own run" grep -q "(resumed)" $(ls -t "$jobdir"/logs/task-2-*.out | head -1)
check "tasks 1 and 3 ran once each, task 2 twice" test "$(ls "$jobdir"/logs/task-1-*.out | wc -l)" -eq 1 -a \
  "$(ls "$jobdir"/logs/task-3-*.out | wc -l)" -eq 1 -a "$(ls "$jobdir"/logs/task-2-*.out | wc -l)" -eq 2
merged=$(ls -d "$res"/fake/runs/slurm-ci-merged-* 2>/dev/null | head -1)
check "the merge job wrote the merged run" test -n "$merged" -a -s "${merged:-/nonexistent}/journal.jsonl"
check "merged journal: 18 entries" test "$(grep -vc '"journal"' "${merged:-/nonexistent}/journal.jsonl")" -eq 18
for k in 1 2 3; do
  jk=$res/fake/runs/slurm-ci-s${k}of3/journal.jsonl
  check "shard $k: each entry once" test "$(grep -v '"journal"' "$jk" | sed 's/"ms":[^,]*,//; s/"samples":[^]]*],//' | sort | uniq -d | wc -l)" -eq 0
done
for f in $csvs; do
  check "$f: merged CSV identical to the unsharded run's" diff "$work/ref/fake/csv/$f.csv" "$res/fake/csv/$f.csv"
done

# ---- everything complete: a third submission only merges -----------------------------------------
TILEBENCH_RESULTS_DIR=$res timeout 60 "$TB" slurm --operator $ops --gpu fake --shards 3 --name ci --gres gpu:1 \
  >"$work/sub3.out" 2>&1
check "all complete: submits the merge alone" grep -q "^every shard is complete: submitted merge job" "$work/sub3.out"
check "it ends" wait_jobs "$(ids_of "$work/sub3.out")" 60
# ---- the same name for another campaign is refused ----------------------------------------------
TILEBENCH_RESULTS_DIR=$res "$TB" slurm --operator broken_unwritten --gpu fake --shards 3 --name ci --dry-run \
  >"$work/other.out" 2>&1
check "another campaign under the same name is refused (exit 2)" test $? -eq 2
check "...saying why" grep -q "was started with" "$work/other.out"

if [ $fail -ne 0 ]; then
  for f in sub1.out sub2.out sub3.out; do echo "--- $f"; cat "$work/$f"; done
  for f in "$jobdir"/logs/*; do echo "--- $f"; tail -n 20 "$f"; done
  timeout 10 squeue
fi
exit $fail
