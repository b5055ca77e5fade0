-- tb.timer on a GPU: a plan of two kernels is timed as one unit, the sum of both kernels; the
-- events clock (which includes the launch gap) is never below the CUPTI clock. Exit 77 without a GPU.
local device = require('tb.device')
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write('skip: ', tostring(why), '\n') os.exit(77) end
local kernel, launch, tensor, timer = require('tb.kernel'), require('tb.launch'), require('tb.tensor'), require('tb.timer')

-- Spins for a given number of SM cycles: a duration that depends on neither memory nor caches.
local SRC = [[
extern "C" __global__ void spin(long long cycles, int *sink) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  if (threadIdx.x == 0 && blockIdx.x == 0) sink[0] = 1;
}
]]
local mod = assert(kernel.compile(SRC, { name = 'timer_sum.cu' }))
local spin = mod:get('spin', { 'i64', 'ptr' })
local sink = tensor.empty({ 1 }, 'int32')
local khz = device.props().clock_khz
local function step(us) return { fn = spin, grid = { 1 }, block = { 32 }, args = { math.floor(us * khz / 1000), sink } } end

local failures = 0
local function check(cond, what)
  print((cond and 'ok   ' or 'FAIL ') .. what)
  if not cond then failures = failures + 1 end
end

local opts = { max_noise = 0.01, timeout = 10 }
for _, graph in ipairs({ true, false }) do
  opts.graph = graph
  local a = assert(timer.measure(launch.plan({ step(100) }), opts))
  local b = assert(timer.measure(launch.plan({ step(200) }), opts))
  local ab = assert(timer.measure(launch.plan({ step(100), step(200) }), opts))
  local tag = graph and '[graph] ' or '[eager] '
  print(string.format('%sA %.4f ms  B %.4f ms  A+B %.4f ms  plan %.4f ms (%s, events %.4f ms, n %d)',
    tag, a.median, b.median, a.median + b.median, ab.median, ab.clock, ab.events_median, ab.n))
  check(ab.graph == graph or ab.graph_fallback_reason ~= nil, tag .. 'graph mode as asked or a reason given')
  check(math.abs(ab.median - (a.median + b.median)) <= 0.03 * (a.median + b.median),
    tag .. 'the plan of two kernels reports the sum of both (within 3 %)')
  check(ab.median > 1.3 * b.median, tag .. 'the plan is clearly more than its longer kernel')
  if ab.clock == 'cupti' then
    check(ab.kernels_per_run == 2, tag .. 'CUPTI saw two kernels per run')
    check(ab.events_median >= ab.median * 0.99, tag .. 'events (with the launch gap) >= CUPTI kernel time')
  else
    print('note: CUPTI unavailable: ' .. tostring(ab.clock_fallback_reason))
  end
  for _, r in ipairs({ a, b, ab }) do
    check(r.n >= 10 and #r.samples == r.n and #r.events_ms == r.n, tag .. 'samples and events_ms hold n values')
    check(r.min <= r.q1 and r.q1 <= r.median and r.median <= r.q3 and r.q3 <= r.max, tag .. 'min <= q1 <= median <= q3 <= max')
    check(r.gpu_busy_s > 0 and r.wall_s > 0 and r.flush_bytes > 0, tag .. 'busy, wall and eviction recorded')
  end
end
print(failures == 0 and 'PASS' or ('FAILED: ' .. failures))
os.exit(failures == 0 and 0 or 1)
