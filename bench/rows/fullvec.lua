-- bench/rows/fullvec.lua (GPU): for the row operators' register kernel (STAGES = 0, automatic
-- layout), the median time with bound checks per element (FULLVEC = 0) and per whole vector
-- (FULLVEC = 1) at every case of the grid, and the default configuration's (the stream rule's)
-- for reference; each output verified against the reference first.
-- usage: tilebench script bench/rows/fullvec.lua [--compile-only] [OP,OP] [DTYPE,DTYPE]
--   (default softmax,argmax fp16; --compile-only: no GPU, fills the NVRTC cache for a GPU session)
local opmod, context, runner = require("tilebench.operator"), require("tilebench.context"), require("tilebench.runner")
local config, verify, device = require("tilebench.config"), require("tb.verify"), require("tb.device")
local function list(s) local t = {} for w in s:gmatch("[^,]+") do t[#t + 1] = w end return t end
local compile_only = arg[1] == "--compile-only"
if compile_only then table.remove(arg, 1) end
local ops = list(arg[1] or "softmax,argmax")
local dtypes = {}
for _, d in ipairs(list(arg[2] or "fp16")) do dtypes[d] = true end
if compile_only then
  local n = 0
  for _, opname in ipairs(ops) do
    local op = opmod.load(opname)
    for _, dtype in ipairs(opmod.dtypes(op)) do
      if dtypes[dtype] then
        for _, case in ipairs(opmod.cases_of(op, dtype)) do
          local ctx <close> = context.new(op, case, { compile_only = true })
          local ins = op.module.inputs(case, ctx)
          local outs = op.module.outputs(case, ins, ctx)
          op.module.reference(case, ins, outs, ctx)
          for fv = 0, 1 do
            op.module.implementations.cuda.plan(case, ins, outs, { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 0, FULLVEC = fv }, ctx)
            n = n + 1
          end
        end
      end
    end
  end
  print(string.format("compiled %d register-kernel plans", n))
  os.exit(0)
end
local family = device.props().family
print(string.format("%-10s %-6s %-14s %12s %12s %12s", "operator", "dtype", "case", "reg FV0 us", "reg FV1 us",
  "default us"))
for _, opname in ipairs(ops) do
  local op = opmod.load(opname)
  for _, dtype in ipairs(opmod.dtypes(op)) do
    if dtypes[dtype] then
      for _, case in ipairs(opmod.cases_of(op, dtype)) do
        local ctx <close> = context.new(op, case)
        local ins = op.module.inputs(case, ctx)
        local refs = op.module.outputs(case, ins, ctx)
        op.module.reference(case, ins, refs, ctx):run()
        local spec = op.module.implementations.cuda
        local cfgs = { { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 0, FULLVEC = 0 },
                       { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 0, FULLVEC = 1 }, spec.default }
        local times = {}
        for i, cfg in ipairs(cfgs) do
          local ok, err = pcall(function()
            local outs = op.module.outputs(case, ins, ctx)
            for _, t in pairs(outs) do verify.poison(t) end
            local plan = spec.plan(case, ins, outs, cfg, ctx)
            plan:run()
            for name, out in pairs(outs) do
              local atol, rtol = config.tolerance(op.config, out.dtype, family)
              local v = verify.compare(out, refs[name], { atol = atol, rtol = rtol })
              if not v.ok then error(string.format("WRONG (%d mismatches)", v.mismatches), 0) end
            end
            times[i] = string.format("%12.2f", runner.measure(plan, { flush = true, mode = "adaptive" }, {}).median * 1e3)
          end)
          if not ok then times[i] = string.format("%12s", tostring(err):sub(1, 12)) end
        end
        print(string.format("%-10s %-6s %-14s %s %s %s", opname, dtype, tostring(case.id), times[1], times[2], times[3]))
        collectgarbage()
      end
    end
  end
end
