#!/usr/bin/env bash
# GPU: exposure_scope = "case" (docs/MEASUREMENT.md, "The exposure's scope"). matmul fp16 at its last
# case (4096 x 4096 x 20480, capped on the H200), lib and cuda interleaved (the default conditions)
# with --exposure-scope case: both rows found heavy and stopped by "exposure" after one shared
# preload (preload_by "case"), in the same rounds, each with about half of the exposure, and the
# two rows' heavy GPU time (preloaded_s + exposed_s) about capped_preload + capped_exposure (2 s),
# where "load" takes that for each (4 s). Prints each row's fields, to compare with the power-order
# runs. Needs NVML readings: without them it fails with power_reason.
set -u
. "$(dirname "$0")/lib/prologue.sh" # TB, the skip without a GPU, $work, results under it
tb_or_fail run run --operator matmul_fp32_fp16_fp8 --cases last --dtype fp16 --impl lib,cuda --exposure-scope case \
  --gpu scope --quiet
cat >"$work/check.lua" <<'LUA'
local t = dofile(arg[2]) -- tests/gpu/lib/rows.lua ($ROWS_LUA)
local check = t.check
local pre, exp, n, rounds = 0, 0, 0, {}
for _, row in ipairs(t.rows(arg[1], "scope", "matmul_fp32_fp16_fp8")) do
  local st = row.stats or {}
  n = n + 1
  print(string.format("     %s: %s ms, stop %s, scope %s, exposure_by %s, preload_by %s, preloaded %s s, exposed %s s, "
    .. "n %s, cap %s, rounds %s", tostring(row.impl), tostring(row.ms), tostring(st.stop_reason),
    tostring(st.exposure_scope), tostring(st.exposure_by), tostring(st.preload_by), tostring(st.preloaded_s),
    tostring(st.exposed_s), tostring(st.n), tostring(st.cap_fraction), tostring(st.rounds)))
  check(st.power_reason == nil, row.impl .. ": NVML read: " .. tostring(st.power_reason))
  check(st.exposure == true and st.stop_reason == "exposure" and st.exposure_scope == "case",
    row.impl .. ": in the case's exposure, stop " .. tostring(st.stop_reason))
  check(st.preload_by == "case", row.impl .. ": the case's preload: " .. tostring(st.preload_by))
  check((st.exposed_s or 0) > 0.3 and (st.exposed_s or 0) < 0.7,
    row.impl .. string.format(": about half the exposure: %.3f s", st.exposed_s or 0))
  pre, exp = pre + (st.preloaded_s or 0), exp + (st.exposed_s or 0)
  rounds[#rounds + 1] = st.rounds
end
check(n == 2, "two rows: " .. n)
check(rounds[1] ~= nil and rounds[1] == rounds[2], "the same rounds: " .. tostring(rounds[1]) .. " " .. tostring(rounds[2]))
check(exp >= 0.99 and exp < 1.2, string.format("one exposure: %.3f s of GPU time in all (load scope: 2)", exp))
check(pre >= 0.99 and pre < 1.4, string.format("one preload: %.3f s in all (load scope: 2)", pre))
t.exit()
LUA
"$TB" script "$work/check.lua" "$work" "$ROWS_LUA"
