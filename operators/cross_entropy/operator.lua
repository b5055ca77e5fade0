-- cross_entropy: loss[i] = logsumexp(logits[i, :]) - logits[i, targets[i]] over (batch_size,
-- num_classes) (F.cross_entropy, reduction "none"; OPERATORS.md 17): no class weights, no label
-- smoothing, ignore_index never hit. Output (batch_size,) in the logits dtype; fp32 arithmetic.
-- Targets are int64 from randint(0, num_classes).
-- Reference: one thread per row in double. `cuda`: oplib's row family (the row in registers, max
-- and sum-of-exp reductions, the target logit picked from the registers). `triton`: ROWS rows per
-- program as one tile.
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"

local function rows_cols(case) return case.params.batch_size, case.params.num_classes end

function op.inputs(case, ctx)
  local p = case.params
  return { logits = ctx.randn("logits", { p.batch_size, p.num_classes }, case.dtype),
           targets = ctx.randint("targets", { p.batch_size }, "int64", 0, p.num_classes) }
end

function op.outputs(case, ins, ctx)
  return { loss = ctx.empty({ case.params.batch_size }, case.dtype) }
end

-- Rows of 512 classes (1 or 2 KiB): the automatic layout is a warp per row, 4 rows a block. No
-- stream rule: the stream kernel is in the autotune space (STAGES) but rows this short were
-- slower streamed for every row operator measured (docs/KERNELS.md).
local reference, cuda = oplib.rowwise {
  name = "cross_entropy",
  description = "row in registers per TPR-thread group (a warp per 512-class row by default), max and sum-of-exp2 reductions, the target logit taken from the registers; or rows streamed through shared memory (STAGES slots)",
  rows_cols = rows_cols,
  args = function(ins, outs, rows, cols, ctx) return { ins.logits, ins.targets, outs.loss, ctx.i32(rows), ctx.i32(cols) } end,
}
op.reference = reference

-- triton: ROWS rows per program as one [ROWS, BLOCK] tile (BLOCK = next power of two >= cols);
-- the space keeps 1 to 64 elements of the tile per thread.
local TRITON_DEFAULT = { ROWS = 4, num_warps = 4 }
local function triton_block(case) return oplib.next_pow2(case.params.num_classes) end

op.implementations = {
  cuda = cuda,
  -- cross_entropy_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: ROWS rows per program as one tile, max, sum of exp, target logit by column match",
    default = TRITON_DEFAULT,
    space = { ROWS = { 1, 2, 4, 8, 16 }, num_warps = { 1, 2, 4, 8 } },
    valid = function(case, cfg)
      local per_thread = cfg.ROWS * triton_block(case) // (32 * cfg.num_warps)
      return per_thread >= 1 and per_thread <= 64
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = rows_cols(case)
      return ctx.plan { ctx:triton { file = "cross_entropy_triton.py", kernel = "cross_entropy_kernel",
        grid = { ctx.cdiv(rows, cfg.ROWS) },
        args = { x = ins.logits, targets = ins.targets, loss = outs.loss, rows = ctx.i32(rows), cols = ctx.i32(cols) },
        constexprs = { BLOCK = triton_block(case), ROWS = cfg.ROWS }, num_warps = cfg.num_warps, num_stages = 1 } }
    end,
  },
}

return op
