-- checks.lua: is a verified, timed implementation honest? (issue 20). Benchmarks of generated
-- kernels report implementations that pass a single verification and still cheat the timing:
-- a result computed once and cached, inputs used as scratch, work the timer does not see. After
-- the timed runs, runner.lua (for items with `checks`, which `tilebench eval` always sets) runs:
--
--   inputs_unchanged  every input equals, bit for bit, its copy taken before the first run
--   kernel_count      kernels per timed run (CUPTI's records) = the launches the plan made
--   reverify          the outputs are poisoned and the plan run once more: they must verify again
--                     (a kernel that computes once and then skips leaves the poison)
--   fresh_inputs      the operator's own inputs drawn with another seed are copied into the same
--                     input buffers, the reference runs again, and the plan's outputs must verify
--                     against it (a result remembered from the first inputs does not)
--
-- Each gives {name, status = ok | refused | skipped, reason}; the first refusal is the row's
-- status `refused` with its reason. What the candidate format makes impossible instead of
-- checked (its own streams, library calls, timer patches) is in docs/GENERATION.md.
--
--   checks.wanted(item, impl)  -> whether item's checks cover impl (item.checks: true = every
--                                 implementation, a list = the ones named)
--   checks.snapshot(ins, ctx)  -> {name -> copy} (freed with the case's tensors)
--   checks.after(env)          -> list, refused reason | nil
--     env = {op, case, ins, outs, plan, finish, rplan, res (the timer's result), snapshot, ctx,
--            verify = function() -> ok, report (outs against the reference outputs),
--            mismatch = function(report) -> text}
local tensor = require("tb.tensor")
local verify = require("tb.verify")

local M = {}

local function sorted_tensors(t)
  local names = {}
  for k, v in pairs(t) do if tensor.is_tensor(v) then names[#names + 1] = k end end
  table.sort(names)
  return names
end

function M.wanted(item, impl)
  local c = item.checks
  if c == true then return true end
  if type(c) ~= "table" then return false end
  for _, name in ipairs(c) do if name == impl then return true end end
  return false
end

function M.snapshot(ins, ctx)
  local snap = {}
  for _, name in ipairs(sorted_tensors(ins)) do
    local c = ins[name]:copy()
    ctx.tensors[#ctx.tensors + 1] = c
    snap[name] = c
  end
  return snap
end

-- The seed the fresh inputs are drawn from: another stream of the case's seed, never the same.
function M.fresh_seed(seed)
  return require("tilebench.grid").hash(tostring(seed) .. "/fresh-inputs")
end

local function inputs_unchanged(env)
  for _, name in ipairs(sorted_tensors(env.snapshot)) do
    local r = verify.compare(env.ins[name], env.snapshot[name], { atol = 0, rtol = 0, max_report = 1 })
    if not r.ok then
      local f = r.first and r.first[1]
      return "refused", string.format("input '%s' was changed by the implementation: %d of %d elements differ%s",
        name, r.mismatches, r.numel, f and string.format(" (first at [%d]: %s, was %s)", f.index,
          tostring(f.got), tostring(f.expected)) or "")
    end
  end
  return "ok"
end

local function kernel_count(env)
  local res = env.res or {}
  if res.clock ~= "cupti" then
    return "skipped", "kernel records need the cupti clock (this measurement used " .. tostring(res.clock) .. ")"
  end
  -- plan:kernels() counts a library call (cuBLAS, cuDNN, CUB, a torch call) as one launch, so the
  -- steps' kinds decide: a plan with any step other than a kernel launch has work it does not count
  for _, st in ipairs(env.plan:describe()) do
    if st.kind ~= "kernel" then
      return "skipped", string.format("the plan makes a %s step (%s), whose kernels it does not count", st.kind,
        tostring(st.name))
    end
  end
  local want = env.plan:kernels()
  local got = res.kernels_per_run
  if type(got) ~= "number" then return "skipped", "the timer reported no kernel count" end
  if got > want then
    return "refused", string.format("%g kernels ran per timed run, the plan launches %d: work the plan did not launch",
      got, want)
  end
  if got < want then -- not the implementation's doing (it cannot cancel a launch): no finding
    return "skipped", string.format("CUPTI recorded %g kernels per timed run of the plan's %d", got, want)
  end
  return "ok"
end

local function run_and_verify(env)
  for _, t in pairs(env.outs) do if tensor.is_tensor(t) then verify.poison(t) end end
  env.plan:run()
  if env.finish then
    local ok, why = env.finish()
    if not ok then return false, why end
  end
  local ok, report = env.verify()
  if ok then return true end
  return false, env.mismatch(report), report
end

local function reverify(env)
  local ok, why = run_and_verify(env)
  if ok then return "ok" end
  return "refused", "the outputs of a run after the timed runs do not verify (a result kept from an earlier call?): " .. why
end

local function fresh_inputs(env)
  local context = require("tilebench.context")
  local case2 = {}
  for k, v in pairs(env.case) do case2[k] = v end
  case2.seed = M.fresh_seed(env.case.seed)
  local ctx2 <close> = context.new(env.op, case2, { props = env.ctx.props })
  local fresh = env.op.module.inputs(case2, ctx2)
  for _, name in ipairs(sorted_tensors(env.ins)) do
    if tensor.is_tensor(fresh[name]) then env.ins[name]:copy_from(fresh[name]) end
  end
  env.rplan:run()
  local ok, why = run_and_verify(env)
  if ok then return "ok" end
  return "refused", string.format("wrong on fresh inputs (seed %s) in the same buffers: %s", tostring(case2.seed), why)
end

M.ORDER = { { "inputs_unchanged", inputs_unchanged }, { "kernel_count", kernel_count },
            { "reverify", reverify }, { "fresh_inputs", fresh_inputs } }

function M.after(env)
  local list, refused = {}, nil
  for _, c in ipairs(M.ORDER) do
    local status, reason
    if refused then
      status, reason = "skipped", "after a refusal"
    else
      status, reason = c[2](env)
    end
    list[#list + 1] = { name = c[1], status = status, reason = reason }
    if status == "refused" and not refused then refused = c[1] .. ": " .. reason end
  end
  return list, refused
end

return M
