-- tb.launch and tb.timer on a GPU: argument checks against declared signatures name the step and
-- the argument; a plan that hangs raises "timeout"; unknown options are refused. Exit 77 without a GPU.
local device = require('tb.device')
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write('skip: ', tostring(why), '\n') os.exit(77) end
local kernel, launch, tensor, timer = require('tb.kernel'), require('tb.launch'), require('tb.tensor'), require('tb.timer')

local SRC = [[
extern "C" __global__ void vector_add(const float *x, const float *y, float *out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
extern "C" __global__ void spin(long long cycles, int *sink) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  if (threadIdx.x == 0) sink[0] = 1;
}
]]
local mod = assert(kernel.compile(SRC, { name = 'timer_errors.cu' }))
local add = mod:get('vector_add', { 'ptr', 'ptr', 'ptr', 'i64' })
local add_nosig = mod:get('vector_add')
local spin = mod:get('spin', { 'i64', 'ptr' })
local x, y, out = tensor.empty({ 1024 }, 'fp32'), tensor.empty({ 1024 }, 'fp32'), tensor.empty({ 1024 }, 'fp32')
local props = device.props()

local failures = 0
local function check(cond, what)
  print((cond and 'ok   ' or 'FAIL ') .. what)
  if not cond then failures = failures + 1 end
end
local function raises(pattern, f, what)
  local ok, err = pcall(f)
  check(not ok and tostring(err):find(pattern, 1, true) ~= nil, what .. ': ' .. tostring(err))
end
local function step(args, extra)
  local s = { fn = add, grid = { 4 }, block = { 256 }, args = args }
  for k, v in pairs(extra or {}) do s[k] = v end
  return s
end

raises("plan step 1: argument 4 is a tensor but kernel 'vector_add' declares i64",
  function() launch.plan({ step({ x, y, out, x }) }) end, 'tensor where i64 declared')
raises("plan step 2: argument 1 is i64 but kernel 'vector_add' declares ptr",
  function() launch.plan({ step({ x, y, out, 1024 }), step({ launch.i64(1), y, out, 1024 }) }) end, 'scalar where ptr declared')
raises("plan step 1: argument 4 is i32 but kernel 'vector_add' declares i64",
  function() launch.plan({ step({ x, y, out, launch.i32(1024) }) }) end, 'wrong scalar width')
raises("kernel 'vector_add' declares 4 arguments, 3 given",
  function() launch.plan({ step({ x, y, out }) }) end, 'argument count')
raises("plain number but kernel 'vector_add' declares no signature",
  function() launch.plan({ { fn = add_nosig, grid = { 4 }, block = { 256 }, args = { x, y, out, 1024 } } }) end, 'plain number without a signature')
raises("block of 2048 threads exceeds kernel 'vector_add''s limit", function() launch.plan({ step({ x, y, out, 1024 }, { block = { 32, 32, 2 } }) }) end, 'block over the limit')
raises('plan step 1: block[1] = 2048 is outside 1..1024', function() launch.plan({ step({ x, y, out, 1024 }, { block = { 2048 } }) }) end, 'block dims')
raises('plan step 1: grid[1] = 0 is outside', function() launch.plan({ step({ x, y, out, 1024 }, { grid = { 0 } }) }) end, 'grid dims')
raises("exceeds the device's limit", function() launch.plan({ step({ x, y, out, 1024 }, { smem = props.smem_per_block_optin + 1 }) }) end, 'smem limit')
raises("plan step 1: argument 4 (3.5) is not an integer", function() launch.plan({ step({ x, y, out, 3.5 }) }) end, 'non-integer for i64')

-- A good plan runs and computes: out = x + y on data we wrote.
local ok_plan = launch.plan({ step({ x, y, out, 1024 }) })
check(ok_plan:steps() == 1 and ok_plan:kernels() == 1, 'steps() and kernels()')
check(tostring(ok_plan):find('vector_add<<<(4,1,1),(256,1,1),0>>>', 1, true) ~= nil, '__tostring shows the launch: ' .. tostring(ok_plan))
check(ok_plan:describe()[1].name == 'vector_add', 'describe() names the kernel')
ok_plan:run()

raises("unknown option 'wamrup'", function() timer.measure(ok_plan, { wamrup = 3 }) end, 'unknown option')
raises("option 'mode' must be one of: adaptive fixed", function() timer.measure(ok_plan, { mode = 'fast' }) end, 'bad mode')
raises("option 'max_noise' must be a number in [0, 1]", function() timer.measure(ok_plan, { max_noise = 2 }) end, 'out-of-range number')
raises("option 'warmup' must be an integer in [0, 1e+06]", function() timer.measure(ok_plan, { warmup = 1.5 }) end, 'non-integer count')

-- A closed tensor makes the plan refuse to run.
local z = tensor.empty({ 1024 }, 'fp32')
local zplan = launch.plan({ step({ x, y, z, 1024 }) })
z:close()
raises('plan step 1: argument 3: tensor is closed', function() zplan:run() end, 'closed tensor')

-- A plan that runs for ~3 s against a 0.3 s sync timeout raises "timeout" (last: the stream stays busy).
local sink = tensor.empty({ 1 }, 'int32')
local hang = launch.plan({ { fn = spin, grid = { 1 }, block = { 32 }, args = { 3 * props.clock_khz * 1000, sink } } })
raises('timeout:', function() timer.measure(hang, { mode = 'fixed', warmup = 0, ['repeat'] = 1, sync_timeout = 0.3, graph = false }) end, 'a hung plan raises timeout')
require('tb.device').synchronize()
-- plan:run waits at most its timeout too (a script's hung kernel ends the script with a message).
local t0 = require('tb.sys').monotonic()
raises('timeout: plan:run:', function() hang:run(true, 0.3) end, 'plan:run of a hung plan raises timeout')
check(require('tb.sys').monotonic() - t0 < 2, 'plan:run gave up after about its timeout')
require('tb.device').synchronize()
print(failures == 0 and 'PASS' or ('FAILED: ' .. failures))
os.exit(failures == 0 and 0 or 1)
