#!/usr/bin/env bash
# conv_wgmma_emulate.sh: the tiles conv_wgmma.lua resolves (the convolutions' `cuda` VARIANT wgmma)
# for small odd cases of every rank (groups, padding 0 to 2, kernels 1, 3 and 5, partial channel
# blocks and K chunks, rows of several tiles, both load paths, fp16 and fp32 element sizes, BM 64
# and 128, automatic and explicit tiles), run through conv_wgmma_emulate.py's numpy model of
# conv_wgmma.cu against a direct cross-correlation. No GPU. Skips (77) without numpy.
set -u
TB=${TILEBENCH:?}
HOME_DIR=${TILEBENCH_HOME:?}
python3 -c "import numpy" 2>/dev/null || { echo "no numpy: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/geometries.lua" <<'LUA'
local conv, cw = require("conv"), require("conv_wgmma")
local function case(rank, p)
  local q = { batch = 1, groups = 1, stride = 1 }
  for k, v in pairs(p) do q[k] = v end
  return q
end
local CASES = {
  { 2, case(2, { in_channels = 20, out_channels = 24, H = 5, W = 16, kernel_size = 3, padding = 1, groups = 2 }) },
  { 2, case(2, { in_channels = 6, out_channels = 10, H = 11, W = 13, kernel_size = 3, padding = 1, groups = 2 }) },
  { 2, case(2, { in_channels = 16, out_channels = 70, H = 6, W = 40, kernel_size = 3, padding = 0 }) },
  { 2, case(2, { in_channels = 8, out_channels = 8, H = 6, W = 20, kernel_size = 5, padding = 2 }) },
  { 2, case(2, { in_channels = 16, out_channels = 80, H = 3, W = 96, kernel_size = 3, padding = 1 }) },
  { 3, case(3, { batch = 2, in_channels = 9, out_channels = 8, D = 3, H = 4, W = 8, kernel_size = 3, padding = 1 }) },
  { 3, case(3, { in_channels = 24, out_channels = 72, D = 3, H = 3, W = 16, kernel_size = 3, padding = 1 }) },
  { 1, case(1, { in_channels = 8, out_channels = 8, L = 300, kernel_size = 3, padding = 1 }) },
  { 1, case(1, { in_channels = 6, out_channels = 4, L = 37, kernel_size = 1, padding = 0 }) },
}
local CFGS = { { BM = 0, BN = 0, TW = 0, BCB = 32, STAGES = 0 }, { BM = 64, BN = 64, TW = 16, BCB = 64, STAGES = 3 },
               { BM = 128, BN = 0, TW = 0, BCB = 64, STAGES = 3 } }
for _, cd in ipairs(CASES) do
  for _, dt in ipairs({ "fp16", "fp32" }) do
    for _, cfg in ipairs(CFGS) do
      local c = { params = cd[2], dtype = dt }
      local t = conv.dims(c, cd[1])
      local g = cw.geometry(t, dt, cfg, 132, 232448)
      if g then
        print(string.format("geometry %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d", t.b, t.cin, t.cout,
          t.sp[1], t.sp[2], t.sp[3], t.k[1], t.k[2], t.k[3], t.pad[1], t.pad[2], t.pad[3], t.groups, g.es, g.bm,
          g.th, g.tw, cfg.BCB, g.nv))
      end
    end
  end
end
LUA
"$TB" script "$work/geometries.lua" > "$work/geometries.txt" || { echo "FAIL: the geometry script"; exit 1; }
n=$(grep -c '^geometry' "$work/geometries.txt")
[ "$n" -ge 40 ] || { echo "FAIL: only $n geometries"; cat "$work/geometries.txt"; exit 1; }
python3 "$HOME_DIR/tests/cli/conv_wgmma_emulate.py" < "$work/geometries.txt"
