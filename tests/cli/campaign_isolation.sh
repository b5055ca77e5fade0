#!/usr/bin/env bash
# Campaign machinery without a GPU: the worker processes run tests/fixtures/fake_runner.lua,
# which crashes (a real SIGSEGV), hangs (a real endless loop), reports a sticky fault or wrong
# results exactly where the broken fixtures would. Checks that each case ends with its status,
# the others complete, and that a run killed with SIGKILL and resumed ends with the CSVs of an
# uninterrupted run.
set -u
. "${TILEBENCH_HOME:?}/tests/fixtures/fake_run_prologue.sh" # TB, HOME_DIR, work, fail, check
status_of() { # csv, case n, impl -> status column
  awk -F, -v n="n=$2" -v impl="status_$3" 'NR==1 {for (i=1;i<=NF;i++) col[$i]=i; next}
    $1==n {print $col[impl]}' "$1"
}

# ---- isolation ------------------------------------------------------------------------------
ops=broken_oob_write,broken_endless_loop,broken_unwritten,broken_wrong_result
TILEBENCH_RESULTS_DIR="$work/iso" "$TB" run --operator $ops --gpu fake --case-timeout 1 --quiet \
  >"$work/iso.out" 2>"$work/iso.err"
rc=$?
check "isolation run exits 0 (statuses recorded) [rc=$rc]" test $rc -eq 0
csv=$work/iso/fake/csv
for n in 4096 65536 1048576; do
  check "oob n=$n broken failed" test "$(status_of $csv/broken_oob_write_default.csv $n broken)" = failed
  check "oob n=$n good ok" test "$(status_of $csv/broken_oob_write_default.csv $n good)" = ok
  check "loop n=$n broken timeout" test "$(status_of $csv/broken_endless_loop_default.csv $n broken)" = timeout
  check "loop n=$n good ok" test "$(status_of $csv/broken_endless_loop_default.csv $n good)" = ok
  check "unwritten n=$n broken wrong" test "$(status_of $csv/broken_unwritten_default.csv $n broken)" = wrong
  check "wrong n=$n broken wrong" test "$(status_of $csv/broken_wrong_result_default.csv $n broken)" = wrong
done
check "SIGSEGV named in the reason" grep -q "worker killed by SIGSEGV; last stderr: fake_runner: segfaulting" \
  $csv/broken_oob_write_default.csv
run_dir=$(ls -d "$work"/iso/fake/runs/*)
check "journal holds 24 rows + header" test "$(wc -l <"$run_dir/journal.jsonl")" -eq 25
check "raw JSON per operator" test -s "$run_dir/raw/broken_oob_write.json"
check "the fault's class crossed the worker pipe into the journal" \
  grep -q '"error_class":"fault"' "$run_dir/journal.jsonl"
check "provenance names the device" grep -q '"Fake GPU"' "$run_dir/provenance.json"
TILEBENCH_RESULTS_DIR="$work/gate" "$TB" run --operator broken_wrong_result --gpu fake --quiet --gate \
  --cases first >/dev/null 2>&1
rc=$?
check "--gate exits 3 on a wrong case [rc=$rc]" test $rc -eq 3

# ---- SIGKILL part-way, --resume, compare with an uninterrupted run -----------------------------
ops=broken_unwritten,broken_wrong_result,broken_oob_write
TILEBENCH_RESULTS_DIR="$work/full" TB_FAKE_SLEEP=0.05 "$TB" run --operator $ops --gpu fake --quiet \
  >"$work/full.out" 2>&1 || { echo "FAIL uninterrupted run"; fail=1; }
TILEBENCH_RESULTS_DIR="$work/part" TB_FAKE_SLEEP=0.7 TB_FAKE_MARK=$$ "$TB" run --operator $ops --gpu fake --quiet \
  >"$work/part.out" 2>&1 &
pid=$!
kill_partway "$work/part" 5 100 # sets j, lines
check "killed part-way ($lines journal lines of 19)" test "$lines" -ge 3 -a "$lines" -lt 19
sleep 0.3
left=$(grep -l "TB_FAKE_MARK=$$" /proc/[0-9]*/environ 2>/dev/null | wc -l)
check "no worker outlives its killed parent ($left left)" test "$left" -eq 0
id=$(sed -n 's/^run \([^ :]*\).*/\1/p' "$work/part.out" | head -1)
TILEBENCH_RESULTS_DIR="$work/part" "$TB" run --resume "$id" --quiet >"$work/resume.out" 2>&1
rc=$?
check "resume exits 0 [rc=$rc]" test $rc -eq 0
check "resume says resumed" grep -q "(resumed)" "$work/resume.out"
check "journal complete after resume" test "$(grep -vc '"journal"' "$j")" -eq 18
for f in broken_unwritten_default broken_wrong_result_default broken_oob_write_default; do
  # every column but the times (the fake times are deterministic, but real ones are not)
  strip() { awk -F, 'NR==1 {for (i=1;i<=NF;i++) if ($i !~ /_ms$|^speedup_|^rho_|^elib_/) keep[i]=1}
    {out=""; for (i=1;i<=NF;i++) if (keep[i]) out=out $i ","; print out}' "$1"; }
  check "$f: resumed CSV equals uninterrupted (non-time columns)" \
    diff <(strip "$work/full/fake/csv/$f.csv") <(strip "$work/part/fake/csv/$f.csv")
  check "$f: identical including times (deterministic fake)" \
    cmp -s "$work/full/fake/csv/$f.csv" "$work/part/fake/csv/$f.csv"
done

# ---- Ctrl-C: stop after the current case, write what is finished, print the resume command ----
TILEBENCH_RESULTS_DIR="$work/int" TB_FAKE_SLEEP=0.5 "$TB" run --operator broken_unwritten,broken_wrong_result \
  --gpu fake --quiet >"$work/int.out" 2>&1 &
pid=$!
sleep 1.8
kill -INT $pid
wait $pid
rc=$?
check "interrupted run exits 130 [rc=$rc]" test $rc -eq 130
check "prints the resume command" grep -q "^resume with: tilebench run --resume .* --gpu fake" "$work/int.out"
check "stopped after the current case, not at once" grep -qE "^stopped \(SIGINT\): [1-5] of 6 cases done" "$work/int.out"
check "finished cases written to CSV" test -s "$work/int/fake/csv/broken_unwritten_default.csv"
if [ $fail -ne 0 ]; then
  echo "--- iso.err"; cat "$work/iso.err"; echo "--- resume.out"; cat "$work/resume.out"
fi
exit $fail
