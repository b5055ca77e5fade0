#!/usr/bin/env bash
# report_chromium.sh: renders `tilebench report` of the fixture results in headless Chromium and
# checks, in the DOM Chromium built, that every chart is there with its series, and that a
# screenshot of the page is drawn. Skips (77) where Chromium is not installed.
set -euo pipefail
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROMIUM" ]; then echo "SKIP: chromium not installed (apt-get install chromium)"; exit 77; fi
FIX="$TILEBENCH_HOME/tests/fixtures"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$TILEBENCH" report --csv-dir "$FIX/resultsets/H200-test/csv" --runs "$FIX/resultsets/H200-test/runs" \
  --peaks "$FIX/peaks/H200-test.json" --with-anchors "$FIX/resultsets/tilebench-style" --output "$tmp/out" \
  > "$tmp/report.log"
cat "$tmp/report.log"
grep -q "wrote $tmp/out/report.html (3 operators, 14 charts" "$tmp/report.log"

run_chromium() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
    --user-data-dir="$tmp/profile" "$@" 2>"$tmp/chromium.err"
}
run_chromium --dump-dom "file://$tmp/out/report.html" > "$tmp/dom.html" || { cat "$tmp/chromium.err"; exit 1; }

fail=0
expect() {  # expect COUNT DESCRIPTION REGEX
  local got
  got=$(grep -oE "$3" "$tmp/dom.html" | wc -l)
  if [ "$got" -ne "$1" ]; then echo "FAIL: $2: expected $1, got $got"; fail=1; else echo "ok: $2 ($got)"; fi
}
expect 14 "charts"                       '<svg [^>]*class="chart [a-z]+"'
expect 5  "latency charts"               '<svg [^>]*data-chart="latency"'
expect 5  "bandwidth charts"             '<svg [^>]*data-chart="bandwidth"'
expect 2  "roofline charts"              '<svg [^>]*data-chart="roofline"'
expect 2  "speedup-per-category charts"  '<svg [^>]*data-chart="speedup"'
# a line per implementation: lib and cuda in every latency chart, tile in vector_add default's two
expect 5  "latency lines of lib"         '<path class="series"[^>]*data-chart="latency"[^>]*data-series="lib"[^>]*data-source="ours"'
expect 5  "latency lines of cuda"        '<path class="series"[^>]*data-chart="latency"[^>]*data-series="cuda"[^>]*data-source="ours"'
expect 2  "latency lines of tile"        '<path class="series"[^>]*data-chart="latency"[^>]*data-series="tile"[^>]*data-source="ours"'
expect 5  "bandwidth lines of lib"       '<path class="series"[^>]*data-chart="bandwidth"[^>]*data-series="lib"'
expect 8  "TileBench lines beside ours"  '<path class="series"[^>]*data-chart="latency"[^>]*data-series="[a-z]+ \(style\)"[^>]*data-source="anchor"'
expect 3  "roofline series, mode default" '<g class="series"[^>]*data-chart="roofline"[^>]*data-mode="default"'
expect 2  "roofline series, mode autotune" '<g class="series"[^>]*data-chart="roofline"[^>]*data-mode="autotune"'
roof=$(perl -0ne 'print $1 if /(<svg [^>]*data-chart="roofline"[^>]*data-mode="default".*?<\/svg>)/s' "$tmp/dom.html" \
  | grep -oE '<circle class="point"' | wc -l)
if [ "$roof" -ne 36 ]; then echo "FAIL: roofline points, mode default: expected 36, got $roof"; fail=1; else echo "ok: roofline points ($roof)"; fi
expect 3  "speedup bars of cuda"         '<rect class="bar"[^>]*data-series="cuda"'
expect 5  "slow/failed rows"             '<td>(slow|timeout|wrong|failed|oom)</td>'
if grep -qi '<script' "$tmp/dom.html"; then echo "FAIL: the report has a script"; fail=1; fi

# Chromium lays the page out and paints it: the screenshot exists and is not a blank page.
run_chromium --window-size=1200,2400 --screenshot="$tmp/shot.png" "file://$tmp/out/report.html" >/dev/null \
  || { cat "$tmp/chromium.err"; exit 1; }
size=$(stat -c %s "$tmp/shot.png")
if [ "$size" -lt 30000 ]; then echo "FAIL: screenshot is $size bytes (blank page?)"; fail=1; else echo "ok: screenshot $size bytes"; fi
exit $fail
