#!/usr/bin/env bash
# GPU: the timer's protocol flags of `tilebench run`, generated from tb.timer.options, reach the
# measurement: a fixed protocol of 7 samples after 1 warm-up run, the events clock, the memset
# eviction, no clock check, no graph. The raw rows must show 7 samples timed by events, and the
# provenance the protocol as the flags set it.
set -u
. "$(dirname "$0")/lib/prologue.sh" # TB, the skip without a GPU, $work, results under it
"$TB" run --operator vector_add --cases first --dtype fp32 --gpu flags --quiet \
  --protocol fixed --repeat 7 --warmup 1 --timer events --flush-mode write --no-clock-check --no-graph \
  >"$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
[ "$rc" -eq 0 ] || { echo "FAIL run exited $rc"; exit 1; }
cat >"$work/check.lua" <<'LUA'
local cjson = require("cjson")
local function read(path)
  local f = assert(io.open(path, "r"))
  local s = f:read("a")
  f:close()
  return cjson.decode(s)
end
local run_dir = arg[1]
local fail = 0
local function check(ok, what)
  print((ok and "ok   " or "FAIL ") .. what)
  if not ok then fail = 1 end
end
local prov = read(run_dir .. "/provenance.json")
local p = prov.protocol or {}
check(p.mode == "fixed" and p["repeat"] == 7 and p.warmup == 1, "protocol: fixed, repeat 7, warmup 1")
check(p.clock == "events" and p.flush_mode == "write" and p.clock_check == false and p.graph == false,
  "protocol: events clock, memset eviction, no clock check, no graph")
local raw = read(run_dir .. "/raw/vector_add.json")
local timed = 0
for _, row in ipairs(raw.rows or {}) do
  if row.samples and #row.samples > 0 then
    timed = timed + 1
    check(#row.samples == 7, string.format("%s: 7 samples (got %d)", tostring(row.impl), #row.samples))
    check(row.clock == "events", string.format("%s: clock events (got %s)", tostring(row.impl), tostring(row.clock)))
  end
end
check(timed > 0, "at least one implementation timed")
os.exit(fail)
LUA
run_dir=$(ls -d "$work"/flags/runs/*/ | head -1)
"$TB" script "$work/check.lua" "$run_dir"
