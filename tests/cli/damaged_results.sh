#!/usr/bin/env bash
# damaged_results.sh (issue 13): report, aggregate and compare on a damaged CSV or raw JSON exit 1
# with a message naming the file, the line or row and the column or field, never a Lua location,
# and leave the outputs they wrote before untouched.
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$TILEBENCH_HOME/tests/fixtures/resultsets/H200-test" "$tmp/r"
"$TILEBENCH" report --csv-dir "$tmp/r/csv" --output "$tmp/rep" >/dev/null || bad "report on good CSVs"
"$TILEBENCH" aggregate --csv-dir "$tmp/r/csv" --output "$tmp/agg" >/dev/null 2>&1 || bad "aggregate on good CSVs"
before=$(cat "$tmp/rep/report.html" "$tmp/agg/"* | md5sum)

csv="$tmp/r/csv/softmax_default.csv"
cp "$csv" "$tmp/good.csv"
header=$(head -1 "$tmp/good.csv")
ncols=$(awk -F, 'NR==1 {print NF}' "$tmp/good.csv")
for col in $(seq 1 "$ncols"); do
  name=$(cut -d, -f"$col" <<<"$header")
  case "$name" in *_ms|speedup_*|rho_*|elib_*) ;; *) continue ;; esac
  for value in abc inf nan -1 1e999; do
    awk -F, -v OFS=, -v c="$col" -v v="$value" 'NR==3 {$c=v} {print}' "$tmp/good.csv" >"$csv"
    for cmd in "report --csv-dir $tmp/r/csv --output $tmp/rep" "aggregate --csv-dir $tmp/r/csv --output $tmp/agg"; do
      out=$("$TILEBENCH" $cmd 2>&1); rc=$?
      [ $rc -eq 1 ] || bad "$cmd with $name=$value exited $rc"
      grep -qF "$csv:3: column '$name': expected a finite number >= 0 or nothing, got '$value'" <<<"$out" \
        || bad "$cmd with $name=$value: $out"
      grep -qE '\.lua:[0-9]+' <<<"$out" && bad "$cmd leaks a Lua location: $out"
    done
  done
done
cp "$tmp/good.csv" "$csv"
[ "$(cat "$tmp/rep/report.html" "$tmp/agg/"* | md5sum)" = "$before" ] || bad "a refused input changed earlier outputs"

# raw JSON rows of the wrong types: compare names the file, the row and the field
raw=$(ls "$tmp/r/runs/run-a/raw/"*.json | head -1)
cp "$raw" "$tmp/good.json"
for edit in 'ms="fast"' 'dtype=5' 'samples="x"' 'stats=[1]' 'params=[1]' 'ms=-1' 'status={}'; do
  TB_EDIT=$edit "$TILEBENCH" script /dev/stdin "$tmp/good.json" "$raw" <<'LUA' || bad "edit $edit"
local cjson = require("cjson")
local src, dst = arg[1], arg[2]
local fh = assert(io.open(src)); local doc = cjson.decode(fh:read("a")); fh:close()
local rows = {}
local function walk(n) if type(n) == "table" then if n.impl then rows[#rows + 1] = n else for _, v in pairs(n) do walk(v) end end end end
walk(doc)
local field, value = os.getenv("TB_EDIT"):match("^(%w+)=(.*)$")
rows[1][field] = cjson.decode(value)
fh = assert(io.open(dst, "w")); fh:write(cjson.encode(doc)); fh:close()
LUA
  field=${edit%%=*}
  out=$("$TILEBENCH" compare "$tmp/r/runs/run-a" "$tmp/r/runs/run-b" 2>&1); rc=$?
  [ $rc -eq 1 ] || bad "compare with $edit exited $rc"
  grep -qE "^tilebench: $raw: row [0-9]+[^:]*: field '$field' must be " <<<"$out" || bad "compare with $edit: $out"
done
cp "$tmp/good.json" "$raw"
[ $fail -eq 0 ] && echo "damaged results: ok"
exit $fail
