#!/usr/bin/env bash
# GPU: the power and clock state of a measurement (issue 19). `tilebench devices` shows NVML's
# reading of device 0. One small case (matmul fp16, first
# case, lib and cuda) under the default protocol with --conditions interleave: the CSV has the new
# columns sm_clock_mhz_<impl> and cap_fraction_<impl> after the standard ones (which keep their
# order), the clock is a plausible SM clock under the device's max, the capped share is in [0, 1]
# where NVML could be read, and where it could not the raw row says why. The raw stats say the two
# implementations were measured interleaved (rounds). Then the same case with --conditions
# cooldown --reading cold: a cool-down before each sample.
set -u
. "$(dirname "$0")/lib/prologue.sh" # TB, the skip without a GPU, $work, results under it
# `tilebench devices` reads NVML for each device (tb.timer.power)
"$TB" devices | tee "$work/devices.txt"
grep -q '^\[0\] power (nvml): ' "$work/devices.txt" || { echo "FAIL devices: no NVML reading for device 0"; exit 1; }
"$TB" run --operator matmul_fp32_fp16_fp8 --cases first --dtype fp16 --impl lib,cuda --gpu power --quiet \
  --conditions interleave >"$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
[ "$rc" -eq 0 ] || { echo "FAIL run exited $rc"; exit 1; }
"$TB" run --operator matmul_fp32_fp16_fp8 --cases first --dtype fp16 --impl cuda --gpu cold --quiet \
  --conditions cooldown --reading cold --min-samples 3 --cooldown-max 2 --timeout 20 >"$work/cold.txt" 2>&1
rc=$?
cat "$work/cold.txt"
[ "$rc" -eq 0 ] || { echo "FAIL cold run exited $rc"; exit 1; }
cat >"$work/check.lua" <<'LUA'
local cjson = require("cjson")
local csv = require("tilebench.csv")
local function read(path)
  local f = assert(io.open(path, "r"))
  local s = f:read("a")
  f:close()
  return cjson.decode(s)
end
local work = arg[1]
local fail = 0
local function check(ok, what)
  print((ok and "ok   " or "FAIL ") .. what)
  if not ok then fail = 1 end
end
local run_dir = io.popen("ls -d " .. work .. "/power/runs/*/ | head -1"):read("l")
local raw = read(run_dir .. "/raw/matmul_fp32_fp16_fp8.json")
local why = {} -- a GPU machine without NVML readings fails here, with NVML's reason
for _, row in ipairs(raw.rows or {}) do
  if (row.stats or {}).power_reason then why[#why + 1] = row.impl .. ": " .. row.stats.power_reason end
end
local t = csv.read(work .. "/power/csv/matmul_fp32_fp16_fp8_default.csv")
local pos = {}
for i, h in ipairs(t.header) do pos[h] = i end
for _, impl in ipairs({ "lib", "cuda" }) do
  check(pos["sm_clock_mhz_" .. impl] ~= nil and pos["cap_fraction_" .. impl] ~= nil,
    impl .. ": columns sm_clock_mhz_ and cap_fraction_ present" .. (#why > 0 and (" (" .. table.concat(why, "; ") .. ")") or ""))
  check(pos["sm_clock_mhz_" .. impl] and pos["sm_clock_mhz_" .. impl] > pos["reason_cuda"],
    impl .. ": after the standard columns")
end
check(pos.lib_ms == 3 and pos.cuda_ms == 9, "the standard columns keep their places")
for _, row in ipairs(raw.rows or {}) do
  local st = row.stats or {}
  local clk = t.rows[1]["sm_clock_mhz_" .. row.impl]
  check(type(clk) == "number" and clk > 100 and clk <= (st.max_clock_mhz or 0) * 1.05,
    string.format("%s: SM clock %s MHz within (100, max %s]", row.impl, tostring(clk), tostring(st.max_clock_mhz)))
  check(st.conditions == "interleave" and (st.rounds or 0) >= 1,
    string.format("%s: interleaved (%s, %s rounds)", row.impl, tostring(st.conditions), tostring(st.rounds)))
  local cap = t.rows[1]["cap_fraction_" .. row.impl]
  if st.power_reason then
    check(cap == nil, row.impl .. ": no cap share without readings (" .. st.power_reason .. ")")
  else
    check(type(cap) == "number" and cap >= 0 and cap <= 1, row.impl .. ": cap share in [0, 1]: " .. tostring(cap))
    check((st.power_readings or 0) >= 2 and (st.power_w or 0) > 0 and (st.power_w or 0) < 5000,
      string.format("%s: %s readings, %s W", row.impl, tostring(st.power_readings), tostring(st.power_w)))
    print(string.format("     %s: NVML SM clock %s MHz, reasons '%s'", row.impl, tostring(st.nvml_sm_clock_mhz),
      tostring(st.cap_reasons)))
  end
end
local cold_dir = io.popen("ls -d " .. work .. "/cold/runs/*/ | head -1"):read("l")
local craw = read(cold_dir .. "/raw/matmul_fp32_fp16_fp8.json")
for _, row in ipairs(craw.rows or {}) do
  local st = row.stats or {}
  check(st.reading == "cold" and st.conditions == "cooldown", "cold: reading and conditions recorded")
  check((st.cooldowns or 0) >= (st.n or 0) and (st.n or 0) >= 3,
    string.format("cold: a cool-down per sample (%s for %s samples, %.2f s)", tostring(st.cooldowns),
      tostring(st.n), st.cooldown_s or 0))
  check(st.throttle_filter == "cold" and st.graph_group == 1, "cold: nothing dropped, no graph groups")
end
os.exit(fail)
LUA
"$TB" script "$work/check.lua" "$work"
