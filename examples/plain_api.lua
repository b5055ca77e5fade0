-- Shows plain use of tb.tensor, tb.kernel, tb.launch, tb.verify and tb.timer from `tilebench script`, outside any operator.
-- usage: tilebench script examples/plain_api.lua [N]   (needs a GPU; N elements, default 2^24)
-- Compiles a kernel with NVRTC, fills two tensors on the device, checks the kernel against a
-- second, naive kernel, and times it with eviction between samples.
local device = require("tb.device")
local ok, why = device.available()
if not ok then io.stderr:write("plain_api: no GPU: ", tostring(why), "\n") os.exit(1) end

local tensor, kernel = require("tb.tensor"), require("tb.kernel")
local launch, verify, timer = require("tb.launch"), require("tb.verify"), require("tb.timer")

local n = math.tointeger(tonumber(arg[1] or "")) or (1 << 24)
local props = device.props()
print(("device: %s (%s, %d SMs)"):format(props.name, props.arch, props.sm_count))

local source = [[
extern "C" __global__ void scale_add(const float *x, const float *y, float *out, float a, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = __fmaf_rn(a, x[i], y[i]);
}
extern "C" __global__ void scale_add_naive(const float *x, const float *y, float *out, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fmaf_rn(a, x[i], y[i]);
}
]]
-- compile returns nil, log on a compile error: show the compiler's message
local module <close> = assert(kernel.compile(source, {name = "plain_api.cu"}))
local fast = module:get("scale_add", {"ptr", "ptr", "ptr", "f32", "i64"})
local naive = module:get("scale_add_naive", {"ptr", "ptr", "ptr", "f32", "i64"})

-- device memory scoped by to-be-closed variables; randn(shape, dtype, seed, mean, std)
local x <close> = tensor.randn({n}, "fp32", 1, 0, 1)
local y <close> = tensor.randn({n}, "fp32", 2, 0, 1)
local out <close> = tensor.empty({n}, "fp32")
local ref <close> = tensor.empty({n}, "fp32")

local args = function(o) return {x, y, o, launch.f32(2.0), launch.i64(n)} end
local plan = launch.plan{{fn = fast, grid = {props.sm_count * 8}, block = {256}, args = args(out)}}
local ref_plan = launch.plan{{fn = naive, grid = {(n + 255) // 256}, block = {256}, args = args(ref)}}
ref_plan:run()
verify.poison(out)                       -- an element the kernel never writes would now fail
plan:run()
local report = verify.compare(out, ref, {atol = 0, rtol = 0})
print(("verify: %s (%d mismatches of %d)"):format(report.ok and "ok" or "FAILED", report.mismatches or -1, report.numel or n))
if not report.ok then os.exit(1) end

local res = assert(timer.measure(plan, {mode = "fixed", warmup = 10, ["repeat"] = 50}))
local gbs = 3 * 4 * n / (res.median * 1e-3) / 1e9
print(("time: median %.4f ms (q1 %.4f, q3 %.4f, noise %.2f %%, n %d, clock %s) = %.0f GB/s"):format(
  res.median, res.q1, res.q3, 100 * res.noise, res.n, res.clock, gbs))
