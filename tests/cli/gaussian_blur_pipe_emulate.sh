#!/usr/bin/env bash
# gaussian_blur_pipe_emulate.sh: the launches gaussian_blur's `cuda` plan makes with PIPE 2 or 3 (the
# pipelined tensor-core kernel, gaussian_blur_pipe) for small odd cases (one row, partial column
# strips and bands, 3 x 5, 4 x 6, 1 x 1 and 9 x 9 kernels, a tall strip whose ring wraps many
# times), fp16 and fp32, over the space's PIPE > 0 configurations of one and two warps a block
# and the default, run through gaussian_blur_pipe_emulate.py's numpy model of the kernel against a
# direct correlation. No GPU. Skips (77) without numpy.
set -u
TB=${TILEBENCH:?}
HOME_DIR=${TILEBENCH_HOME:?}
python3 -c "import numpy" 2>/dev/null || { echo "no numpy: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/geometries.lua" <<'LUA'
local op = require("tilebench.operator").load("gaussian_blur")
local spec = op.module.implementations.cuda
local CASES = { { 1, 40, 7, 7 }, { 37, 1000, 7, 7 }, { 33, 264, 3, 5 }, { 20, 36, 4, 6 }, { 9, 16, 1, 1 },
                { 70, 200, 9, 9 }, { 300, 64, 7, 7 } }
local function fake_ctx()
  local c = { kernels = {} }
  c.ctype = function(d) return require("tb.dtype").info[d].c_type end
  c.cdiv = function(a, b) return (a + b - 1) // b end
  -- a 2-SM device: SEGB = 0 then gives these small images several bands a block (on 132 SMs one,
  -- and the plan runs the one-tile kernel instead)
  c.props = { sm_count = 2, smem_per_sm = 233472 }
  c.plan = function(steps) return steps end
  c.i32 = function(v) return v end
  c.kernel = function(_, file, name, defines)
    c.kernels[#c.kernels + 1] = { file = file, name = name, defines = defines }
    return name
  end
  return c
end
local cfgs = { spec.default }
for _, cfg in ipairs(require("tilebench.runner").candidates(spec)) do
  if cfg.PIPE > 0 and cfg.MMA == 1 and cfg.BX <= 64 then cfgs[#cfgs + 1] = cfg end
end
for _, p in ipairs(CASES) do
  for _, dt in ipairs({ "fp16", "fp32" }) do
    local c = { dtype = dt, params = { input_rows = p[1], input_cols = p[2], kernel_rows = p[3], kernel_cols = p[4] } }
    for _, cfg in ipairs(cfgs) do
      if spec.valid(c, cfg) then
        local ctx = fake_ctx()
        local st = spec.plan(c, { input = "x", kernel = "w" }, { out = "y" }, cfg, ctx)[1]
        local k = ctx.kernels[1]
        if k.name == "gaussian_blur_pipe" then
          local d = k.defines
          print(string.format("geometry %d %d %d %d %d %d %d %d %d", p[1], p[2], d.KR, d.KC,
            require("tb.dtype").info[dt].size, d.BX, d.NB, d.STAGES, st.args[6]))
        end
      end
    end
  end
end
LUA
"$TB" script "$work/geometries.lua" > "$work/geometries.txt" || { echo "FAIL: the geometry script"; cat "$work/geometries.txt"; exit 1; }
n=$(grep -c '^geometry' "$work/geometries.txt")
[ "$n" -ge 220 ] || { echo "FAIL: only $n geometries"; cat "$work/geometries.txt"; exit 1; }
python3 "$HOME_DIR/tests/cli/gaussian_blur_pipe_emulate.py" < "$work/geometries.txt"
