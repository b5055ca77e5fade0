-- cmd/devices.lua: `tilebench devices` lists the GPUs the driver sees, with their properties.
local options = require("tilebench.options")
local M = {}
local spec = { { name = "json", type = "flag", desc = "print JSON instead of a table" } }
M.summary = "list the GPUs and their properties"
M.usage = "usage: tilebench devices [--json]\n\n" .. options.help(spec) .. "\n"

local function gib(b) return string.format("%.1f GiB", b / 2 ^ 30) end
local function mib(b) return string.format("%.0f MiB", b / 2 ^ 20) end

function M.run(args)
  local opts = options.parse(args, spec, "devices")
  local device = require("tb.device")
  local list = device.list()
  if opts.json then
    io.write(require("tilebench.json").encode({ devices = list, versions = device.versions() }), "\n")
    return 0
  end
  local v = device.versions()
  -- the backend's compiler under its own name: "NVRTC 13.0" for CUDA
  local compiler = v.compiler or "compiler"
  io.write(string.format("driver %s, %s %s\n", tostring(v.driver), compiler:upper(), tostring(v[compiler])))
  for _, p in ipairs(list) do
    io.write(string.format("[%d] %s  %s (%s)  %d SMs  %s HBM  L2 %s  SM clock %d MHz  "
      .. "memory %d MHz x %d bit (%.0f GB/s peak)  smem opt-in %d KiB\n",
      p.index, p.name, p.arch, p.family, p.sm_count, gib(p.total_mem), mib(p.l2_bytes),
      p.clock_khz // 1000, p.mem_clock_khz // 1000, p.mem_bus_width_bits, p.peak_dram_gbs,
      p.smem_per_block_optin // 1024))
  end
  if #list == 0 then io.write("no devices\n") end
  -- The power source the timer reads around every batch (NVML): its state now, or why it cannot
  -- be read (the measurements then carry no cap share: docs/MEASUREMENT.md).
  for _, p in ipairs(list) do
    local ok, s = pcall(require("tb.timer").power, p.index)
    if ok and s.available then
      -- power_w is NVML's 1 s average; power_now_w the instantaneous power, where the driver gives it
      io.write(string.format("[%d] power (%s): %s, SM clock %s MHz, %s W%s%s\n", p.index, s.source,
        s.cap_reasons ~= "" and ("capped: " .. s.cap_reasons) or (s.idle and "idle, no cap" or "no cap"),
        s.sm_clock_mhz and string.format("%.0f", s.sm_clock_mhz) or "?",
        s.power_w and string.format("%.0f", s.power_w) or "?",
        s.power_now_w and string.format(" (%.0f W now)", s.power_now_w) or "",
        s.limit_w and string.format(" of a %.0f W limit", s.limit_w) or ""))
    else
      io.write(string.format("[%d] power: not read (%s)\n", p.index, ok and s.reason or tostring(s)))
    end
  end
  return 0
end
return M
