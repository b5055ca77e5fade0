#!/usr/bin/env bash
# full_disk.sh: every command that writes a file goes through one checked, atomic write. With the
# file-size limit standing in for a full disk (EFBIG where a disk gives ENOSPC), report, aggregate
# and compare --csv exit 1 naming the file and the reason, never print "wrote", and leave the old
# files byte for byte; a temp file left by a killed writer is removed by the next write.
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CSV="$TILEBENCH_HOME/tests/fixtures/resultsets/H200-test/csv"
RUNS="$TILEBENCH_HOME/tests/fixtures/resultsets/H200-test/runs"

# the first write of each output succeeds with room to spare
"$TILEBENCH" report --csv-dir "$CSV" --output "$tmp/rep" >/dev/null || fail "report"
"$TILEBENCH" aggregate --csv-dir "$CSV" --output "$tmp/agg" >/dev/null 2>&1 || fail "aggregate"
"$TILEBENCH" compare "$RUNS/run-a" "$RUNS/run-b" --all --csv "$tmp/cmp.csv" >/dev/null 2>&1 || fail "compare"
sums() { md5sum "$tmp/rep/report.html" "$tmp/agg/"* "$tmp/cmp.csv"; }
before=$(sums)

# A command run with a 1 KiB file-size limit: SIGXFSZ ignored, so write() fails with EFBIG.
small_disk() { (trap '' XFSZ; ulimit -f 1; "$@"); }

check() {  # check NAME PATH-IN-MESSAGE: exit 1, message names the file, nothing "wrote"
  [ "$rc" -eq 1 ] || fail "$1 on a full disk exited $rc: $(cat "$tmp/err")"
  grep -q "tilebench: write $2: write: File too large" "$tmp/err" || fail "$1 message: $(cat "$tmp/err")"
  grep -q "wrote" "$tmp/out" "$tmp/err" && fail "$1 printed 'wrote' after a failed write"
  return 0
}
small_disk "$TILEBENCH" report --csv-dir "$CSV" --output "$tmp/rep" >"$tmp/out" 2>"$tmp/err"; rc=$?
check report "$tmp/rep/report.html"
small_disk "$TILEBENCH" aggregate --csv-dir "$CSV" --output "$tmp/agg" >"$tmp/out" 2>"$tmp/err"; rc=$?
check aggregate "$tmp/agg/summary.md"
small_disk "$TILEBENCH" compare "$RUNS/run-a" "$RUNS/run-b" --all --csv "$tmp/cmp.csv" >"$tmp/out" 2>"$tmp/err"; rc=$?
check compare "$tmp/cmp.csv"
[ "$(sums)" = "$before" ] || fail "a failed write changed an old file"
leftover=$(find "$tmp" -name '*.tmp-*')
[ -z "$leftover" ] || fail "temp files left behind: $leftover"

# an orphan of a killed writer on this host (a pid that is gone) is cleaned by the next write;
# a live writer's temp file (this shell's pid) is left alone
host=$(hostname | tr -c 'A-Za-z0-9\n' '_' | cut -c1-32)
bash -c 'exit 0' & dead=$!; wait $dead
orphan="$tmp/rep/.report.html.tmp-$host-$dead-0123456789abcdef"
live="$tmp/rep/.report.html.tmp-$host-$$-fedcba9876543210"
echo partial >"$orphan"; echo partial >"$live"
"$TILEBENCH" report --csv-dir "$CSV" --output "$tmp/rep" >/dev/null || fail "report after a kill"
[ -e "$orphan" ] && fail "orphan temp file not removed"
[ -e "$live" ] || fail "a live writer's temp file was removed"
echo "full disk: ok"
