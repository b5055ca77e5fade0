#!/usr/bin/env bash
# GPU: a campaign killed with SIGKILL part-way and continued with --resume ends with the CSVs of
# an uninterrupted run: the same case set and identical statuses and reasons (every column but
# the times and the metrics derived from them, which differ between runs naturally).
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset TILEBENCH_OPERATOR_PATH
CASES=${RESUME_CASES:-1-3}
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
args=(smoke --cases "$CASES" --gpu resume --quiet)
"$TB" run "${args[@]}" --dry-run | tail -1
TILEBENCH_RESULTS_DIR="$work/full" "$TB" run "${args[@]}" >"$work/full.out" 2>&1
check "uninterrupted run exits 0" test $? -eq 0
total=$(grep -vc '"journal"' "$work"/full/resume/runs/*/journal.jsonl)
echo "uninterrupted: $total rows"

TILEBENCH_RESULTS_DIR="$work/part" TB_RESUME_MARK=$$ "$TB" run "${args[@]}" >"$work/part.out" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  j=$(ls "$work"/part/resume/runs/*/journal.jsonl 2>/dev/null | head -1)
  [ -n "$j" ] && [ "$(grep -vc '"journal"' "$j")" -ge $(( total / 3 )) ] && break
  sleep 0.1
done
kill -KILL $pid; wait $pid 2>/dev/null
j=$(ls "$work"/part/resume/runs/*/journal.jsonl | head -1)
done_rows=$(grep -vc '"journal"' "$j")
check "killed part-way ($done_rows of $total rows journalled)" test "$done_rows" -lt "$total"
sleep 1
left=$(grep -l "TB_RESUME_MARK=$$" /proc/[0-9]*/environ 2>/dev/null | wc -l)
check "no worker outlives the killed run ($left left)" test "$left" -eq 0
id=$(sed -n 's/^run \([^ :]*\).*/\1/p' "$work/part.out" | head -1)
TILEBENCH_RESULTS_DIR="$work/part" "$TB" run --resume "$id" --quiet >"$work/resume.out" 2>&1
check "resume exits 0" test $? -eq 0
tail -3 "$work/resume.out"
check "journal complete" test "$(grep -vc '"journal"' "$j")" -eq "$total"
# What a resume must reproduce: the cases, statuses and reasons. Every other column is a
# measurement or its conditions (times, rho, clocks, power), which differ from run to run.
# Parsed as CSV: a params cell holds commas inside its quotes.
strip() { python3 -c '
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
keep = [i for i, h in enumerate(rows[0]) if re.match(r"(params|dtype|status|reason)($|_)", h)]
for r in rows: print(",".join(r[i] for i in keep))' "$1"; }
check "same CSV files" diff <(cd "$work/full/resume/csv" && ls) <(cd "$work/part/resume/csv" && ls)
for f in "$work"/full/resume/csv/*.csv; do
  b=$(basename "$f")
  check "$b: same cases, statuses, reasons" diff <(strip "$f") <(strip "$work/part/resume/csv/$b")
done
exit $fail
