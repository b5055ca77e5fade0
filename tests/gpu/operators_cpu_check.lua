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
-- One ctest (gpu_operators_cpu_check); the families share cpu_check/common.lua (rounding,
-- comparisons, the configuration spread, the driver). Exits 77 (skipped) where no device is present.
-- usage: tilebench script tests/gpu/operators_cpu_check.lua [--compile-only] [OPERATOR ...]
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

-- The families, in the order they run; each a module tests/gpu/cpu_check/<name>.lua.
local FAMILIES = { "pointwise", "reduction", "matmul", "attention", "stencil", "sort", "layout" }

local dir = (arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local common = require("cpu_check.common")
for _, f in ipairs(FAMILIES) do common.register(require("cpu_check." .. f)) end
local words = {}
for i = 1, #arg do words[i] = arg[i] end
os.exit(common.main(words))
