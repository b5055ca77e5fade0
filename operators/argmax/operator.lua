-- argmax: out[r] = index of the first maximum of x[r, :] over (M, N) (torch.argmax(x, dim=1)),
-- int64. Reference: one thread per row, a left-to-right scan. `cuda`: a row per group of TPR
-- threads, all of its loads in flight at once, (value, index) reductions with ties to the lower
-- index.
local op = {}
op.category = "Reduction/Norm"

-- 16-byte vectors hold VEC elements of each dtype.
local VEC = { fp32 = 4, fp16 = 8, bf16 = 8 }

-- The row layout for rows of `cols` elements: TPR threads per row, BLOCK threads per block, NV
-- vectors per thread (the row lives in registers). TPR = 0 picks the smallest power of two from
-- 32 (a warp per row) up to 1024 (a block per row) that covers the row with at most 4 vectors per
-- thread; BLOCK = 0 picks max(TPR, 128), several short rows to a block.
local function row_layout(cols, dtype, cfg)
  local vec = VEC[dtype]
  local tpr = cfg.TPR
  if tpr == 0 then
    tpr = 32
    while tpr < 1024 and tpr * vec * 4 < cols do tpr = tpr * 2 end
  end
  local block = cfg.BLOCK == 0 and math.max(tpr, 128) or cfg.BLOCK
  return tpr, block, math.max(1, (cols + tpr * vec - 1) // (tpr * vec))
end

-- A layout runs when the row group fits its block, NV is at most 16, and the row fits in the
-- registers a thread gets at that block size without spilling (about 24 + 1.5 per element,
-- measured with ptxas for sm_90).
local function layout_fits(cols, dtype, cfg)
  local tpr, block, nv = row_layout(cols, dtype, cfg)
  return tpr <= block and block % tpr == 0 and nv <= 16
     and 24 + 1.5 * nv * VEC[dtype] <= math.min(255, 65536 // block)
end

local SPACE = { TPR = { 0, 32, 64, 128, 256, 512, 1024 }, BLOCK = { 0, 128, 256, 512, 1024 } }

local function rows_cols(case) return case.params.M, case.params.N end

function op.inputs(case, ctx)
  return { x = ctx.randn("x", { case.params.M, case.params.N }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.M }, "int64") }
end

function op.reference(case, ins, outs, ctx)
  local rows, cols = rows_cols(case)
  local f = ctx:kernel("argmax_ref.cu", "argmax_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(rows, 128) }, block = { 128 },
                      args = { ins.x, outs.out, ctx.i32(rows), ctx.i32(cols) } } }
end

op.implementations = {
  cuda = {
    source = "argmax.cu",
    description = "row per TPR-thread group (warp- to block-per-row), every 16-byte load in flight, first-index ties",
    default = { TPR = 0, BLOCK = 0 },
    space = SPACE,
    valid = function(case, cfg)
      local _, cols = rows_cols(case)
      return layout_fits(cols, case.dtype, cfg)
    end,
    supports = function(case) -- the automatic layout must fit: rows up to 1024 threads x 4 vectors
      local _, cols = rows_cols(case)
      return layout_fits(cols, case.dtype, { TPR = 0, BLOCK = 0 })
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = rows_cols(case)
      local tpr, block, nv = row_layout(cols, case.dtype, cfg)
      local f = ctx:kernel("argmax.cu", "argmax_cuda",
        { DTYPE = ctx.ctype(case.dtype), TPR = tpr, BLOCK = block, NV = nv })
      return ctx.plan { { fn = f, grid = { ctx.cdiv(rows, block // tpr) }, block = { block },
                          args = { ins.x, outs.out, ctx.i32(rows), ctx.i32(cols) } } }
    end,
  },
}

return op
