#!/usr/bin/env bash
# `run --devices`: one worker pool per GPU, fed from one queue, without a GPU: the workers run
# tests/fixtures/fake_runner.lua, which takes its device from `tilebench worker --device N` and
# can lose one (TB_FAKE_LOSE_DEVICE: its worker dies with SIGKILL and no worker starts there any
# more) or name one another model (TB_FAKE_DEVICE_NAMES). Checks that --devices 0 gives a plain
# run's CSVs, that a lost GPU costs only its in-flight item, that the journal holds every entry
# once, that a killed multi-device run resumes to the plain run's CSVs, and the refusals.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh" # TB, HOME_DIR, work, fail, check
ops=broken_unwritten,broken_wrong_result,broken_oob_write # 9 items, 18 entries
csvs="broken_unwritten_default broken_wrong_result_default broken_oob_write_default"
# journal entries as sorted "key status" lines
entries() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "journal" not in r:
        print("%s|%s|%s|%s|%s %s" % (r["operator"], r.get("mode"), r["dtype"], r.get("case_index"), r.get("impl"), r["status"]))
' "$1" | sort; }
# a CSV without its device_<impl> columns
strip_dev() { awk -F, 'NR==1 {for (i=1;i<=NF;i++) if ($i !~ /^device_/) keep[i]=1}
  {out=""; for (i=1;i<=NF;i++) if (keep[i]) out=out $i ","; print out}' "$1"; }
run_dir() { ls -d "$1"/fake/runs/* | head -1; }

# ---- the plain run, and --devices 0 --------------------------------------------------------------
TILEBENCH_RESULTS_DIR="$work/plain" "$TB" run --operator $ops --gpu fake --quiet >"$work/plain.out" 2>&1
check "plain run exits 0" test $? -eq 0
TILEBENCH_RESULTS_DIR="$work/one" "$TB" run --operator $ops --gpu fake --quiet --devices 0 >"$work/one.out" 2>&1
rc=$?
check "--devices 0 exits 0 [rc=$rc]" test $rc -eq 0
check "--devices 0 says which device" grep -q "isolated workers on devices 0)" "$work/one.out"
for f in $csvs; do
  check "$f: --devices 0 CSV identical to the plain run's" cmp -s "$work/plain/fake/csv/$f.csv" "$work/one/fake/csv/$f.csv"
done
check "--devices 0: the journal's entries and statuses are the plain run's" \
  diff <(entries "$(run_dir "$work/plain")/journal.jsonl") <(entries "$(run_dir "$work/one")/journal.jsonl")
check "plain run has 18 entries" test "$(entries "$(run_dir "$work/plain")/journal.jsonl" | wc -l)" -eq 18

# ---- three devices, device 1 lost after its first item -----------------------------------------
TILEBENCH_RESULTS_DIR="$work/three" TB_FAKE_SLEEP=0.3 TB_FAKE_LOSE_DEVICE="1:$work/lost" \
  "$TB" run --operator $ops --gpu fake --quiet --devices 0,1,2 >"$work/three.out" 2>"$work/three.err"
rc=$?
check "three devices, one lost: exits 0 (statuses recorded) [rc=$rc]" test $rc -eq 0
check "device 1 was lost" test -e "$work/lost"
d=$(run_dir "$work/three")
check "journal: 18 entries, each once" test "$(entries "$d/journal.jsonl" | cut -d' ' -f1 | sort -u | wc -l)" -eq 18 -a \
  "$(grep -vc '"journal"' "$d/journal.jsonl")" -eq 18
lost_rows=$(grep -c '"reason":"device 1 lost' "$d/journal.jsonl")
check "the lost GPU's in-flight item: both implementations failed, reason names device 1 ($lost_rows rows)" \
  test "$lost_rows" -eq 2 -a "$(grep '"reason":"device 1 lost' "$d/journal.jsonl" | grep -c '"status":"failed"')" -eq 2
check "only the lost item's rows are on device 1" \
  test "$(grep -c '"device":1[,}]' "$d/journal.jsonl")" -eq 2
# every other entry has the plain run's status
diff <(entries "$(run_dir "$work/plain")/journal.jsonl") <(entries "$d/journal.jsonl") | grep '^>' >"$work/diff3"
check "every other entry has the plain run's status ($(wc -l <"$work/diff3") differ)" test "$(wc -l <"$work/diff3")" -eq 2
check "the other GPUs took every other item (devices 0 and 2 both in the journal)" \
  test "$(grep -c '"device":0[,}]' "$d/journal.jsonl")" -gt 0 -a "$(grep -c '"device":2[,}]' "$d/journal.jsonl")" -gt 0
check "CSV has device columns" grep -q "device_good,device_broken" "$work/three/fake/csv/broken_oob_write_default.csv"
check "provenance lists the three devices" \
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["devices"]; sys.exit([x["ordinal"] for x in d] != [0, 1, 2])' "$d/provenance.json"
check "the loss is said on the run's output" grep -q "device 1" "$work/three.out"

# ---- a killed multi-device run resumes to the plain run's CSVs ----------------------------------
TILEBENCH_RESULTS_DIR="$work/part" TB_FAKE_SLEEP=0.6 "$TB" run --operator $ops --gpu fake --quiet --devices 0,1 \
  >"$work/part.out" 2>&1 &
pid=$!
kill_partway "$work/part" 5 150 # sets j, lines
check "killed part-way ($lines journal lines of 19)" test "$lines" -ge 3 -a "$lines" -lt 19
id=$(sed -n 's/^run \([^ :]*\).*/\1/p' "$work/part.out" | head -1)
TILEBENCH_RESULTS_DIR="$work/part" "$TB" run --resume "$id" --quiet --devices 1,0 >"$work/resume.out" 2>&1
rc=$?
check "resume on devices 1,0 exits 0 [rc=$rc]" test $rc -eq 0
check "journal: 18 entries, each once, after resume" \
  test "$(entries "$j" | cut -d' ' -f1 | sort -u | wc -l)" -eq 18 -a "$(grep -vc '"journal"' "$j")" -eq 18
for f in $csvs; do
  check "$f: resumed multi-device CSV equals the plain run's but for device_*" \
    diff <(strip_dev "$work/plain/fake/csv/$f.csv") <(strip_dev "$work/part/fake/csv/$f.csv")
done

# ---- a worker stopped from outside (SIGTERM, as Slurm signals every process of a job it ends) ----
for how in plain devices; do
  extra=""; [ $how = devices ] && extra="--devices 0,1"
  TILEBENCH_RESULTS_DIR="$work/term-$how" TB_FAKE_SLEEP=1 "$TB" run --operator $ops --gpu fake --quiet $extra \
    >"$work/term-$how.out" 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do
    j=$(ls "$work"/term-$how/fake/runs/*/journal.jsonl 2>/dev/null | head -1)
    [ -n "$j" ] && [ "$(wc -l <"$j")" -ge 3 ] && break
    sleep 0.1
  done
  sleep 0.3 # the next item is in flight
  pkill -TERM -P $pid -f "tilebench worker|/tilebench worker" 2>/dev/null || kill -TERM $(pgrep -P $pid) 2>/dev/null
  wait $pid
  rc=$?
  check "$how: a worker ended by SIGTERM from outside stops the run as interrupted (130) [rc=$rc]" test $rc -eq 130
  check "$how: no row blames the item for it" test "$(grep -c 'SIGTERM' "$j")" -eq 0
  check "$how: says so" grep -q "stopped by SIGTERM from outside" "$work/term-$how.out"
  id=$(sed -n 's/^run \([^ :]*\).*/\1/p' "$work/term-$how.out" | head -1)
  TILEBENCH_RESULTS_DIR="$work/term-$how" "$TB" run --resume "$id" --quiet >>"$work/term-$how.out" 2>&1
  check "$how: resumed [rc=$?]" test $? -eq 0
  for f in $csvs; do
    check "$how: $f after resume equals the plain run's but for device_*" \
      diff <(strip_dev "$work/plain/fake/csv/$f.csv") <(strip_dev "$work/term-$how/fake/csv/$f.csv")
  done
done

# ---- every device lost: the run stops, resumable -------------------------------------------------
TILEBENCH_RESULTS_DIR="$work/gone" TB_FAKE_LOSE_DEVICE="3:$work/lost3" "$TB" run --operator broken_unwritten \
  --gpu fake --quiet --devices 3 >"$work/gone.out" 2>&1
rc=$?
check "the only device lost: exit 1 [rc=$rc]" test $rc -eq 1
check "says every device was lost and how to resume" \
  grep -q "resume with: tilebench run --resume" "$work/gone.out"
check "its in-flight item journalled as failed" grep -q '"reason":"device 3 lost' "$(run_dir "$work/gone")/journal.jsonl"

# ---- refusals and the campaign field --------------------------------------------------------------
TILEBENCH_RESULTS_DIR="$work/mixed" TB_FAKE_DEVICE_NAMES="1=Other GPU" "$TB" run --operator broken_unwritten \
  --gpu fake --quiet --devices 0,1 >"$work/mixed.out" 2>&1
rc=$?
check "mixed GPU models refused with status 2 [rc=$rc]" test $rc -eq 2
check "the refusal names both models and the one-label-per-model way" \
  grep -q "devices 0 (Fake GPU) and 1 (Other GPU) are different GPU models.*one label per model" "$work/mixed.out"
"$TB" run --operator broken_unwritten --devices 0,0 >"$work/dup.out" 2>&1
check "--devices 0,0 is a usage error" test $? -eq 2
"$TB" run --operator broken_unwritten --devices 0,1 --device 1 >"$work/both.out" 2>&1
check "--devices with --device is a usage error" test $? -eq 2
cat >"$work/c.lua" <<'EOF'
return { name = "two", operators = { "broken_unwritten" }, devices = { 0, 1 } }
EOF
TILEBENCH_RESULTS_DIR="$work/camp" "$TB" run "$work/c.lua" --gpu fake --quiet >"$work/camp.out" 2>&1
check "the campaign's devices field runs on its devices" grep -q "isolated workers on devices 0,1)" "$work/camp.out"
cat >"$work/bad.lua" <<'EOF'
return { operators = { "broken_unwritten" }, devices = { 0, -1 } }
EOF
"$TB" run "$work/bad.lua" --gpu fake >"$work/bad.out" 2>&1
rc=$?
check "a bad devices field is refused [rc=$rc]" test $rc -eq 2
check "naming the field" grep -q "field 'devices'" "$work/bad.out"
mkdir -p "$work/ids/fake/runs/mine" # left by a run killed before it planned: taken over
TILEBENCH_RESULTS_DIR="$work/ids" "$TB" run --operator broken_unwritten --gpu fake --quiet --run-id mine >/dev/null 2>&1
check "--run-id names the run directory" test -s "$work/ids/fake/runs/mine/journal.jsonl"
TILEBENCH_RESULTS_DIR="$work/ids" "$TB" run --operator broken_unwritten --gpu fake --quiet --run-id mine >"$work/taken.out" 2>&1
check "--run-id of an existing run is refused" test $? -eq 2
check "...pointing at --resume" grep -q "continue it with: tilebench run --resume mine" "$work/taken.out"

if [ $fail -ne 0 ]; then
  for f in three.out three.err resume.out term-plain.out term-devices.out gone.out mixed.out camp.out bad.out; do echo "--- $f"; cat "$work/$f"; done
fi
exit $fail
