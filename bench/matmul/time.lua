-- Times `cuda` (every listed configuration) against cuBLASLt `lib` at the largest case of each
-- dtype of the matmul operators, after verifying each plan once against the reference.
-- usage: tilebench script bench/matmul/time.lua [--quick]
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local opmod, context, config = require("tilebench.operator"), require("tilebench.context"), require("tilebench.config")
local timer, verify = require("tb.timer"), require("tb.verify")
local quick = arg[1] == "--quick"

local EXTRA = { -- configurations timed besides the default (the autotune space's likely winners)
  { VARIANT = "wgmma", BN = 256, STAGES = 3 }, { VARIANT = "wgmma", BN = 256, STAGES = 4 },
  { VARIANT = "wgmma", BN = 128, STAGES = 4 }, { VARIANT = "wgmma", BN = 128, STAGES = 6 },
  { VARIANT = "mma", BN = 128, STAGES = 3 }, { VARIANT = "mma", BN = 128, STAGES = 4 },
}

local function cfgstr(c) return c.VARIANT and string.format("%s BN=%d ST=%d", c.VARIANT, c.BN, c.STAGES) or "" end

for _, opname in ipairs({ "matmul_fp32_fp16_fp8", "batched_matmul" }) do
  local op = opmod.load(opname)
  local family = device.props().family
  for _, dtype in ipairs(opmod.dtypes(op)) do
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
        if spec.valid(case, c) and not (c.VARIANT == spec.default.VARIANT and c.BN == spec.default.BN and c.STAGES == spec.default.STAGES) then
          runs[#runs + 1] = { "cuda", c }
        end
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
        local ms = timer.measure(plan, { flush = true, mode = "adaptive" }).median
        if impl == "lib" then lib_ms = ms end
        print(string.format("%-22s %-9s %-12s %-5s %-22s %9.4f ms %7.1f TFLOP/s  %s%s", opname, dtype, case.id, impl,
          cfgstr(cfg), ms, flops / (ms * 1e-3) / 1e12, status,
          (impl ~= "lib" and lib_ms) and string.format("  = %.0f%% of lib", 100 * lib_ms / ms) or ""))
      end)
      if not ok then print(string.format("%-22s %-9s %-12s %-5s %-22s FAILED: %s", opname, dtype, case.id, impl, cfgstr(cfg),
        tostring(err):match("[^\n]*"))) end
    end
    collectgarbage()
  end
end
