#!/usr/bin/env bash
# tb.timer falls back to CUDA events when CUPTI is unavailable (simulated with
# TILEBENCH_CUPTI_LIB=/nonexistent), says so once on stderr and records why. Exit 77 without a GPU.
set -u
TB=${TILEBENCH:-./tilebench}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/fallback.lua" <<'LUA'
local device = require('tb.device')
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write('skip: ', tostring(why), '\n') os.exit(77) end
local kernel, launch, tensor, timer = require('tb.kernel'), require('tb.launch'), require('tb.tensor'), require('tb.timer')
local mod = assert(kernel.compile([[
extern "C" __global__ void spin(long long cycles, int *sink) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  if (threadIdx.x == 0) sink[0] = 1;
}]], { name = 'timer_fallback.cu' }))
local spin = mod:get('spin', { 'i64', 'ptr' })
local sink = tensor.empty({ 1 }, 'int32')
local plan = launch.plan({ { fn = spin, grid = { 1 }, block = { 32 }, args = { 50 * device.props().clock_khz // 1000, sink } } })
local c = timer.cupti()
print('cupti.available=' .. tostring(c.available) .. ' reason=' .. tostring(c.reason))
for i = 1, 2 do
  local r = assert(timer.measure(plan, { timeout = 5 }))
  print(string.format('clock=%s reason=%s n=%d median=%.4f events_median=%.4f', r.clock,
    tostring(r.clock_fallback_reason), r.n, r.median, r.events_median))
end
local r = assert(timer.measure(plan, { clock = 'events', timeout = 5 }))
print('asked=events clock=' .. r.clock .. ' reason=' .. tostring(r.clock_fallback_reason))
LUA
TILEBENCH_CUPTI_LIB=/nonexistent "$TB" script "$dir/fallback.lua" >"$dir/out" 2>"$dir/err"
rc=$?
cat "$dir/out"; cat "$dir/err" >&2
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
fail=0
expect() { grep -q -- "$2" "$1" || { echo "FAIL: $1 lacks: $2"; fail=1; }; }
expect "$dir/out" 'cupti.available=false reason=CUPTI library not found (TILEBENCH_CUPTI_LIB=/nonexistent'
[ "$(grep -c '^clock=events reason=CUPTI library not found (TILEBENCH_CUPTI_LIB=/nonexistent' "$dir/out")" -eq 2 ] ||
  { echo 'FAIL: both measurements should use events and say why'; fail=1; }
expect "$dir/out" '^asked=events clock=events reason=nil$'
[ "$(grep -c 'timing with CUDA events instead of CUPTI' "$dir/err")" -eq 1 ] ||
  { echo 'FAIL: the fallback should be said exactly once on stderr'; fail=1; }
# Without the override, CUPTI is used where it exists (the H200 has it).
"$TB" script "$dir/fallback.lua" >"$dir/out2" 2>"$dir/err2" || { echo "FAIL: run without override"; cat "$dir/err2"; exit 1; }
cat "$dir/out2"
expect "$dir/out2" '^clock=cupti reason=nil'
[ $fail -eq 0 ] && echo PASS
exit $fail
