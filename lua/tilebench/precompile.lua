-- precompile.lua: compiles, with NVRTC and without a GPU, every kernel a run of some work items
-- would compile, so that the run finds them in the on-disk cache ($TILEBENCH_CACHE_DIR). The
-- plans are made in compile-only contexts (context.lua: H200 figures, fake tensors), exactly as
-- `tilebench run` makes them: the reference, and each implementation with a kernel source in
-- its default configuration or, for autotune items, in every candidate its `valid` accepts.
-- Library implementations (no source) need a GPU to plan and are left out.
local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local runner = require("tilebench.runner")

local M = {}

-- The plans of a list of work items (campaign.plan_items), each a unit:
-- { op, case, dtype, impl (nil: the reference), cfg }. Units are in a fixed order, so that
-- processes given the same items agree on the k-th unit.
function M.units(items)
  local units, seen, ops = {}, {}, {}
  for _, it in ipairs(items) do
    local op = ops[it.operator] or opmod.load(it.operator)
    ops[it.operator] = op
    local case = it._case
    local key = it.operator .. "|" .. it.dtype .. "|" .. tostring(case.id) .. "|" .. it.mode
    if not seen[key] then
      seen[key] = true
      units[#units + 1] = { op = op, case = case, dtype = it.dtype }
      local ctx = context.new(op, case, { compile_only = true })
      for _, impl in ipairs(it.impls or op.impls) do
        local spec = op.module.implementations[impl]
        if spec and (spec.source or spec.sources) and (not spec.supports or spec.supports(case, ctx)) then
          local cfgs = it.mode == "autotune" and runner.candidates(spec) or { spec.default or {} }
          for _, cfg in ipairs(cfgs) do
            if not spec.valid or spec.valid(case, cfg) then
              units[#units + 1] = { op = op, case = case, dtype = it.dtype, impl = impl, cfg = cfg }
            end
          end
        end
      end
      ctx:close()
    end
  end
  return units
end

function M.describe(u)
  local what = u.impl and (u.impl .. " {" .. runner.config_string(u.cfg) .. "}") or "reference"
  return string.format("%s %s %s %s", u.op.name, u.dtype, tostring(u.case.id), what)
end

-- Compiles one unit's plan. Returns the number of kernels its plan has, or nil and the error
-- (also when the plan is not a step list, or a step names a kernel its source does not define).
function M.compile_unit(u)
  local ctx = context.new(u.op, u.case, { compile_only = true })
  local ok, res = xpcall(function()
    local ins = u.op.module.inputs(u.case, ctx)
    local outs = u.op.module.outputs(u.case, ins, ctx)
    local steps
    if u.impl then
      steps = u.op.module.implementations[u.impl].plan(u.case, ins, outs, u.cfg, ctx)
    else
      steps = u.op.module.reference(u.case, ins, outs, ctx)
    end
    if type(steps) ~= "table" then error("plan returned " .. type(steps), 0) end
    local n = 0
    for i, step in ipairs(steps) do
      if step.fn then
        if type(step.fn) ~= "table" or not step.fn.compiled then
          error(string.format("step %d has no compiled kernel", i), 0)
        end
        n = n + 1
      end
    end
    return n
  end, function(e) return debug.traceback(tostring(e), 2) end) -- a tb.error (compile) as its text
  ctx:close()
  if ok then return res end
  return nil, tostring(res)
end

return M
