-- gaussian_blur: "same" cross-correlation of an image x (input_rows x input_cols, flat) with a
-- kernel w (kernel_rows x kernel_cols, flat), zero padding (OPERATORS.md 37):
-- y[r, c] = sum_{i, j} x[r + i - kr // 2, c + j - kc // 2] w[i, j], in the input dtype. The image is
-- randn, the kernel rand in [0, 1) normalised to sum 1 by gaussian_blur_gen.cu. TileBench's cases
-- are square (input_cols = input_rows, not a parameter); a case may give input_cols.
-- Reference: one thread per output, the sum in double (gaussian_blur_ref.cu). `cuda`: a thread per
-- 16-byte column vector(s) down a strip of rows, each input row loaded once and added into a ring
-- of KR output rows of fp32 accumulators in registers, the horizontal halo by shuffle, weights
-- in shared memory (gaussian_blur.cu; docs/STENCILS.md). `triton`: output tiles, the KR x KC
-- shifted taps as masked loads (gaussian_blur_triton.py).
local op = {}
op.category = "Stencil/Conv"

local function dims(case)
  local p = case.params
  return p.input_rows, p.input_cols or p.input_rows, p.kernel_rows, p.kernel_cols
end

function op.inputs(case, ctx)
  local r, c, kr, kc = dims(case)
  local ins = { input = ctx.randn("input", { r * c }, case.dtype), kernel = ctx.rand("kernel", { kr * kc }, case.dtype, 0, 1) }
  local gen = ctx:kernel("gaussian_blur_gen.cu", "gaussian_blur_gen", { DTYPE = ctx.ctype(case.dtype) })
  local plan = ctx.plan { { fn = gen, grid = { 1 }, block = { 32 }, args = { ins.kernel, ctx.i32(kr * kc) } } }
  if not ctx.compile_only then plan:run() end -- compile-only contexts only compile the generator
  return ins
end

function op.outputs(case, ins, ctx)
  local r, c = dims(case)
  return { out = ctx.empty({ r * c }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local r, c, kr, kc = dims(case)
  local f = ctx:kernel("gaussian_blur_ref.cu", "gaussian_blur_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(r * c, 256) }, block = { 256 },
                      args = { ins.input, ins.kernel, outs.out, ctx.i32(r), ctx.i32(c), ctx.i32(kr), ctx.i32(kc) } } }
end

-- Elements a thread: VPT 16-byte vectors (VPT = 0: two for fp32, one for 2-byte dtypes, whose 16
-- elements a thread take 250+ registers), fewer where cols is not a multiple, one element where
-- cols is not a multiple of a vector (every row then starts unaligned).
local function rx(case, cfg)
  local _, cols = dims(case)
  local size = require("tb.dtype").info[case.dtype].size
  local vw = 16 // size
  local vpt = cfg.VPT > 0 and cfg.VPT or (size >= 4 and 2 or 1)
  if cols % (vw * vpt) == 0 then return vw * vpt end
  return cols % vw == 0 and vw or 1
end

-- Rows a block walks: ROWS, or with ROWS = 0 about two waves of resident blocks (about 384
-- threads an SM: the kernel takes 128-244 registers), 8 to 256 rows: each strip re-reads
-- kernel_rows - 1 rows of its neighbours.
local function rows_per(case, cfg, gx, props)
  local rows = dims(case)
  local r = cfg.ROWS
  if r == 0 then
    local resident = (props.sm_count or 132) * math.max(1, 384 // cfg.BX)
    r = math.max(8, math.min(256, (rows * gx + 2 * resident - 1) // (2 * resident)))
  end
  return math.max(r, (rows + 65534) // 65535)
end

op.implementations = {
  cuda = {
    source = "gaussian_blur.cu",
    description = "a thread per 16-byte column vector(s) down a row strip: each input row loaded once, shuffled into a window and added into a register ring of kernel_rows output rows (fp32), weights in shared memory",
    default = { BX = 128, VPT = 0, ROWS = 0, MINB = 0 },
    -- MINB 1: ptxas keeps fp16 at one vector a thread unspilled (208 registers against
    -- 168 and one 4-byte spill an iteration, but 8 warps an SM against 12): the search decides
    space = { BX = { 32, 64, 128, 256 }, VPT = { 0, 1, 2 }, ROWS = { 0, 16, 32, 64, 128, 256 }, MINB = { 0, 1 } },
    -- the ring holds kernel_rows x RX accumulators a thread, the halo must come from one warp
    supports = function(case)
      local _, _, kr, kc = dims(case)
      if kr > 15 or kc > 15 then
        return false, string.format("a %d x %d kernel: the register ring takes at most 15 x 15", kr, kc)
      end
      return true
    end,
    -- 2-byte dtypes at two vectors a thread spill (ptxas, sm_90); BX a whole number of warps
    valid = function(case, cfg)
      local size = require("tb.dtype").info[case.dtype].size
      return cfg.BX % 32 == 0 and not (cfg.VPT == 2 and size < 4)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols, kr, kc = dims(case)
      local n = rx(case, cfg)
      local gx = ctx.cdiv(cols, cfg.BX * n)
      local per = rows_per(case, cfg, gx, ctx.props)
      local f = ctx:kernel("gaussian_blur.cu", "gaussian_blur",
                           { DTYPE = ctx.ctype(case.dtype), RX = n, BX = cfg.BX, KR = kr, KC = kc, MINB = cfg.MINB })
      return ctx.plan { { fn = f, grid = { gx, ctx.cdiv(rows, per) }, block = { cfg.BX },
                          args = { ins.input, ins.kernel, outs.out, ctx.i32(rows), ctx.i32(cols), ctx.i32(per) } } }
    end,
  },
  -- gaussian_blur_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per BR x BC output tile, the kernel_rows x kernel_cols taps as shifted masked loads (L1/L2 hits), fp32 sums",
    default = { BR = 8, BC = 128, num_warps = 4 },
    space = { BR = { 4, 8, 16, 32 }, BC = { 64, 128, 256 }, num_warps = { 2, 4, 8 } },
    -- 2 to 32 outputs a thread
    valid = function(case, cfg)
      local per_thread = cfg.BR * cfg.BC // (32 * cfg.num_warps)
      return per_thread >= 2 and per_thread <= 32
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols, kr, kc = dims(case)
      return ctx.plan { ctx:triton { file = "gaussian_blur_triton.py", kernel = "gaussian_blur_kernel",
        grid = { ctx.cdiv(cols, cfg.BC), ctx.cdiv(rows, cfg.BR) },
        args = { x = ins.input, w = ins.kernel, out = outs.out, rows = ctx.i32(rows), cols = ctx.i32(cols) },
        constexprs = { KR = kr, KC = kc, BR = cfg.BR, BC = cfg.BC }, num_warps = cfg.num_warps, num_stages = 1 } }
    end,
  },
}

return op
