-- cpu_check/stencil.lua (GPU, part of tests/gpu/operators_cpu_check.lua): issue 18's stencils and
-- windows (docs/STENCILS.md): jacobi_stencil_2d bit for bit, gaussian_blur with its generated
-- kernel checked, 2d_max_pooling with planted NaN and -inf; each also in its triton default. The
-- convolutions 1d_conv, 2d_conv and 3d_conv (docs/CONV.md) against a double-precision CPU sum on
-- odd sizes, strides 1 and 2, padding 0 to 2, kernels 3 and 5, groups 1 to 4; each also in its
-- triton default (at these sizes mostly split over the K steps: SPLIT) and, at two cases, a spread
-- of the triton space (both input layouts, the fp16 register prefetch, BM 64 to 256); on sm_90
-- the cuda VARIANT wgmma in each of its tile shapes at the cases of stride 1 (WGMMA_CONFIGS).
-- gaussian_blur's cuda tensor-core kernel (MMA = 1) also over its whole space on the cases it takes.
-- The table it returns is described in cpu_check/common.lua.
local C = require("cpu_check.common")
local context = require("tilebench.context")
local verify = require("tb.verify")
local dtypes = require("tb.dtype").info
local round_to = C.round_to
local fail = C.fail
local compare_cpu = C.compare_cpu
local check_impls = C.check_impls
local host_all = C.host_all
local with_triton = C.with_triton

local cpu = {}

-- ---- issue 18's stencils (docs/STENCILS.md) ------------------------------------------------
-- jacobi_stencil_2d: boundary rows and columns copied; interior ((up + down) + left) + right,
-- each sum rounded to the dtype, then * 0.25 rounded (PyTorch eager).
function cpu.jacobi_stencil_2d(c, h)
  local rows, cols = c.params.rows, c.params.cols or c.params.rows
  local x, out, dt = h.input, {}, c.dtype
  for r = 0, rows - 1 do
    for j = 0, cols - 1 do
      local i = r * cols + j + 1
      if r == 0 or r == rows - 1 or j == 0 or j == cols - 1 then
        out[i] = x[i]
      else
        local t = round_to(dt, x[i - cols] + x[i + cols])
        t = round_to(dt, t + x[i - 1])
        t = round_to(dt, t + x[i + 1])
        out[i] = round_to(dt, 0.25 * t)
      end
    end
  end
  return out
end

-- gaussian_blur: the zero-padded "same" cross-correlation summed in double, rounded once. The
-- generated kernel is checked too: values in [0, 1] summing to 1 within the dtype's rounding.
function cpu.gaussian_blur(c, h)
  local p = c.params
  local R, NC, kr, kc = p.input_rows, p.input_cols or p.input_rows, p.kernel_rows, p.kernel_cols
  local x, w, out = h.input, h.kernel, {}
  local sum, bad = 0, false
  for i = 1, kr * kc do
    sum = sum + w[i]
    bad = bad or w[i] < 0 or w[i] > 1
  end
  C.count()
  if bad or math.abs(sum - 1) > kr * kc * (c.dtype == "fp32" and 1e-6 or 1e-3) then
    fail("gaussian_blur %s: the generated kernel sums to %.9g (values in [0, 1]: %s)", c.dtype, sum, tostring(not bad))
  end
  local hr, hc = kr // 2, kc // 2
  for r = 0, R - 1 do
    for col = 0, NC - 1 do
      local s = 0.0
      for a = 0, kr - 1 do
        local rr = r + a - hr
        if rr >= 0 and rr < R then
          local base, wb = rr * NC + 1, a * kc + 1
          for b = 0, kc - 1 do
            local cc = col + b - hc
            if cc >= 0 and cc < NC then s = s + x[base + cc] * w[wb + b] end
          end
        end
      end
      out[r * NC + col + 1] = round_to(c.dtype, s)
    end
  end
  return out
end

-- 2d_max_pooling: the K x K window's maximum, positions outside the image skipped (-inf padding),
-- a NaN in the window giving NaN (PyTorch's max_pool2d); exact.
cpu["2d_max_pooling"] = function(c, h)
  local p = c.params
  local planes, H, W = p.N * p.C, p.H, p.W or p.H
  local K, S, P = p.kernel_size, p.stride, p.padding
  local Ho, Wo = (H + 2 * P - K) // S + 1, (W + 2 * P - K) // S + 1
  local x, out = h.input, {}
  for pl = 0, planes - 1 do
    for oh = 0, Ho - 1 do
      for ow = 0, Wo - 1 do
        local m = -math.huge
        for a = 0, K - 1 do
          local r = oh * S - P + a
          if r >= 0 and r < H then
            for b = 0, K - 1 do
              local col = ow * S - P + b
              if col >= 0 and col < W then
                local v = x[(pl * H + r) * W + col + 1]
                if m == m and (v ~= v or v > m) then m = v end
              end
            end
          end
        end
        out[(pl * Ho + oh) * Wo + ow + 1] = m
      end
    end
  end
  return out
end

local CASES = {
  -- one row, one column, 2 x 2 (no interior), odd shapes (one element a thread), shapes whose
  -- cols take 16-byte vectors (1000: fp32 and fp16 alike) with partial warps and blocks, the
  -- grid's first case, and strips of several rows a block with tails (the ROWS spread)
  jacobi_stencil_2d = { dtypes = { "fp16", "bf16", "fp32" }, exact = true,
                        params = { { rows = 1, cols = 9 }, { rows = 7, cols = 1 }, { rows = 2 }, { rows = 5, cols = 7 },
                                   { rows = 37, cols = 1000 }, { rows = 130, cols = 1030 }, { rows = 512 },
                                   { rows = 301, cols = 264 }, { rows = 3, cols = 4104 } } },
  -- one row, an image smaller than the kernel, odd shapes (one element a thread: halos from three
  -- lanes away), 1000 / 264 / 4104 columns (16-byte vectors, one or two a thread, partial warps),
  -- the grid's first case, 3 x 5 and even (4 x 6) kernels, a 1 x 1 kernel
  gaussian_blur = { dtypes = { "fp16", "fp32" },
                    params = { { input_rows = 1, input_cols = 40, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 5, input_cols = 3, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 37, input_cols = 1000, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 130, input_cols = 1030, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 512, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 33, input_cols = 264, kernel_rows = 3, kernel_cols = 5 },
                               { input_rows = 20, input_cols = 36, kernel_rows = 4, kernel_cols = 6 },
                               { input_rows = 9, input_cols = 16, kernel_rows = 1, kernel_cols = 1 },
                               { input_rows = 64, input_cols = 4104, kernel_rows = 7, kernel_cols = 7 },
                               -- the tensor-core kernel's widest reach (4 columns either side), a
                               -- second tile of rows and columns both partial; a kernel wider than
                               -- it takes (the default sends it to the register kernel)
                               { input_rows = 70, input_cols = 200, kernel_rows = 9, kernel_cols = 9 },
                               { input_rows = 12, input_cols = 64, kernel_rows = 5, kernel_cols = 11 } } },
  -- one pixel, odd shapes (one output a thread; the last window past the right and bottom
  -- edges), H odd with vector rows (33 x 48), W a vector multiple for fp32 only (40), the grid's
  -- first case, strips over a taller image, and kernel / stride / padding other than the grid's
  -- (the reference and triton only: cuda is unsupported there)
  ["2d_max_pooling"] = { dtypes = { "fp16", "bf16", "fp32" }, exact = true,
    params = { { N = 1, C = 1, H = 1, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 2, H = 5, W = 7, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 5, H = 33, W = 48, kernel_size = 3, stride = 2, padding = 1 },
               { N = 2, C = 3, H = 64, W = 40, kernel_size = 3, stride = 2, padding = 1 },
               { N = 4, C = 128, H = 32, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 3, H = 301, W = 160, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 2, H = 9, W = 11, kernel_size = 2, stride = 2, padding = 0 },
               { N = 1, C = 2, H = 10, W = 12, kernel_size = 3, stride = 1, padding = 1 } } },
}

-- 2d_max_pooling with NaN and -inf planted (never generated): a window holding a NaN gives NaN,
-- one of -inf only gives -inf, for the reference (against the CPU) and every configuration of
-- cuda and, where it imports, triton. Plants in the first and last columns and rows, at lane
-- and vector boundaries (W = 48: fp32 and fp16 vectors).
local function check_pool_nan(op)
  for _, dtype in ipairs({ "fp16", "bf16", "fp32" }) do
    local p = { N = 1, C = 2, H = 9, W = 48, kernel_size = 3, stride = 2, padding = 1 }
    local n = p.C * p.H * p.W
    local vals = {}
    for i = 1, n do vals[i] = ((i * 7919) % 2001) / 1000 - 1 end
    for _, i in ipairs({ 0, 47, 48 * 3 + 15, 48 * 3 + 16, 48 * 8 + 30, 432 + 48 * 4 + 8 }) do vals[i + 1] = 0 / 0 end
    for r = 5, 8 do for col = 40, 47 do vals[r * 48 + col + 1] = -math.huge end end -- a -inf block (plane 0)
    local c = { params = p, dtype = dtype, index = 1, id = "nan" }
    local where = "2d_max_pooling " .. dtype .. " planted NaN and -inf"
    local ctx <close> = context.new(op, c)
    local ins = { input = ctx.from_table(vals, dtype, { n }) }
    local refs = op.module.outputs(c, ins, ctx)
    for _, t in pairs(refs) do verify.poison(t) end
    op.module.reference(c, ins, refs, ctx):run()
    local want = cpu["2d_max_pooling"](c, host_all(ins))
    compare_cpu(where .. " reference vs CPU", refs.out:to_host(), want, 0, 0)
    local others, lib = {}, false
    for _, i in ipairs(with_triton(op, where)) do
      if i == "lib" then lib = true else others[#others + 1] = i end
    end
    check_impls(op, c, ctx, ins, refs, where, others)
    if lib then
      -- cuDNN's max pooling starts each window at the lowest finite value, max_pool2d at -inf: a
      -- window of -inf only gives the lowest finite value (docs/CONV.md; the grid's randn inputs
      -- never hold -inf). Checked exactly, so a change in cuDNN shows.
      for i, v in ipairs(want) do if v == -math.huge then want[i] = -dtypes[dtype].max_finite end end
      local lib_refs = { out = ctx.from_table(want, dtype, { #want }) }
      check_impls(op, c, ctx, ins, lib_refs, where .. " (lib: an all -inf window gives the lowest finite value)", { "lib" })
    end
    print(string.format("ok  %s", where))
  end
end

-- ---- convolutions: 1d_conv, 2d_conv, 3d_conv (docs/CONV.md) ---------------------------------
-- The grouped cross-correlation summed in double, rounded once to the dtype; 1-D and 2-D as 3-D
-- with D = H = 1. CASES' cpu_tol allows for the reference's fp32 sums.
local function conv_cpu(rank)
  return function(c, h)
    local p = c.params
    local B, Cin, Cout, G, k, S, P = p.batch, p.in_channels, p.out_channels, p.groups, p.kernel_size, p.stride, p.padding
    local sp = rank == 1 and { 1, 1, p.L } or rank == 2 and { 1, p.H, p.W or p.H } or { p.D, p.H, p.W or p.H }
    local kk, pp, o = {}, {}, {}
    for d = 1, 3 do
      local real = d > 3 - rank
      kk[d], pp[d] = real and k or 1, real and P or 0
      o[d] = (sp[d] + 2 * pp[d] - kk[d]) // S + 1
    end
    local D, H, W = sp[1], sp[2], sp[3]
    local cin_g, cout_g = Cin // G, Cout // G
    local x, w, out = h.input, h.weight, {}
    local i = 0
    for b = 0, B - 1 do
      for oc = 0, Cout - 1 do
        local g = oc // cout_g
        for oz = 0, o[1] - 1 do
          for oy = 0, o[2] - 1 do
            for ox = 0, o[3] - 1 do
              local s = 0.0
              for ic = 0, cin_g - 1 do
                local xb = (b * Cin + g * cin_g + ic) * D
                local wb = (oc * cin_g + ic) * kk[1]
                for a = 0, kk[1] - 1 do
                  local z = oz * S + a - pp[1]
                  if z >= 0 and z < D then
                    for cc = 0, kk[2] - 1 do
                      local y = oy * S + cc - pp[2]
                      if y >= 0 and y < H then
                        local xrow = ((xb + z) * H + y) * W + 1
                        local wrow = ((wb + a) * kk[2] + cc) * kk[3] + 1
                        for e = 0, kk[3] - 1 do
                          local xx = ox * S + e - pp[3]
                          if xx >= 0 and xx < W then s = s + x[xrow + xx] * w[wrow + e] end
                        end
                      end
                    end
                  end
                end
              end
              i = i + 1
              out[i] = round_to(c.dtype, s)
            end
          end
        end
      end
    end
    return out
  end
end
cpu["1d_conv"], cpu["2d_conv"], cpu["3d_conv"] = conv_cpu(1), conv_cpu(2), conv_cpu(3)

local function conv_case(t)
  local p = { batch = 1, groups = 1 }
  for k, v in pairs(t) do p[k] = v end
  return p
end
-- Each dtype takes the vector path (16-byte region loads, VECLOAD) where W is a multiple of its
-- vector (8 fp16, 4 fp32) and the element path otherwise; outputs store by 16-byte vectors where
-- the output rows are too. Channel counts below, at and past a K chunk (BC: 16 or 32 fp16, 8 or 16
-- fp32) and past BM (64 / 128: partial blocks of output channels); tiles past the output's edges.
CASES["1d_conv"] = { dtypes = { "fp16", "fp32" }, cpu_tol = { 1e-3, 1e-3 }, params = {
  -- odd L (element path), groups 2 with 5 output channels a group, batch 2
  conv_case { batch = 2, in_channels = 6, out_channels = 10, L = 37, kernel_size = 3, stride = 1, padding = 1, groups = 2 },
  -- stride 2, k 5, padding 2
  conv_case { in_channels = 5, out_channels = 3, L = 41, kernel_size = 5, stride = 2, padding = 2 },
  -- vector path, stride 2, padding 0, 4 groups
  conv_case { in_channels = 16, out_channels = 16, L = 1000, kernel_size = 3, stride = 2, padding = 0, groups = 4 },
  -- the grid's channels (four 32-channel chunks), a partial last tile
  conv_case { in_channels = 128, out_channels = 128, L = 520, kernel_size = 3, stride = 1, padding = 1 },
  -- 200 output channels (a partial second block of 128), padding 2 (out_L = L + 2), L % 8 = 4
  conv_case { in_channels = 40, out_channels = 200, L = 300, kernel_size = 3, stride = 1, padding = 2 },
  -- one position
  conv_case { batch = 3, in_channels = 8, out_channels = 8, L = 1, kernel_size = 3, stride = 1, padding = 1 } } }
CASES["2d_conv"] = { dtypes = { "fp16", "fp32" }, cpu_tol = { 1e-3, 1e-3 }, params = {
  -- odd sizes, W != H, groups 2
  conv_case { in_channels = 6, out_channels = 10, H = 11, W = 13, kernel_size = 3, stride = 1, padding = 1, groups = 2 },
  -- stride 2, batch 2
  conv_case { batch = 2, in_channels = 5, out_channels = 3, H = 9, kernel_size = 3, stride = 2, padding = 1 },
  -- vector loads (W 24), padding 0 (outputs 22 wide: element stores), 4 groups
  conv_case { in_channels = 32, out_channels = 48, H = 40, W = 24, kernel_size = 3, stride = 1, padding = 0, groups = 4 },
  -- the grid's first case
  conv_case { in_channels = 128, out_channels = 128, H = 16, kernel_size = 3, stride = 1, padding = 1 },
  -- k 5, padding 2, W 20 (fp32 vectors, fp16 elements)
  conv_case { in_channels = 16, out_channels = 16, H = 20, kernel_size = 5, stride = 1, padding = 2 },
  -- stride 2 with padding 2 over vector rows
  conv_case { in_channels = 8, out_channels = 8, H = 34, W = 64, kernel_size = 3, stride = 2, padding = 2 },
  -- rows of several tiles (wgmma: virtual positions across TW < W), 80 output channels (a
  -- partial block of 128: both warpgroups along M), 7 rows (a partial last tile row)
  conv_case { in_channels = 16, out_channels = 80, H = 7, W = 200, kernel_size = 3, stride = 1, padding = 1 } } }
CASES["3d_conv"] = { dtypes = { "fp16", "fp32" }, cpu_tol = { 1e-3, 1e-3 }, params = {
  -- odd sizes, groups 2
  conv_case { in_channels = 4, out_channels = 6, D = 5, H = 7, kernel_size = 3, stride = 1, padding = 1, groups = 2 },
  -- stride 2, padding 0, batch 2, W != H
  conv_case { batch = 2, in_channels = 3, out_channels = 5, D = 6, H = 9, W = 10, kernel_size = 3, stride = 2, padding = 0 },
  -- the grid's channels over a small volume
  conv_case { in_channels = 64, out_channels = 64, D = 2, H = 8, W = 16, kernel_size = 3, stride = 1, padding = 1 },
  -- padding 2 (outputs larger than the input), vector rows
  conv_case { in_channels = 16, out_channels = 16, D = 4, H = 12, W = 16, kernel_size = 3, stride = 1, padding = 2 },
  -- 72 output channels (wgmma: BM 128, a partial block), 40-wide rows, 24 input channels (a
  -- partial K chunk in fp16 and fp32 alike)
  conv_case { in_channels = 24, out_channels = 72, D = 3, H = 5, W = 40, kernel_size = 3, stride = 1, padding = 1 } } }

-- The convolutions' triton space beyond its default (which every case above runs): a spread of
-- its candidates (C.configs_to_try: the default and every k-th valid one) at an odd case with
-- groups and the grid's channels, both dtypes, where triton imports.
local CONV_SPREAD = { ["1d_conv"] = { 1, 4 }, ["2d_conv"] = { 1, 4 }, ["3d_conv"] = { 1, 3 } }
local function conv_triton_spread(op)
  local where = op.name .. " triton spread"
  if not require("tilebench.triton").available() then
    print(where .. ": triton does not import here; skipped")
    return
  end
  for _, dtype in ipairs(CASES[op.name].dtypes) do
    for _, i in ipairs(CONV_SPREAD[op.name]) do
      local params = CASES[op.name].params[i]
      local c = { params = params, dtype = dtype, index = 1, id = C.case_id(params) }
      C.check_small(op, c, string.format("%s %s %s", where, dtype, c.id), { "triton" })
    end
  end
end

-- conv_triton_spread's kernels, for --compile-only (where triton imports).
local function compile_conv_triton_spread(op, compile)
  if not require("tilebench.triton").available() then return end
  for _, dtype in ipairs(CASES[op.name].dtypes) do
    for _, i in ipairs(CONV_SPREAD[op.name]) do
      local params = CASES[op.name].params[i]
      local c = { params = params, dtype = dtype, index = 1, id = C.case_id(params) }
      for _, cfg in ipairs(C.configs_to_try(op.module.implementations.triton, c)) do
        compile({ op = op, case = c, dtype = dtype, impl = "triton", cfg = cfg })
      end
    end
  end
end

-- The cuda VARIANT wgmma (conv_wgmma.cu, sm_90 only) beyond the default and configs_to_try's
-- spread: each tile shape it has (BM 64: the warpgroups split the positions; 128: the channels),
-- 32 and 64 bytes of channels a chunk, 3 and 4 stages, tiles of 16 to 64 positions a row and the
-- automatic ones, at the cases of stride 1 named below (odd and partial tiles, the grid's
-- channels), both dtypes; configurations a case does not take (valid) are left out.
local WGMMA_CONFIGS = {
  { BM = 64, BN = 64, TW = 16, BCB = 32, STAGES = 3 }, { BM = 128, BN = 128, TW = 32, BCB = 32, STAGES = 4 },
  { BM = 64, BN = 256, TW = 64, BCB = 32, STAGES = 4 }, { BM = 128, BN = 64, TW = 64, BCB = 64, STAGES = 3 },
  { BM = 64, BN = 0, TW = 0, BCB = 64, STAGES = 0 }, { BM = 128, BN = 0, TW = 16, BCB = 32, STAGES = 3 },
}
local WGMMA_CASES = { ["1d_conv"] = { 4, 5 }, ["2d_conv"] = { 1, 3, 4, 5, 7 }, ["3d_conv"] = { 1, 3, 4, 5 } }
local function wgmma_configs(op, c)
  local spec = op.module.implementations.cuda
  local cfgs = {}
  for _, w in ipairs(WGMMA_CONFIGS) do
    local cfg = {}
    for k, v in pairs(spec.default) do cfg[k] = v end
    for k, v in pairs(w) do cfg[k] = v end
    cfg.VARIANT = "wgmma"
    if spec.valid(c, cfg) then cfgs[#cfgs + 1] = cfg end
  end
  return cfgs
end
local function conv_cuda_wgmma(op)
  local where = op.name .. " cuda wgmma"
  local props = require("tb.device").props()
  if not (props.cc_major == 9 and (props.cc_minor or 0) == 0) then
    print(where .. ": not an sm_90 GPU; skipped")
    return
  end
  for _, dtype in ipairs(CASES[op.name].dtypes) do
    for _, i in ipairs(WGMMA_CASES[op.name]) do
      local params = CASES[op.name].params[i]
      local c = { params = params, dtype = dtype, index = 1, id = C.case_id(params) }
      C.check_small(op, c, string.format("%s %s %s", where, dtype, c.id), { "cuda" }, wgmma_configs(op, c))
    end
  end
end
local function compile_conv_cuda_wgmma(op, compile)
  for _, dtype in ipairs(CASES[op.name].dtypes) do
    for _, i in ipairs(WGMMA_CASES[op.name]) do
      local params = CASES[op.name].params[i]
      local c = { params = params, dtype = dtype, index = 1, id = C.case_id(params) }
      for _, cfg in ipairs(wgmma_configs(op, c)) do
        compile({ op = op, case = c, dtype = dtype, impl = "cuda", cfg = cfg })
      end
    end
  end
end
local function conv_extra(op)
  conv_triton_spread(op)
  conv_cuda_wgmma(op)
end
local function compile_conv_extra(op, compile)
  compile_conv_triton_spread(op, compile)
  compile_conv_cuda_wgmma(op, compile)
end

-- gaussian_blur's tensor-core kernels (cuda MMA = 1) over their whole space beyond the default
-- (NB 8 and 16 column blocks x BX 32 .. 256: tiles or bands of 16 to 128 rows, 64 or 128
-- columns; PIPE 0, the one-tile kernel, or 2 and 3, the pipelined column-strip walker, with SEGB
-- 0, 3 (segment edges inside these small images) and 64 bands a block (one block walking a
-- strip, its ring wrapping)), on the cases whose rows are whole 16-byte chunks (the others run
-- the register kernel, which the spread of every case covers): one row, tiles past the image on
-- both sides, 3 x 5, 4 x 6 (fp32 only: 36 fp16 columns are not whole chunks), 1 x 1 and 9 x 9
-- kernels: every valid candidate of the space with MMA = 1 (at most 56: 8 one-tile, 48
-- pipelined).
local GB_MMA_CASES = { 1, 3, 5, 6, 7, 8, 9, 10 }
local function gb_mma_configs(op, c)
  local spec = op.module.implementations.cuda
  local cfgs = {}
  for _, cfg in ipairs(require("tilebench.runner").candidates(spec)) do
    if cfg.MMA == 1 and spec.valid(c, cfg) then cfgs[#cfgs + 1] = cfg end
  end
  return cfgs
end
local function gb_mma_spread(op)
  for _, dtype in ipairs(CASES.gaussian_blur.dtypes) do
    for _, i in ipairs(GB_MMA_CASES) do
      local params = CASES.gaussian_blur.params[i]
      local c = { params = params, dtype = dtype, index = 1, id = C.case_id(params) }
      local w = string.format("gaussian_blur MMA spread %s %s", dtype, c.id)
      local okc, err = xpcall(function()
        local ctx <close> = context.new(op, c)
        local ins = op.module.inputs(c, ctx)
        local refs = op.module.outputs(c, ins, ctx)
        op.module.reference(c, ins, refs, ctx):run()
        check_impls(op, c, ctx, ins, refs, w, { "cuda" }, gb_mma_configs(op, c))
      end, debug.traceback)
      if okc then print(string.format("ok  %s", w)) else fail("%s: %s", w, tostring(err)) end
    end
  end
end
local function compile_gb_mma_spread(op, compile)
  for _, dtype in ipairs(CASES.gaussian_blur.dtypes) do
    for _, i in ipairs(GB_MMA_CASES) do
      local params = CASES.gaussian_blur.params[i]
      local c = { params = params, dtype = dtype, index = 1, id = C.case_id(params) }
      for _, cfg in ipairs(gb_mma_configs(op, c)) do
        compile({ op = op, case = c, dtype = dtype, impl = "cuda", cfg = cfg })
      end
    end
  end
end

local ORDER = { "jacobi_stencil_2d", "gaussian_blur", "2d_max_pooling", "1d_conv", "2d_conv", "3d_conv" }
local TRITON_DEFAULT = { jacobi_stencil_2d = true, gaussian_blur = true, ["2d_max_pooling"] = true,
                         ["1d_conv"] = true, ["2d_conv"] = true, ["3d_conv"] = true }
local EXTRA = { gaussian_blur = gb_mma_spread, ["2d_max_pooling"] = check_pool_nan, ["1d_conv"] = conv_extra,
                ["2d_conv"] = conv_extra, ["3d_conv"] = conv_extra }
local COMPILE_EXTRA = { gaussian_blur = compile_gb_mma_spread, ["1d_conv"] = compile_conv_extra, ["2d_conv"] = compile_conv_extra,
                        ["3d_conv"] = compile_conv_extra }

return { order = ORDER, cpu = cpu, cases = CASES, triton_default = TRITON_DEFAULT, extra = EXTRA,
         compile_extra = COMPILE_EXTRA }
