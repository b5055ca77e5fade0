-- device_kernel.lua (GPU): tb.device lists the devices; tb.kernel compiles, loads (from source, from
-- a cubin file, from an image string, from PTX), reads attributes and reports a missing kernel;
-- tb.launch.tensormap encodes TMA tensor maps and refuses bad specs with a reason.
-- Exits 77 (skipped) where no device is present.
local device = require("tb.device")
local kernel = require("tb.kernel")

local ok, why = device.available()
if not ok then
  io.stderr:write("skipped: ", why, "\n")
  os.exit(77)
end

local failures = 0
local function check(cond, ...)
  if not cond then
    failures = failures + 1
    io.stderr:write("FAILED: ", string.format(...), "\n", debug.traceback(), "\n")
  end
end

local v = device.versions()
print(string.format("driver %s (%d) at %s, nvrtc %s, cache %s", v.driver, v.driver_version, v.driver_path,
                    tostring(v.nvrtc), v.cache_dir))
for _, p in ipairs(device.list()) do
  print(string.format("device %d: %s %s %s cc %s, %d SMs, L2 %d MiB, %.1f GiB, peak %.0f GB/s, %s %s", p.index,
                      p.name, p.arch, p.family, p.cc, p.sm_count, p.l2_bytes >> 20, p.total_mem / 2^30,
                      p.peak_dram_gbs, p.pci_bus_id, p.uuid))
  check(p.sm_count > 0 and p.l2_bytes > 0 and p.total_mem > 0, "device %d properties", p.index)
  if p.arch == "sm_90" then check(p.family == "hopper", "sm_90 family %s", p.family) end
end
device.select(0)
check(device.current() == 0, "current")
local free, total = device.mem_info()
check(free > 0 and free <= total, "mem_info %d %d", free, total)

local source = [[
#include <cuda_fp16.h>
extern "C" __global__ void scale_half(__half *y, const __half *x, float a, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2half(a * __half2float(x[i]) + BIAS);
}
]]

-- from source, for the device's arch
local m = assert(kernel.compile(source, { name = "scale_half.cu", defines = { BIAS = "0.5f" } }))
local f = m:get("scale_half", { "ptr", "ptr", "f32", "i64" })
check(f:name() == "scale_half", "name")
local a = f:attributes()
print(string.format("scale_half: %d regs, %d B local, binary %d, ptx %d, params %s", a.num_regs, a.local_bytes,
                    a.binary_version, a.ptx_version, tostring(a.num_params)))
check(a.num_regs > 0 and a.max_threads_per_block >= 256, "attributes")
if v.driver_version >= 12040 then
  check(a.num_params == 4, "num_params %s", tostring(a.num_params))
  check(a.param_sizes and a.param_sizes[3] == 4 and a.param_sizes[4] == 8, "param sizes")
end

-- a wrong signature is caught against the driver's parameter sizes
local okw, errw = pcall(m.get, m, "scale_half", { "ptr", "ptr", "f64", "i64" })
check(not okw and errw:find("parameter 3 is 4 bytes", 1, true), "wrong signature: %s", tostring(errw))
local okk, errk = pcall(m.get, m, "scale_half", { "ptr", "pointer" })
check(not okk and errk:find("invalid argument kind 'pointer'", 1, true), "bad kind: %s", tostring(errk))

-- a missing kernel names the module and the driver's error
local okm, errm = pcall(m.get, m, "no_such_kernel")
check(not okm and errm:find("kernel 'no_such_kernel' not found in module scale_half.cu: cuModuleGetFunction: "
                            .. "CUDA_ERROR_NOT_FOUND", 1, true), "missing kernel: %s", tostring(errm))

-- closing the module makes its functions raise
m:close()
local okc, errc = pcall(f.attributes, f)
check(not okc and errc:find("its module is closed", 1, true), "closed module: %s", tostring(errc))

-- the same cubin through load() and load_image(), found in the compile cache
local arch = device.props().arch
local info = assert(kernel.compile(source, { name = "scale_half.cu", defines = { BIAS = "0.5f" }, arch = arch,
                                             load = false }))
check(info.from_cache, "second compile should come from the cache")
local path = v.cache_dir .. "/" .. info.key .. ".cubin"
local m2 = kernel.load(path)
check(m2:get("scale_half"):attributes().num_regs == a.num_regs, "load(path)")
local fh = assert(io.open(path, "rb"))
local image = fh:read("a")
fh:close()
do
  local m3 <close> = kernel.load_image(image)
  m3:get("scale_half")
end
m2:close()

-- PTX, JIT-compiled by the driver
local ptx = assert(kernel.compile(source, { defines = { BIAS = "0.5f" }, arch = "compute_" .. arch:sub(4),
                                            load = false }))
local m4 = kernel.load(v.cache_dir .. "/" .. ptx.key .. ".ptx")
m4:get("scale_half")
m4:close()

-- a damaged image is refused with the driver's words
local okb, errb = pcall(kernel.load_image, "\127ELF this is not a cubin")
check(not okb and errb:find("cuModuleLoadData: CUDA_ERROR_", 1, true), "bad image: %s", tostring(errb))

-- a kernel that does not compile is data: nil, log, "compile"
local r, log, code = kernel.compile("extern \"C\" __global__ void k() { oops; }", { name = "oops.cu" })
check(r == nil and code == "compile" and log:find("oops.cu(1)", 1, true), "compile failure: %s", tostring(log))

-- TMA tensor maps: a good one is 128 bytes; bad specs are refused before the driver sees them,
-- and what the driver refuses comes back with its error name
do
  local launch, tensor = require("tb.launch"), require("tb.tensor")
  local t <close> = tensor.empty({ 64, 96 }, "fp16")
  local map = launch.tensormap(t, { dims = { 96, 64 }, strides = { 192 }, box = { 64, 32 }, swizzle = 128 })
  check(type(map) == "string" and #map == 128, "tensormap: %s bytes", tostring(map and #map))
  local function refused(spec, want)
    local okt, e = pcall(launch.tensormap, t, spec)
    check(not okt and tostring(e):find(want, 1, true), "tensormap %s: %s", want, tostring(e))
  end
  refused({ dims = { 96, 65 }, strides = { 192 }, box = { 64, 32 }, swizzle = 128 }, "reach 12480 bytes but the tensor has 12288")
  refused({ dims = { 96, 64 }, strides = { 200 }, box = { 64, 32 } }, "is not a multiple of 16 bytes")
  refused({ dims = { 96, 64 }, strides = { 192 }, box = { 128, 32 }, swizzle = 128 }, "exceeds the 128-byte swizzle")
  refused({ dims = { 96, 64 }, strides = {}, box = { 64, 32 } }, "2 dims need 1 strides")
  refused({ dims = { 96, 64 }, strides = { 192 }, box = { 64, 300 } }, "box[2] must be an integer in [1, 256]")
  refused({ dims = { 96, 64 }, strides = { 192 }, box = { 64, 32 }, swizzle = 48 }, "swizzle of 48 bytes")
end

device.synchronize()
if failures > 0 then
  io.stderr:write(failures, " check(s) failed\n")
  os.exit(1)
end
print("ok")
