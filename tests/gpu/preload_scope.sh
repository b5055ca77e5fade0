#!/usr/bin/env bash
# GPU: preload_scope = "device" (docs/MEASUREMENT.md, "The preload's scope"). matmul fp16 at its last
# case (4096 x 4096 x 20480, capped on the H200), lib and cuda interleaved (the default
# conditions) with --preload-scope device: both found heavy, the preload ended by the device's
# heavy streak for at least one (the second found heavy: the first already ran in the rounds),
# and the two preloads together about one capped_preload (1 s) of GPU time, where "load" takes
# one each (2 s and more). Prints each row's preload_by and preloaded_s, to compare with the
# power-order runs. Needs NVML readings: without them it fails with power_reason.
set -u
. "$(dirname "$0")/lib/prologue.sh" # TB, the skip without a GPU, $work, results under it
tb_or_fail run run --operator matmul_fp32_fp16_fp8 --cases last --dtype fp16 --impl lib,cuda --preload-scope device \
  --gpu scope --quiet
cat >"$work/check.lua" <<'LUA'
local t = dofile(arg[2]) -- tests/gpu/lib/rows.lua ($ROWS_LUA)
local check = t.check
local sum, by_device, n = 0, 0, 0
for _, row in ipairs(t.rows(arg[1], "scope", "matmul_fp32_fp16_fp8")) do
  local st = row.stats or {}
  n = n + 1
  print(string.format("     %s: %s ms, stop %s, preload_by %s, preloaded %s s, exposed %s s, cap %s, rounds %s",
    tostring(row.impl), tostring(row.ms), tostring(st.stop_reason), tostring(st.preload_by),
    tostring(st.preloaded_s), tostring(st.exposed_s), tostring(st.cap_fraction), tostring(st.rounds)))
  check(st.power_reason == nil, row.impl .. ": NVML read: " .. tostring(st.power_reason))
  check(st.exposure == true and st.stop_reason == "exposure", row.impl .. ": found heavy, stop " .. tostring(st.stop_reason))
  check(st.preload_by == "load" or st.preload_by == "device", row.impl .. ": preload_by " .. tostring(st.preload_by))
  sum = sum + (st.preloaded_s or 0)
  if st.preload_by == "device" then by_device = by_device + 1 end
end
check(n == 2, "two rows: " .. n)
check(by_device >= 1, "the device's streak ended at least one preload: " .. by_device)
check(sum < 1.5, string.format("one shared preload: %.3f s of GPU time in all (load scope: >= 2)", sum))
t.exit()
LUA
"$TB" script "$work/check.lua" "$work" "$ROWS_LUA"
