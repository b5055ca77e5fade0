-- operators_cpu_check.lua (GPU): every implementation of the operators listed by the families in
-- tests/gpu/cpu_check/ (pointwise, reduction, matmul, attention, stencil, sort, layout; the other
-- matmuls are tests/gpu/matmul_check.lua's) against a plain CPU implementation. On small cases with
-- odd sizes (tails of every kind, rows shorter and longer than a warp's reach), per dtype:
--   1. the GPU reference agrees with a plain CPU implementation (Lua, on tensor:to_host(), with the
--      dtype's rounding points emulated) within the operator's tolerance, or bit for bit;
--   2. the `cuda` implementation (and every other default implementation), in its default
--      configuration and in a spread of autotune candidates, verifies against the reference with
--      tb.verify (outputs poisoned first); the row-wise ones also with 2 and 4 rows per group on
--      row counts that leave partial groups, their stream kernels with 1 to 3 slots and grids
--      smaller than the row count, and with FULLVEC = 1 in both kernel families;
--   3. where a family says so, triton's default too (where triton imports), and the family's
--      stated-rule checks on planted inputs (ties, NaN, out-of-range values, replayed plans ...):
--      each family file's head says which.
-- One ctest per family (gpu_operators_cpu_check_<family>, run with --family): they need no timing,
-- so ctest may run them side by side (cmake/tests.cmake); the families share cpu_check/common.lua
-- (rounding, comparisons, the configuration spread, the driver). Exits 77 (skipped) where no device
-- is present.
-- usage: tilebench script tests/gpu/operators_cpu_check.lua [--compile-only] [--family NAME] [OPERATOR ...]
--   --family NAME: the operators of tests/gpu/cpu_check/NAME.lua (with any named after it)
--   --compile-only: no device needed; compiles every kernel the check would run into the NVRTC
--   cache ($TILEBENCH_CACHE_DIR), in compile-only contexts as `tilebench compile` does, so a GPU
--   machine spends its time on the checks (hundreds of configurations: minutes of NVRTC).
local compile_only = arg[1] == "--compile-only"
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev and not compile_only then
  io.stderr:write("skipped: ", tostring(why), "\n")
  os.exit(77)
end

local dir = (arg[0] or ""):match("^(.*)/[^/]*$") or "."
-- The families: every module in cpu_check/ but common (the folder is their one list; cmake's
-- per-family ctests glob the same files).
local FAMILIES = {}
for f in require("lfs").dir(dir .. "/cpu_check") do
  local name = f:match("^([%w_]+)%.lua$")
  if name and name ~= "common" then FAMILIES[#FAMILIES + 1] = name end
end
table.sort(FAMILIES)
package.path = dir .. "/?.lua;" .. package.path
local common = require("cpu_check.common")
local mods = {}
for _, f in ipairs(FAMILIES) do
  mods[f] = require("cpu_check." .. f)
  common.register(mods[f])
end
local words = {}
local i = 1
while i <= #arg do
  if arg[i] == "--family" then
    local fam = mods[arg[i + 1] or ""]
    if not fam then
      io.stderr:write("operators_cpu_check: --family wants one of ", table.concat(FAMILIES, ", "),
        ", not '", tostring(arg[i + 1]), "'\n")
      os.exit(2)
    end
    for _, n in ipairs(fam.order) do words[#words + 1] = n end
    i = i + 2
  else
    words[#words + 1] = arg[i]
    i = i + 1
  end
end
os.exit(common.main(words))
