#!/usr/bin/env bash
# GPU: the cuDNN `lib` implementations end to end with the real runner: batch_normalization's (the
# first and last case of every dtype) and flash_attention's (its first case, S = 1024, causal, B 4,
# H 32, D 128) verify against the reference (status ok); each lib row's note in the raw results
# names cuDNN's version and the engine it chose ("cuDNN 9.x.y engine N (knobs ...), heuristic choice R
# of K, workspace W B") and its configuration is empty (the engine is no longer a configuration); the CSV has the
# column note_lib. Exits 77 without a GPU or without cuDNN.
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo 'local ok, why = require("tb.dnn").available(); io.write(ok and "ok" or tostring(why), "\n")' >"$work/probe.lua"
probe=$("$TB" script "$work/probe.lua" 2>&1)
[ "$(head -1 <<<"$probe")" = ok ] || { echo "cuDNN cannot be opened: skipped ($probe)"; exit 77; }
export TILEBENCH_RESULTS_DIR="$work"
fail=0
cat >"$work/check.lua" <<'LUA'
local journal = require("tilebench.journal")
local _, rows = journal.read(arg[1])
local want = tonumber(arg[2])
local bad, n = 0, 0
for _, r in ipairs(rows) do
  if r.impl == "lib" then
    n = n + 1
    local what = string.format("lib %s %s", tostring(r.dtype), tostring(r.case_id))
    local note = r.note or ""
    if r.status ~= "ok" then
      print(string.format("FAIL %s: %s: %s", what, tostring(r.status), tostring(r.reason))); bad = 1
    elseif not note:match("^cuDNN %d+%.%d+%.%d+ engine %-?%d+ %(knobs .*%), heuristic choice %d+ of %d+, workspace %d+ B$") then
      print(string.format("FAIL %s: the note does not name the engine: '%s'", what, note)); bad = 1
    elseif (r.config or "") ~= "" then
      print(string.format("FAIL %s: a configuration '%s' (the engine belongs in the note)", what, r.config)); bad = 1
    else
      print(string.format("ok   %s: %.4f ms, %s", what, r.ms or -1, note))
    end
  end
end
if n ~= want then print(string.format("FAIL %d lib rows (want %d)", n, want)); bad = 1 end
os.exit(bad)
LUA
run() { # gpu-name operator cases rows
  "$TB" run --operator "$2" --impl lib,cuda --cases "$3" --gpu "$1" --protocol fixed --warmup 3 --repeat 10 \
    >"$work/$1.txt" 2>&1
  local rc=$?
  cat "$work/$1.txt"
  if [ $rc -eq 0 ]; then echo "ok   $2: run exits 0"; else echo "FAIL $2: run exits $rc"; fail=1; fi
  "$TB" script "$work/check.lua" "$(ls -d "$work/$1"/runs/*/ | head -1)journal.jsonl" "$4" || fail=1
  local csv
  csv=$(ls "$work/$1"/csv/"$2"_default.csv 2>/dev/null | head -1)
  if [ -n "$csv" ] && head -1 "$csv" | tr ',' '\n' | grep -qx note_lib; then
    echo "ok   $2: the CSV has note_lib"
  else
    echo "FAIL $2: no note_lib column in '${csv:-no CSV}'"; fail=1
  fi
}
run dnncheck batch_normalization ends 6
run sdpacheck flash_attention first 1
exit $fail
