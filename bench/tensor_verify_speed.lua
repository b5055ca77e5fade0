-- tensor_verify_speed.lua: how fast tb.tensor fills and tb.verify compares 1 GiB on this GPU (a
-- benchmark, not a test: it asserts nothing). Run: tilebench script bench/tensor_verify_speed.lua [GiB]
-- Times are wall clock around each call with the device synchronised, median of 9, so they include
-- the allocation (reported separately as "empty") and, for compare, its few-KB copy back.
local device, tensor, verify, sys = require('tb.device'), require('tb.tensor'), require('tb.verify'), require('tb.sys')
local ok, why = device.available()
if not ok then io.stderr:write('skipped: ', why, '\n') os.exit(77) end
local gib = tonumber(arg and arg[1]) or 1
local bytes = math.floor(gib * 2 ^ 30)
local p = device.props()
print(string.format('%s (%s), %d SMs, peak %.0f GB/s; %g GiB per tensor', p.name, p.arch, p.sm_count, p.peak_dram_gbs, gib))

local function median_ms(f)
  f() -- compile and warm up
  device.synchronize()
  local t = {}
  for i = 1, 9 do
    local t0 = sys.monotonic()
    f()
    device.synchronize()
    t[i] = (sys.monotonic() - t0) * 1e3
  end
  table.sort(t)
  return t[5]
end
local function report(name, ms, moved)
  print(string.format('%-34s %9.3f ms  %8.1f GB/s', name, ms, moved / ms / 1e6))
end

local sizes = { fp32 = 4, fp16 = 2, bf16 = 2, fp8_e4m3 = 1, int8 = 1, int32 = 4, int64 = 8 }
local empty_ms = median_ms(function() tensor.empty(bytes, 'uint8'):close() end)
report('empty (cuMemAlloc + cuMemFree)', empty_ms, bytes)
for _, c in ipairs({ { 'rand', 'fp32' }, { 'randn', 'fp32' }, { 'randn', 'fp16' }, { 'randn', 'bf16' },
                     { 'randn', 'fp8_e4m3' }, { 'randint', 'int8' }, { 'randint', 'int64' }, { 'full', 'fp16' } }) do
  local gen, dt = c[1], c[2]
  local n = bytes // sizes[dt]
  local ms = median_ms(function()
    local t
    if gen == 'randint' then t = tensor.randint(n, dt, 1, -32, 33)
    elseif gen == 'full' then t = tensor.full(n, dt, 1.5)
    else t = tensor[gen](n, dt, 1) end
    t:close()
  end)
  report(string.format('%s %s (minus empty)', gen, dt), ms - empty_ms, bytes)
end
for _, c in ipairs({ { 'fp32', 'fp32' }, { 'fp16', 'fp16' }, { 'int8', 'int8' }, { 'fp16', 'fp32' } }) do
  local n = bytes // math.max(sizes[c[1]], sizes[c[2]])
  local a = c[1] == 'int8' and tensor.randint(n, 'int8', 1, -32, 33) or tensor.randn(n, c[1], 1)
  local b = c[2] == 'int8' and tensor.randint(n, 'int8', 1, -32, 33) or tensor.randn(n, c[2], 1)
  local r
  local ms = median_ms(function() r = verify.compare(a, b) end)
  report(string.format('compare %s vs %s (%s)', c[1], c[2], r.ok and 'ok' or 'mismatch'), ms,
         n * (sizes[c[1]] + sizes[c[2]]))
  a:close()
  b:close()
end
