-- kl_divergence: loss[r] = sum_c y_true[r, c] * (ln y_true[r, c] - log_y_pred[r, c]) over (rows,
-- cols), fp32 in and out (OPERATORS.md 18). Inputs as TileBench draws them: log_y_pred =
-- log_softmax(randn) and y_true = softmax(randn), row by row (kl_divergence_gen.cu turns the
-- seeded randn into them in place, once per case, before the reference runs).
-- Reference: one thread per row in double. `cuda`: a row per group of TPR threads, chunks of
-- UNROLL vectors of both inputs in flight (kl_divergence.cu). `triton`: a program per row,
-- chunked (oplib.triton_rows, loop mode).
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"

local function rows_cols(case) return case.params.rows, case.params.cols end

function op.inputs(case, ctx)
  local rows, cols = rows_cols(case)
  local ins = { log_y_pred = ctx.randn("log_y_pred", { rows, cols }, "fp32"),
                y_true = ctx.randn("y_true", { rows, cols }, "fp32") }
  local gen = ctx:kernel("kl_divergence_gen.cu", "kl_divergence_gen", {})
  local plan = ctx.plan {
    { fn = gen, grid = { rows }, block = { 256 }, args = { ins.log_y_pred, ctx.i32(rows), ctx.i32(cols), ctx.i32(1) } },
    { fn = gen, grid = { rows }, block = { 256 }, args = { ins.y_true, ctx.i32(rows), ctx.i32(cols), ctx.i32(0) } },
  }
  if not ctx.compile_only then plan:run() end -- compile-only contexts only compile the generator
  return ins
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.rows }, "fp32") }
end

function op.reference(case, ins, outs, ctx)
  local rows, cols = rows_cols(case)
  local f = ctx:kernel("kl_divergence_ref.cu", "kl_divergence_ref", {})
  return ctx.plan { { fn = f, grid = { ctx.cdiv(rows, 128) }, block = { 128 },
                      args = { ins.log_y_pred, ins.y_true, outs.out, ctx.i32(rows), ctx.i32(cols) } } }
end

-- The automatic layout (TPR = 0, BLOCK = 0): about four chunks of TPR x UNROLL vectors a row,
-- TPR a power of two from 32 (a warp per row) to 512; BLOCK = max(TPR, 256).
local function layout(case, cfg)
  local _, cols = rows_cols(case)
  local tpr = cfg.TPR
  if tpr == 0 then
    local want = (cols // 4) // (cfg.UNROLL * 4)
    tpr = 32
    while tpr < 512 and tpr * 2 <= want do tpr = tpr * 2 end
  end
  local block = cfg.BLOCK == 0 and math.max(tpr, 256) or cfg.BLOCK
  return tpr, block
end

op.implementations = {
  cuda = {
    source = "kl_divergence.cu",
    description = "row per TPR-thread group, chunks of UNROLL 16-byte vectors of both inputs in flight per thread, one group reduction",
    default = { TPR = 0, BLOCK = 0, UNROLL = 4 },
    space = { TPR = { 0, 32, 64, 128, 256, 512, 1024 }, BLOCK = { 0, 256, 512, 1024 }, UNROLL = { 1, 2, 4, 8 } },
    valid = function(case, cfg)
      local tpr, block = layout(case, cfg)
      return tpr <= block and block % tpr == 0
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = rows_cols(case)
      local tpr, block = layout(case, cfg)
      local f = ctx:kernel("kl_divergence.cu", "kl_divergence_cuda", { BLOCK = block, TPR = tpr, UNROLL = cfg.UNROLL })
      return ctx.plan { { fn = f, grid = { ctx.cdiv(rows, block // tpr) }, block = { block },
                          args = { ins.log_y_pred, ins.y_true, outs.out, ctx.i32(rows), ctx.i32(cols) } } }
    end,
  },
  -- kl_divergence_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_rows {
    name = "kl_divergence",
    rows_cols = rows_cols,
    loop = true,
    tensors = function(ins, outs) return { log_y_pred = ins.log_y_pred, y_true = ins.y_true, out = outs.out } end,
  },
}

return op
