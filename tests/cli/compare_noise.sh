#!/usr/bin/env bash
# compare must not cry wolf (issue 19 section 3), without a GPU: three synthetic runs of 40 cases
# (raw JSON with samples) whose medians move from run to run by up to 1 % while the samples
# within a run are tight, so the U test alone calls many of them. `compare --record-noise` on
# runs 1 and 2 writes the run-to-run noise; with it, runs 1 and 3 (A/A) give no FAST or SLOW and
# a planted 5 % slowdown of run 3 is SLOW on every case; the default (no noise file) is
# conservative; the noise file is found by the GPU label of A's path; the listing and the CSV
# carry the effect's interval.
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
TB=$TILEBENCH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
R=$work/results/SYN/runs
for spec in "r1 11 1.0" "r2 22 1.0" "r3 33 1.0"; do set -- $spec; "$TB" script "$TILEBENCH_HOME/tests/fixtures/synthetic_run.lua" "$R/$1" "$2" "$3"; done
"$TB" script "$TILEBENCH_HOME/tests/fixtures/synthetic_run.lua" "$R/slow" 33 1.05   # run 3's wobble, 5 % slower
out=$("$TB" compare "$R/r1" "$R/r3" --gpu NONE 2>&1)
check "no noise file: the conservative default is said" grep -q "none recorded for NONE: 1.0 % per run (conservative default" <<<"$out"
check "no noise file: A/A quiet" grep -qE '^cuda +0 +0 +40 +0 ' <<<"$out"
"$TB" compare "$R/r1" "$R/r3" --gpu NONE --csv "$work/aa.csv" >/dev/null 2>&1
significant=$(awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} $c["p"] != "" && $c["p"] < 0.05 {n++} END {print n+0}' "$work/aa.csv")
check "the U test alone would call most A/A cases ($significant of 40 at p < 0.05)" test "$significant" -ge 20
mkdir -p "$work/peaks/noise"
out=$("$TB" compare "$R/r1" "$R/r2" --record-noise "$work/peaks/noise/SYN.json" 2>&1)
check "--record-noise writes the file and says the figure" grep -qE "^wrote $work/peaks/noise/SYN.json: 0\.[0-9]+ % per run over 40 cases" <<<"$out"
export TILEBENCH_PEAKS_DIR=$work/peaks
out=$("$TB" compare "$R/r1" "$R/r3" 2>&1)
check "the noise file is found by A's GPU label" grep -q "run-to-run noise: $work/peaks/noise/SYN.json (0\.[0-9]* % per run over 40 cases" <<<"$out"
check "A/A with the measured noise: no FAST, no SLOW" grep -qE '^cuda +0 +0 +40 +0 ' <<<"$out"
out=$("$TB" compare "$R/r1" "$R/slow" --csv "$work/cmp.csv" 2>&1)
check "a planted 5 % slowdown is SLOW on every case" grep -qE '^cuda +0 +40 +0 +0 ' <<<"$out"
check "the listing gives the effect with its interval" grep -qE '^SLOW +softmax +default +fp16 +n_cols=512 +cuda .* \+[0-9.]+ % \[95 % CI \+[0-9.]+, \+[0-9.]+\], min effect [0-9.]+ %' <<<"$out"
check "the CSV has the interval and the run-to-run noise" grep -q ',ci_low,ci_high,run_noise$' "$work/cmp.csv"
out=$("$TB" compare "$R/r1" "$R/slow" --noise "$work/none.json" 2>&1); rc=$?
check "a missing --noise file is an error [rc=$rc]" test $rc -ne 0
check "  naming it" grep -q "no noise file $work/none.json" <<<"$out"
if [ $fail -ne 0 ]; then "$TB" compare "$R/r1" "$R/slow" --all 2>&1 | head -60; fi
exit $fail
