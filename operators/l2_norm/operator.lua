-- l2_norm: y = x / sqrt(sum_k x^2 + eps) over the last dim K of x (batch, M, K), eps = 1e-6, no
-- weight or bias (OPERATORS.md 16). Statistics in fp32; x * rstd in fp32, rounded once to the
-- dtype, as TileBench's reference (vector_norm in fp32, squared, x * rsqrt(norm_sq + eps)).
-- Reference: one thread per row in double. `cuda`: oplib's row family (rmsnorm's kernel without
-- the weight), one pass over x.
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"
-- config.yaml's case_defaults carry eps = 1e-6 (TileBench's); the family's argument builders see
-- no case, so the kernels take it from here: the same value.
local EPS = 1e-6

local function rows_cols(case) return case.params.batch * case.params.M, case.params.K end

function op.inputs(case, ctx)
  local p = case.params
  return { x = ctx.randn("x", { p.batch, p.M, p.K }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  local p = case.params
  return { out = ctx.empty({ p.batch, p.M, p.K }, case.dtype) }
end

-- The reference (one thread per row, l2_norm_ref.cu) and the `cuda` implementation (l2_norm.cu:
-- a row per group of TPR threads held in registers, or rows streamed through shared memory):
-- oplib's row-wise family. Kernel defines carry the row length only through NV (KERNELS.md).
local reference, cuda = oplib.rowwise {
  name = "l2_norm",
  description = "row in registers per TPR-thread group (warp- to block-per-row), one sum-of-squares reduction, one pass; or rows streamed through shared memory by cp.async.bulk (STAGES slots, persistent blocks; default: the operator's stream rule)",
  rows_cols = rows_cols,
  args = function(ins, outs, rows, cols, ctx) return { ins.x, outs.out, ctx.i32(rows), ctx.i32(cols), ctx.f32(EPS) } end,
  -- rmsnorm's register bounds (the same per-row code less the weight's loads, so no more registers)
  rpg_regs = { [2] = { 24, 1.2 }, [4] = { 16, 1.45 } },
  -- rmsnorm's measured rule (H200, K = 10240: fp16/bf16 streamed with 256 threads and 2 slots beat
  -- the register kernel); not yet measured for l2_norm itself
  stream = { dtypes = { fp16 = true, bf16 = true }, min_bytes = 16384, block = 256, stages = 2 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- l2_norm_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_rows {
    name = "l2_norm",
    rows_cols = rows_cols,
    loop = false,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
    scalars = function(ctx) return { eps = ctx.f32(EPS) } end,
  },
}

return op
