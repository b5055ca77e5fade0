-- layernorm: y = (x - mean) / sqrt(var + 1e-5) * weight + bias over the last dim K of
-- x (batch, M, K) (F.layer_norm: biased variance, statistics in fp32, output in the input dtype).
-- Reference: one thread per row in double. `cuda`: a row per group of TPR threads held in
-- registers, one pass over x.
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"
local EPS = 1e-5 -- F.layer_norm's default; TileBench's run() does not change it

local function rows_cols(case) return case.params.batch * case.params.M, case.params.K end

function op.inputs(case, ctx)
  local p = case.params
  return { x = ctx.randn("x", { p.batch, p.M, p.K }, case.dtype),
           weight = ctx.randn("weight", { p.K }, case.dtype),
           bias = ctx.randn("bias", { p.K }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  local p = case.params
  return { out = ctx.empty({ p.batch, p.M, p.K }, case.dtype) }
end

-- The reference (one thread per row, layernorm_ref.cu) and the `cuda` implementation (layernorm.cu:
-- a row per group of TPR threads held in registers, layouts from warp- to block-per-row, autotuned
-- over TPR and BLOCK): oplib's row-wise family.
-- Kernel defines and case size: NV (16-byte vectors per thread = cdiv(cols, TPR x VEC)) and, with
-- TPR = 0, the layout it picks depend on the row length, so the cuda kernel is compiled once
-- per configuration and NV, not once per configuration: the row is held in registers, whose
-- count must be known at compile time (a register array of NV vectors, its loops unrolled). Cases with the
-- same NV share one kernel; the reference's defines carry no size (oplib.rowwise, KERNELS.md).
local reference, cuda = oplib.rowwise {
  name = "layernorm",
  description = "row in registers per TPR-thread group (warp- to block-per-row), mean and centred variance, one pass; or rows streamed through shared memory by cp.async.bulk (STAGES slots, persistent blocks; default: the operator's stream rule)",
  rows_cols = rows_cols,
  args = function(ins, outs, rows, cols, ctx) return { ins.x, ins.weight, ins.bias, outs.out, ctx.i32(rows), ctx.i32(cols), ctx.f32(EPS) } end,
  -- ptxas -v (sm_90): its RPG > 1 kernels need fewer registers than the family's bound (KERNELS.md)
  rpg_regs = { [2] = { 44, 1.05 }, [4] = { 16, 1.45 } },
  -- H200, K = 10240 (docs/KERNELS.md): fp16 35.7 / bf16 36.8 us streamed (256 threads, 2 slots) vs 38.8 in registers;
  -- autotune of 2026-11-29: 29.7 / 30.0 us with 512 threads, 2 slots, FULLVEC 1
  stream = { dtypes = { fp16 = true, bf16 = true }, min_bytes = 16384, block = 512, stages = 2, fullvec = 1 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- layernorm_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_rows {
    name = "layernorm",
    rows_cols = rows_cols,
    loop = false,
    tensors = function(ins, outs) return { x = ins.x, weight = ins.weight, bias = ins.bias, out = outs.out } end,
    scalars = function(ctx) return { eps = ctx.f32(EPS) } end,
  },
}

return op
