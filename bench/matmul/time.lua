-- Times `cuda` (the default and the listed configurations) against cuBLASLt `lib` at the largest
-- case of each dtype of the matmul operators, after verifying each plan once against the
-- reference. Each row gives the SM clock it ran at: big matmuls on an H200 run power-limited
-- under 90 % of the max clock on every sample, so tilebench.runner's measure re-takes them with
-- the throttle filter off (marked "sustained") instead of failing.
-- usage: tilebench script bench/matmul/time.lua [--quick] [--configs V:BN:ST,...]
--          [--ops NAME,...] [--dtypes DT,...]
--   --quick: only the default; --configs: these instead of the built-in list (e.g. ws:128:6).
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local opmod, context, config = require("tilebench.operator"), require("tilebench.context"), require("tilebench.config")
local runner, verify = require("tilebench.runner"), require("tb.verify")

local function list(s)
  local t = {}
  for w in s:gmatch("[^,]+") do t[#t + 1] = w end
  return t
end

local EXTRA = { -- configurations timed besides the default (the autotune space's likely winners)
  { VARIANT = "wgmma2", BN = 128, STAGES = 3 }, { VARIANT = "wgmma", BN = 128, STAGES = 4 },
  { VARIANT = "wgmma", BN = 256, STAGES = 4 }, { VARIANT = "ws", BN = 128, STAGES = 5 },
  { VARIANT = "ws", BN = 256, STAGES = 4 }, { VARIANT = "tma", BN = 128, STAGES = 4 },
  { VARIANT = "tma", BN = 128, STAGES = 6 }, { VARIANT = "tma", BN = 256, STAGES = 3 },
  { VARIANT = "tma", BN = 256, STAGES = 4 }, { VARIANT = "pp", BN = 128, STAGES = 4 },
  { VARIANT = "pp", BN = 128, STAGES = 5 }, { VARIANT = "pp", BN = 128, STAGES = 6 },
}
local quick, ops, dtypes = false, { "matmul_fp32_fp16_fp8", "batched_matmul" }, nil
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--quick" then quick = true
  elseif a == "--configs" then
    EXTRA = {}
    for _, c in ipairs(list(arg[i + 1])) do
      local v, bn, st, rest = c:match("^(%a+):(%d+):(%d+)(.*)$")
      if not v then error("bad --configs entry " .. c .. " (want VARIANT:BN:STAGES[:KEY=N...])", 0) end
      local cfg = { VARIANT = v, BN = tonumber(bn), STAGES = tonumber(st) }
      for k, n in rest:gmatch(":(%u+)=(%d+)") do cfg[k] = tonumber(n) end
      EXTRA[#EXTRA + 1] = cfg
    end
    i = i + 1
  elseif a == "--ops" then ops = list(arg[i + 1]); i = i + 1
  elseif a == "--dtypes" then dtypes = {}; for _, d in ipairs(list(arg[i + 1])) do dtypes[d] = true end; i = i + 1
  else error("unknown argument " .. a, 0) end
  i = i + 1
end

local function cfgstr(c)
  if not c.VARIANT then return "" end
  local s = string.format("%s BN=%d ST=%d", c.VARIANT, c.BN, c.STAGES)
  for _, k in ipairs({ "PRODUCERS", "CTAS" }) do if c[k] then s = s .. " " .. k .. "=" .. c[k] end end
  return s
end
local function same(a, b)
  return a.VARIANT == b.VARIANT and a.BN == b.BN and a.STAGES == b.STAGES and a.PRODUCERS == b.PRODUCERS and a.CTAS == b.CTAS
end

print(string.format("%-20s %-9s %-12s %-5s %-18s %10s %8s %6s  %s", "operator", "dtype", "case", "impl", "config",
  "median", "TFLOP/s", "MHz", "check"))
for _, opname in ipairs(ops) do
  local op = opmod.load(opname)
  local family = device.props().family
  for _, dtype in ipairs(opmod.dtypes(op)) do
    if dtypes and not dtypes[dtype] then goto next_dtype end
    do
      local cases = opmod.cases_of(op, dtype)
      local case = cases[#cases]
      local p = case.params
      local flops = opname == "batched_matmul" and 2 * p.BATCH * p.M ^ 3 or 2 * p.M * p.N * p.K
      local ctx <close> = context.new(op, case)
      local ins = op.module.inputs(case, ctx)
      local refs = op.module.outputs(case, ins, ctx)
      op.module.reference(case, ins, refs, ctx):run()
      local lib_ms
      local runs = { { "lib", {} } }
      local spec = op.module.implementations.cuda
      runs[#runs + 1] = { "cuda", spec.default }
      if not quick then
        for _, c in ipairs(EXTRA) do
          if spec.valid(case, c) and not same(c, spec.default) then runs[#runs + 1] = { "cuda", c } end
        end
      end
      for _, r in ipairs(runs) do
        local impl, cfg = r[1], r[2]
        local ok, err = pcall(function()
          local outs = op.module.outputs(case, ins, ctx)
          for _, t in pairs(outs) do verify.poison(t) end
          local plan = op.module.implementations[impl].plan(case, ins, outs, cfg, ctx)
          plan:run()
          local status = "ok"
          for name, out in pairs(outs) do
            local atol, rtol = config.tolerance(op.config, out.dtype, family)
            local v = verify.compare(out, refs[name], { atol = atol, rtol = rtol })
            if not v.ok then status = string.format("WRONG(%d mismatches, max_abs %.3g)", v.mismatches, v.max_abs or 0) end
          end
          local row = {}
          local res = runner.measure(plan, { flush = true, mode = "adaptive" }, row)
          local ms = res.median
          if impl == "lib" then lib_ms = ms end
          print(string.format("%-20s %-9s %-12s %-5s %-18s %7.4f ms %8.1f %6.0f%s  %s%s", opname, dtype, case.id, impl,
            cfgstr(cfg), ms, flops / (ms * 1e-3) / 1e12, res.sm_clock_mhz or 0, row.clock_note and "s" or " ", status,
            (impl ~= "lib" and lib_ms) and string.format("  = %.0f%% of lib", 100 * lib_ms / ms) or ""))
        end)
        if not ok then print(string.format("%-20s %-9s %-12s %-5s %-18s FAILED: %s", opname, dtype, case.id, impl,
          cfgstr(cfg), tostring(err):match("[^\n]*"))) end
      end
    end
    collectgarbage()
    ::next_dtype::
  end
end
print("MHz: median SM clock of the kept samples; s: every sample was under the throttle threshold,")
print("     kept at the clock the device sustained (tilebench.runner measure)")
