-- tb.timer on a GPU: graph replay and eager launches agree within noise on a ~1 ms kernel; graph
-- groups (samples per launch) agree with a launch per run; the fixed protocol keeps exactly
-- `repeat` samples; the clock check reports a plausible SM clock.
-- Exit 77 without a GPU.
local device = require('tb.device')
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write('skip: ', tostring(why), '\n') os.exit(77) end
local kernel, launch, tensor, timer = require('tb.kernel'), require('tb.launch'), require('tb.tensor'), require('tb.timer')

-- ~1 ms of FMA work on every SM: compute-bound, so eviction and launch mode cannot change it.
local SRC = [[
extern "C" __global__ void fma_loop(float *out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 0.999f, c = 1e-4f;
  for (int i = 0; i < iters; i++) { a = fmaf(a, b, c); b = fmaf(b, a, c); }
  if (a + b == 12345.f) out[threadIdx.x] = a + b;
}
]]
local props = device.props()
local mod = assert(kernel.compile(SRC, { name = 'timer_graph.cu' }))
local fn = mod:get('fma_loop', { 'ptr', 'i32' })
local out = tensor.empty({ 1024 }, 'fp32')
local function plan(iters) return launch.plan({ { fn = fn, grid = { props.sm_count * 4 }, block = { 256 }, args = { out, iters } } }) end

local failures = 0
local function check(cond, what)
  print((cond and 'ok   ' or 'FAIL ') .. what)
  if not cond then failures = failures + 1 end
end

-- Calibrate the iteration count to ~1 ms.
local iters = 20000
local probe = assert(timer.measure(plan(iters), { mode = 'fixed', warmup = 2, ['repeat'] = 5 }))
iters = math.max(1000, math.floor(iters * 1.0 / probe.median))
local p = plan(iters)

local g = assert(timer.measure(p, { graph = true }))
local e = assert(timer.measure(p, { graph = false }))
print(string.format('graph %.4f ms (noise %.3f %%, n %d, %s)  eager %.4f ms (noise %.3f %%, n %d)  SM clock %.0f / %.0f MHz',
  g.median, g.noise * 100, g.n, g.stop_reason, e.median, e.noise * 100, e.n, g.sm_clock_mhz or 0, g.max_clock_mhz))
check(g.median > 0.5 and g.median < 2, 'the kernel takes about 1 ms')
check(g.graph == true, 'graph mode used (' .. tostring(g.graph_fallback_reason) .. ')')
check(e.graph == false and e.graph_fallback_reason == nil, 'eager mode used when asked')
local tol = math.max(3 * math.max(g.noise, e.noise), 0.01)
check(math.abs(g.median - e.median) <= tol * e.median, string.format('graph and eager agree within %.2f %%', tol * 100))

-- Graph groups: several (eviction, run) samples per graph launch, split by CUPTI records. A ~20 us
-- kernel timed in groups of 8 and with a launch per run must agree, sample for sample.
local cupti_ok = timer.cupti().available
local small = plan(math.max(50, iters // 50))
local g8 = assert(timer.measure(small, { graph_group = 8 }))
local g1 = assert(timer.measure(small, { graph_group = 1 }))
print(string.format('graph groups: 8 per launch %.4f ms (n %d, events %.4f, kernels/run %g, %s)  1 per launch %.4f ms (n %d)',
  g8.median, g8.n, g8.events_median, g8.kernels_per_run, tostring(g8.graph_group_reason), g1.median, g1.n))
if cupti_ok then
  check(g8.graph_group == 8 and g8.graph_group_reason == nil, 'graph groups of 8 used: ' .. tostring(g8.graph_group_reason))
  check(g8.n % 8 == 0 or g8.stop_reason == 'repeat', 'whole launches of 8 samples')
  check(g8.kernels_per_run == 1 and g8.dropped_incomplete == 0, 'each sample of a launch holds its one kernel')
  check(g8.evict_s > 0 and g8.gpu_busy_s > g8.evict_s, 'evictions inside the graph are timed apart from the run')
  local tol8 = math.max(3 * math.max(g8.noise, g1.noise), 0.02)
  check(math.abs(g8.median - g1.median) <= tol8 * g1.median,
    string.format('grouped and per-run samples agree within %.1f %%', tol8 * 100))
  check(g8.events_median >= g8.median, 'the events of a grouped sample bracket its kernel')
  local d = assert(timer.measure(small, {}))
  check(d.graph_group > 1, 'the default groups a short kernel (' .. tostring(d.graph_group) .. ')')
  -- Both event nodes of a sample in line (inline) time the same run as the split layout (the
  -- default, used by g8 above: the event after each run beside the kernels), whose GPU timeline
  -- is shorter per sample.
  local ch = assert(timer.measure(small, { graph_group = 8, group_events = 'inline' }))
  print(string.format('group events: split %.4f ms (events %.4f, %.2f us of timeline per sample)  inline %.4f ms (events %.4f, %.2f us)',
    g8.median, g8.events_median, g8.gpu_span_s / (g8.n + 3) * 1e6, ch.median, ch.events_median, ch.gpu_span_s / (ch.n + 3) * 1e6))
  check(ch.graph_group == 8 and ch.dropped_incomplete == 0, 'inline layout used: ' .. tostring(ch.graph_group_reason))
  check(math.abs(ch.median - g8.median) <= tol8 * g8.median, 'inline and split samples agree')
  check(ch.events_median >= ch.median, 'the events of an inline sample bracket its kernel')
end
check(g1.graph_group == 1, 'graph_group = 1 launches per run')
local nf = assert(timer.measure(small, { graph_group = 4, flush = false }))
check(nf.graph_group == 1 and nf.graph_group_reason and nf.graph_group_reason:find('eviction'),
  'no eviction, no groups, and the reason says so: ' .. tostring(nf.graph_group_reason))

local f = assert(timer.measure(p, { mode = 'fixed', warmup = 5, ['repeat'] = 30 }))
check(f.mode == 'fixed' and f.n == 30 and f.stop_reason == 'repeat' and f.warmup == 5, 'fixed protocol keeps exactly repeat samples')

check(g.sm_clock_mhz and g.sm_clock_mhz > 0.3 * g.max_clock_mhz and g.sm_clock_mhz < 1.1 * g.max_clock_mhz,
  'the probe reports a plausible SM clock')
local c = timer.clock_probe()
print(string.format('clock_probe: %.0f MHz (SMs %.0f..%.0f, window %.0f ns)', c.mhz, c.min_mhz, c.max_mhz, c.window_ns))
check(c.mhz > 0 and c.window_ns >= 2000 and c.sms == props.sm_count, 'clock_probe runs on every SM')

-- Throttle filter: a threshold above any real clock drops every sample (sustained-clock rule off).
local r, msg, code = timer.measure(p, { throttle_threshold = 1.5, timeout = 1, sustained_clock = false })
check(r == nil and code == 'throttled' and msg:find('under 150%%'), 'samples under the threshold are dropped and counted: ' .. tostring(msg))
-- With the rule on (the default), the same load is taken as sustaining its clock: all kept.
local sus = timer.measure(p, { throttle_threshold = 1.5, timeout = 5 })
check(sus and sus.throttle_filter == 'sustained' and sus.dropped_throttled == 0 and sus.under_threshold == sus.n
  and sus.n >= 10 and sus.stop_reason ~= 'timeout',
  'a load under the threshold on every sample is kept as sustained: ' .. tostring(sus and sus.throttle_filter))
check(g.throttle_filter == 'on', 'the filter is on by default: ' .. tostring(g.throttle_filter))
local none = assert(timer.measure(p, { throttle_threshold = 0 }))
check(none.dropped_throttled == 0, 'threshold 0 drops nothing')
local off = assert(timer.measure(p, { clock_check = false }))
check(off.sm_clock_mhz == nil and off.probe_s == 0 and off.throttle_filter == 'off', 'clock_check = false runs no probe')
print(failures == 0 and 'PASS' or ('FAILED: ' .. failures))
os.exit(failures == 0 and 0 or 1)
