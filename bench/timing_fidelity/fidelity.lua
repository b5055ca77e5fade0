-- fidelity.lua: times the cases of kernels.cu with tb.timer (defaults: adaptive, CUPTI, graphs,
-- eviction, clock check) and writes one CSV row per case.
-- usage: tilebench script bench/timing_fidelity/fidelity.lua CUBIN CASES OUT.csv [sweep|stability] [OPT=VALUE ...]
--   OPT=VALUE: options of tb.timer.measure for every case (flush_mode=write, flush_tlb_bytes=...).
--   CASES: the output of `fid_cases --list` (name kind n bytes grid block), or operators.py's
--   diagnosis cases, which add kind 4 (code_line) and 5 (nop_p8; n is unused for both).
--   sweep: every case; also prints the sweep's wall time against its GPU busy time (overhead).
--   stability: the cases of 50 us and more only (run once per fresh process by run.sh).
local device, kernel, launch, tensor, timer, sys =
  require('tb.device'), require('tb.kernel'), require('tb.launch'), require('tb.tensor'), require('tb.timer'), require('tb.sys')
local cubin, cases_path, out_path, what = arg[1], arg[2], arg[3], arg[4] or 'sweep'
assert(cubin and cases_path and out_path, 'usage: fidelity.lua CUBIN CASES OUT.csv [sweep|stability] [OPT=VALUE ...]')
local opts = {}
for i = 5, #arg do
  local k, v = arg[i]:match('^([%w_]+)=(.+)$')
  assert(k, 'bad option ' .. arg[i] .. ' (want NAME=VALUE)')
  if v == 'true' or v == 'false' then opts[k] = v == 'true' else opts[k] = math.tointeger(tonumber(v)) or tonumber(v) or v end
end

local cases = {}
for line in io.lines(cases_path) do
  local name, kind, n, bytes, grid, block = line:match('^(%S+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
  if name then
    cases[#cases + 1] = { name = name, kind = tonumber(kind), n = math.tointeger(tonumber(n)),
      bytes = math.tointeger(tonumber(bytes)), grid = tonumber(grid), block = tonumber(block) }
  end
end
assert(#cases > 0, 'no case in ' .. cases_path)

local mod = kernel.load(cubin)
local copy4 = mod:get('copy4', { 'ptr', 'ptr', 'i64' })
local scale4 = mod:get('scale4', { 'ptr', 'ptr', 'i64', 'f32' })
local add4 = mod:get('add4', { 'ptr', 'ptr', 'ptr', 'i64' })
local fma = mod:get('fma_loop', { 'ptr', 'i32' })
local nop = mod:get('nop', {})
-- operators.sh's diagnosis kernels (kinds 4 and 5), looked up only when a case asks for them
local extra = {}
local function fn_of(name, sig)
  extra[name] = extra[name] or mod:get(name, sig)
  return extra[name]
end

local max_n = 0
for _, c in ipairs(cases) do if (c.kind == 0 or c.kind == 2) and c.n > max_n then max_n = c.n end end
local a, b = assert(tensor.empty({ max_n * 4 }, 'fp32')), assert(tensor.empty({ max_n * 4 }, 'fp32'))
local c3 = assert(tensor.empty({ 16 << 20 }, 'fp32'))
local out = tensor.empty({ 1024 }, 'fp32')

local function plan_for(c)
  local g, bl = { c.grid }, { c.block }
  if c.kind == 0 then return launch.plan({ { fn = copy4, grid = g, block = bl, args = { a, b, c.n } } }) end
  if c.kind == 1 then return launch.plan({ { fn = fma, grid = g, block = bl, args = { out, c.n } } }) end
  if c.kind == 3 then return launch.plan({ { fn = nop, grid = g, block = bl, args = {} } }) end
  if c.kind == 4 then return launch.plan({ { fn = fn_of('code_line', { 'ptr' }), grid = g, block = bl, args = { out } } }) end
  if c.kind == 5 then
    local sig, args = {}, {}
    for j = 1, 8 do sig[j], args[j] = 'ptr', out end
    return launch.plan({ { fn = fn_of('nop_p8', sig), grid = g, block = bl, args = args } })
  end
  return launch.plan({
    { fn = scale4, grid = g, block = bl, args = { a, b, c.n, 2.0 } },
    { fn = add4, grid = g, block = bl, args = { a, b, c3, c.n } },
    { fn = copy4, grid = g, block = bl, args = { c3, a, c.n } },
  })
end

local plans = {}
for i, c in ipairs(cases) do
  plans[i] = plan_for(c)
  plans[i]:run() -- once before timing, so no first-launch cost lands in the sweep
end

local f = assert(io.open(out_path, 'w'))
f:write('kernel,bytes,tilebench_us,events_us,n,noise,dropped_throttled,sm_clock_mhz,clock,graph,stop_reason,wall_s,gpu_busy_s,probe_s,evict_s,batches,probes,flush_mode,setup_s,enqueue_s,wait_s,collect_s,gpu_span_s,graph_group,group_setup_s,enqueue_events_s,flush_s,overlap_s\n')
-- The sweep whose wall time is weighed against its GPU busy time (the overhead figure): every
-- case but the empty-kernel diagnostics (kind 3), which are timed after it.
local function measure_case(c, plan, acc)
  local r, msg = timer.measure(plan, opts)
  if r == nil then
    io.stderr:write(c.name, ': ', msg, '\n')
  elseif what == 'sweep' or r.median >= 0.05 then
    if acc then
      acc.busy, acc.probe, acc.n = acc.busy + r.gpu_busy_s, acc.probe + r.probe_s, acc.n + 1
      for k in pairs(acc.parts) do acc.parts[k] = acc.parts[k] + r[k] end
    end
    f:write(string.format('%s,%d,%.4f,%.4f,%d,%.5f,%d,%.0f,%s,%s,%s,%.4f,%.4f,%.4f,%.4f,%d,%d,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%.4f,%.4f,%.4f,%.6f\n',
      c.name, c.bytes, r.median * 1e3, r.events_median * 1e3, r.n, r.noise, r.dropped_throttled, r.sm_clock_mhz or 0,
      r.clock, tostring(r.graph), r.stop_reason, r.wall_s, r.gpu_busy_s, r.probe_s, r.evict_s, r.batches, r.probes,
      r.flush_mode, r.setup_s, r.enqueue_s, r.wait_s, r.collect_s, r.gpu_span_s, r.graph_group, r.group_setup_s,
      r.enqueue_events_s, r.flush_s, r.overlap_s))
    if r.graph_group_reason then io.stderr:write(c.name, ': ', r.graph_group_reason, '\n') end
    if r.clock_fallback_reason then io.stderr:write('clock fallback: ', r.clock_fallback_reason, '\n') end
    if r.dropped_incomplete > 0 then io.stderr:write(c.name, ': ', r.dropped_incomplete, ' samples without complete CUPTI records\n') end
  end
end

local acc = { busy = 0, probe = 0, n = 0, parts = { setup_s = 0, enqueue_s = 0, wait_s = 0, collect_s = 0, gpu_span_s = 0,
  group_setup_s = 0, enqueue_events_s = 0, flush_s = 0 } }
local t0 = sys.monotonic()
for i, c in ipairs(cases) do
  if c.kind ~= 3 then measure_case(c, plans[i], acc) end
end
local wall = sys.monotonic() - t0
for i, c in ipairs(cases) do
  if c.kind == 3 then measure_case(c, plans[i], nil) end
end
f:close()
if what == 'sweep' then
  local p = acc.parts
  print(string.format('overhead: sweep of %d cases: wall %.3f s, GPU busy (evictions + kernels) %.3f s, ratio %.3f; clock probes %.3f s',
    acc.n, wall, acc.busy, wall / acc.busy, acc.probe))
  print(string.format('  host: set-up %.3f s, enqueue %.3f s (re-pointing graph events %.3f s), wait %.3f s, collect %.3f s '
    .. '(CUPTI flushes %.3f s), group graph capture %.3f s; GPU timeline of the batches %.3f s',
    p.setup_s, p.enqueue_s, p.enqueue_events_s, p.wait_s, p.collect_s, p.flush_s, p.group_setup_s, p.gpu_span_s))
  local cu = timer.cupti()
  if cu.available then print(string.format('  CUPTI flushes in this process: %d plain, %d forced', cu.flushes, cu.forced_flushes)) end
end
