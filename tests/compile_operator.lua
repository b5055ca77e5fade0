-- Compiles every kernel an operator uses with NVRTC, without a GPU: the reference and each
-- implementation's default configuration (and, with --all, every autotune candidate), for the
-- first and last case of every dtype (implementations with a `source`; library ones need a
-- GPU to plan). Fails on a compile error, a plan that names a kernel its
-- source does not define, or an operator.lua that errors.
-- --every-case compiles the defaults of every case of the grid, not only the first and last (to
-- warm the NVRTC cache, $TILEBENCH_CACHE_DIR, before a run on the GPU machine).
-- --last: only the last case of each dtype (the one `tilebench run --autotune --cases last` times).
-- usage: tilebench script tests/compile_operator.lua OPERATOR [--all] [--every-case | --last]
local opname, all, every_case, last_only = arg[1], false, false, false
for i = 2, #arg do
  if arg[i] == "--all" then all = true
  elseif arg[i] == "--every-case" then every_case = true
  elseif arg[i] == "--last" then last_only = true
  else error("unknown option " .. arg[i] .. " (want --all, --every-case or --last)", 0) end
end
local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local runner = require("tilebench.runner")

local op = opmod.load(opname)
local compiled, failures = 0, {}

local function check_steps(where, case, steps)
  if type(steps) ~= "table" then
    failures[#failures + 1] = where .. ": plan returned " .. type(steps)
    return
  end
  for i, step in ipairs(steps) do
    if step.fn then
      if type(step.fn) ~= "table" or not step.fn.compiled then
        failures[#failures + 1] = string.format("%s: step %d has no compiled kernel", where, i)
      else
        compiled = compiled + 1
      end
    end
  end
end

local function try(where, f)
  local ok, err = xpcall(f, debug.traceback)
  if not ok then failures[#failures + 1] = where .. ": " .. tostring(err) end
end

for _, dtype in ipairs(opmod.dtypes(op)) do
  local cases = opmod.cases_of(op, dtype)
  local picks = { cases[1] }
  if #cases > 1 then picks[2] = cases[#cases] end
  if every_case then picks = cases end
  if last_only then picks = { cases[#cases] } end
  for _, case in ipairs(picks) do
    local ctx = context.new(op, case, { compile_only = true })
    local where = string.format("%s %s %s", opname, dtype, case.id)
    try(where .. " reference", function()
      local ins = op.module.inputs(case, ctx)
      local refs = op.module.outputs(case, ins, ctx)
      check_steps(where .. " reference", case, op.module.reference(case, ins, refs, ctx))
      for _, impl in ipairs(op.impls) do
        local spec = op.module.implementations[impl]
        local supported = true
        if spec.supports then supported = spec.supports(case, ctx) end
        -- Library implementations (no kernel source of their own) need a GPU to plan.
        if supported and (spec.source or spec.sources) then
          local cfgs = all and runner.candidates(spec) or { spec.default or {} }
          for _, cfg in ipairs(cfgs) do
            if not spec.valid or spec.valid(case, cfg) then
              try(where .. " " .. impl .. " {" .. runner.config_string(cfg) .. "}", function()
                local outs = op.module.outputs(case, ins, ctx)
                check_steps(where .. " " .. impl, case, spec.plan(case, ins, outs, cfg, ctx))
              end)
            end
          end
        end
      end
    end)
  end
end

if #failures > 0 then
  for _, f in ipairs(failures) do io.stderr:write("FAIL ", f, "\n") end
  io.stderr:write(string.format("%s: %d failure(s)\n", opname, #failures))
  os.exit(1)
end
print(string.format("%s: %d kernel compiles for sm_90 passed (NVRTC, no GPU)", opname, compiled))
os.exit(compiled > 0 and 0 or 1)
