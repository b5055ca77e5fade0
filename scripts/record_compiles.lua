-- record_compiles.lua: compiles operators' kernels with NVRTC (no GPU) and writes one line per
-- compile, "FILE|DEFINES|OPTIONS<TAB>CACHE-KEY", so that two trees' machine code can be compared
-- kernel by kernel with scripts/cubin_text_diff.py even when their cache keys differ (a moved or
-- edited header changes every key). It compiles the defaults (first and last case of each dtype,
-- as the compile_<op> ctests) and every STRIDE-th autotune candidate at each dtype's last case.
-- usage: TILEBENCH_HOME=TREE TILEBENCH_CACHE_DIR=DIR tilebench script scripts/record_compiles.lua LOG STRIDE OP...
local logf = assert(io.open(assert(arg[1], "usage: record_compiles.lua LOG STRIDE OP..."), "a"))
local stride = assert(math.tointeger(tonumber(arg[2])), "STRIDE: an integer >= 1")
local kernel = require("tb.kernel")
local compile = kernel.compile
kernel.compile = function(src, opts)
  local r, log = compile(src, opts)
  if r then
    local keys, parts = {}, {}
    for k in pairs(opts.defines or {}) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(opts.defines[k]) end
    logf:write(opts.name:match("([^/]+)$"), "|", table.concat(parts, ";"), "|", table.concat(opts.options or {}, " "),
               "\t", r.key, "\n")
    logf:flush()
  end
  return r, log
end
local opmod = require("tilebench.operator")
local pre = require("tilebench.precompile")
local failed = 0
for i = 3, #arg do
  local name = arg[i]
  local op = opmod.load(name)
  local items, tuned = {}, {}
  for _, dtype in ipairs(opmod.dtypes(op)) do
    local cases = opmod.cases_of(op, dtype)
    for _, case in ipairs(#cases > 1 and { cases[1], cases[#cases] } or { cases[1] }) do
      items[#items + 1] = { operator = name, dtype = dtype, mode = "default", _case = case, impls = op.impls }
    end
    tuned[#tuned + 1] = { operator = name, dtype = dtype, mode = "autotune", _case = cases[#cases], impls = op.impls }
  end
  local units = pre.units(items)
  local candidates = pre.units(tuned)
  for j = 1, #candidates, stride do units[#units + 1] = candidates[j] end
  local kernels = 0
  for _, u in ipairs(units) do
    local n, err = pre.compile_unit(u)
    if n then kernels = kernels + n
    else failed = failed + 1; io.stderr:write("FAIL ", pre.describe(u), ": ", tostring(err), "\n") end
  end
  print(string.format("%s: %d plans, %d kernel compiles", name, #units, kernels))
end
os.exit(failed == 0 and 0 or 1)
