-- jacobi_stencil_2d: one out-of-place Jacobi sweep over input (rows, cols) (OPERATORS.md 36): out
-- is input with each interior point replaced by 0.25 * (((up + down) + left) + right), each op
-- rounded in the dtype; boundary rows and columns copied. TileBench's cases have cols = rows (no
-- `cols` parameter); a case may give `cols` (the CPU check's odd shapes).
-- Reference: one thread per element (jacobi_stencil_2d_ref.cu). `cuda`: a thread per 16-byte
-- column vector walking down a strip of rows with a three-row register window, horizontal
-- neighbours by shuffle (jacobi_stencil_2d.cu). `triton`: 2-D output tiles, the four neighbours
-- as shifted masked loads (jacobi_stencil_2d_triton.py).
local op = {}
op.category = "Stencil/Conv"

local function dims(case)
  local p = case.params
  return p.rows, p.cols or p.rows
end

function op.inputs(case, ctx)
  local rows, cols = dims(case)
  return { input = ctx.randn("input", { rows, cols }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  local rows, cols = dims(case)
  return { out = ctx.empty({ rows, cols }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local rows, cols = dims(case)
  local f = ctx:kernel("jacobi_stencil_2d_ref.cu", "jacobi_stencil_2d_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(rows * cols, 256) }, block = { 256 },
                      args = { ins.input, outs.out, ctx.i32(rows), ctx.i32(cols) } } }
end

-- 16 bytes of the dtype a thread where every row starts 16-byte aligned (cols a multiple of the
-- vector: every case of TileBench's grid), else one element.
local function vw(case)
  local _, cols = dims(case)
  local v = 16 // require("tb.dtype").info[case.dtype].size
  return cols % v == 0 and v or 1
end

-- Rows a block walks: ROWS, or with ROWS = 0 enough strips for two waves of resident blocks
-- (the smallest cases need the parallelism more than the fewer halo rows), 2 to 64 rows. The
-- y grid stays within 65535 strips.
local function rows_per(case, cfg, gx, props)
  local rows = dims(case)
  local r = cfg.ROWS
  if r == 0 then
    local resident = (props.sm_count or 132) * math.max(1, (props.max_threads_per_sm or 2048) // cfg.BX)
    r = math.max(2, math.min(64, (rows * gx + 2 * resident - 1) // (2 * resident)))
  end
  return math.max(r, (rows + 65534) // 65535)
end

op.implementations = {
  cuda = {
    source = "jacobi_stencil_2d.cu",
    description = "a thread per 16-byte column vector down a strip of rows: three-row register window, UNROLL rows loaded ahead, left/right neighbours by warp shuffle",
    default = { BX = 128, ROWS = 0, UNROLL = 4 },
    space = { BX = { 64, 128, 256, 512 }, ROWS = { 0, 8, 16, 32, 64 }, UNROLL = { 1, 2, 4, 8 } },
    -- registers: the window (3 vectors) and UNROLL more, 4 registers a 16-byte vector; UNROLL
    -- beyond ROWS loads rows the strip never uses
    valid = function(case, cfg)
      return cfg.BX % 32 == 0 and (cfg.ROWS == 0 or cfg.UNROLL <= cfg.ROWS)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = dims(case)
      local v = vw(case)
      local gx = ctx.cdiv(cols, cfg.BX * v)
      local per = rows_per(case, cfg, gx, ctx.props)
      local f = ctx:kernel("jacobi_stencil_2d.cu", "jacobi_stencil_2d",
                           { DTYPE = ctx.ctype(case.dtype), VW = v, BX = cfg.BX, UNROLL = cfg.UNROLL })
      return ctx.plan { { fn = f, grid = { gx, ctx.cdiv(rows, per) }, block = { cfg.BX },
                          args = { ins.input, outs.out, ctx.i32(rows), ctx.i32(cols), ctx.i32(per) } } }
    end,
  },
  -- jacobi_stencil_2d_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per BR x BC output tile, the centre and its four neighbours as masked loads, each op rounded to the dtype",
    default = { BR = 4, BC = 512, num_warps = 4 },
    space = { BR = { 1, 2, 4, 8, 16 }, BC = { 128, 256, 512, 1024 }, num_warps = { 2, 4, 8 } },
    -- 1 to 32 elements a thread
    valid = function(case, cfg)
      local per_thread = cfg.BR * cfg.BC // (32 * cfg.num_warps)
      return per_thread >= 1 and per_thread <= 32
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = dims(case)
      return ctx.plan { ctx:triton { file = "jacobi_stencil_2d_triton.py", kernel = "jacobi_stencil_2d_kernel",
        grid = { ctx.cdiv(cols, cfg.BC), ctx.cdiv(rows, cfg.BR) },
        args = { x = ins.input, out = outs.out, rows = ctx.i32(rows), cols = ctx.i32(cols) },
        constexprs = { BR = cfg.BR, BC = cfg.BC }, num_warps = cfg.num_warps, num_stages = 1 } }
    end,
  },
}

return op
