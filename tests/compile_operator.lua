-- Compiles every kernel an operator uses with NVRTC, without a GPU: the reference and each
-- implementation's default configuration (and, with --all, every autotune candidate), for the
-- first and last case of every dtype (implementations with a `source`; library ones need a
-- GPU to plan). Fails on a compile error, a plan that names a kernel its
-- source does not define, or an operator.lua that errors. The plans are tilebench.precompile's,
-- the ones `tilebench compile` makes.
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
local pre = require("tilebench.precompile")

local op = opmod.load(opname)
local items = {}
for _, dtype in ipairs(opmod.dtypes(op)) do
  local cases = opmod.cases_of(op, dtype)
  local picks = { cases[1] }
  if #cases > 1 then picks[2] = cases[#cases] end
  if every_case then picks = cases end
  if last_only then picks = { cases[#cases] } end
  for _, case in ipairs(picks) do
    items[#items + 1] = { operator = opname, dtype = dtype, mode = all and "autotune" or "default", _case = case,
                          impls = op.impls }
  end
end

local compiled, failures = 0, {}
for _, u in ipairs(pre.units(items)) do
  local n, err = pre.compile_unit(u)
  if n then compiled = compiled + n else failures[#failures + 1] = pre.describe(u) .. ": " .. err end
end

if #failures > 0 then
  for _, f in ipairs(failures) do io.stderr:write("FAIL ", f, "\n") end
  io.stderr:write(string.format("%s: %d failure(s)\n", opname, #failures))
  os.exit(1)
end
print(string.format("%s: %d kernel compiles for sm_90 passed (NVRTC, no GPU)", opname, compiled))
os.exit(compiled > 0 and 0 or 1)
