-- Runs one `cuda` (or `lib`) plan of a matmul operator's largest case a few times and nothing else,
-- for a profiler to attach to (no timer: CUPTI and ncu do not share a process).
-- usage: ncu -k regex:gemm ... tilebench script bench/matmul/profile.lua OP DTYPE IMPL [V:BN:ST[:KEY=N] | -] [RUNS]
-- ("-": the implementation's default configuration, or none for `lib`)
local opmod, context = require("tilebench.operator"), require("tilebench.context")
local opname, dtype, impl, cfgs, runs = arg[1], arg[2], arg[3], arg[4], tonumber(arg[5] or "2")
local op = opmod.load(opname)
local cases = opmod.cases_of(op, dtype)
local case = cases[#cases]
local cfg = {}
if cfgs == "-" then
  cfgs = nil
  cfg = op.module.implementations[impl].default or {}
elseif cfgs then
  local v, bn, st, rest = cfgs:match("^(%a+):(%d+):(%d+)(.*)$")
  if not v then error("bad configuration " .. cfgs .. " (want VARIANT:BN:STAGES[:KEY=N...] or -)", 0) end
  cfg = { VARIANT = v, BN = tonumber(bn), STAGES = tonumber(st) }
  for k, n in rest:gmatch(":(%u+)=(%d+)") do cfg[k] = tonumber(n) end
end
local ctx <close> = context.new(op, case)
local ins = op.module.inputs(case, ctx)
local outs = op.module.outputs(case, ins, ctx)
local plan = op.module.implementations[impl].plan(case, ins, outs, cfg, ctx)
for _ = 1, runs do plan:run() end
print(string.format("%s %s %s %s: %d runs", opname, dtype, case.id, cfgs or impl, runs))
