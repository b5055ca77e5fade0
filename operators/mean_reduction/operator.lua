-- mean_reduction: out[r] = mean(x[r, :]) over (M, N), x.mean(dim=1, dtype=torch.float32): fp32
-- accumulation and an fp32 output for every input dtype. Reference: one thread per row in double.
-- `cuda`: a row per group of TPR threads, all of its loads in flight at once, one pass.
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"

local function rows_cols(case) return case.params.M, case.params.N end

function op.inputs(case, ctx)
  return { x = ctx.randn("x", { case.params.M, case.params.N }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.M }, "fp32") }
end

-- The reference (one thread per row, mean_reduction_ref.cu) and the `cuda` implementation (mean_reduction.cu:
-- a row per group of TPR threads held in registers, layouts from warp- to block-per-row, autotuned
-- over TPR and BLOCK): oplib's row-wise family.
-- Kernel defines and case size: NV (16-byte vectors per thread = cdiv(cols, TPR x VEC)) and, with
-- TPR = 0, the layout it picks depend on the row length, so the cuda kernel is compiled once
-- per configuration and NV, not once per configuration: the row is held in registers, whose
-- count must be known at compile time (a register array of NV vectors, its loops unrolled). Cases with the
-- same NV share one kernel; the reference's defines carry no size (oplib.rowwise, KERNELS.md).
local reference, cuda = oplib.rowwise {
  name = "mean_reduction",
  description = "row per TPR-thread group (warp- to block-per-row), every 16-byte load in flight, fp32 sum; or rows streamed through shared memory by cp.async.bulk (STAGES slots, persistent blocks; default: the operator's stream rule)",
  rows_cols = rows_cols,
  args = function(ins, outs, rows, cols, ctx) return { ins.x, outs.out, ctx.i32(rows), ctx.i32(cols) } end,
  -- ptxas -v (sm_90): its RPG > 1 kernels need fewer registers than the family's bound (KERNELS.md)
  rpg_regs = { [2] = { 8, 1.15 }, [4] = { 16, 1.45 } },
  -- H200, N = 20480 (docs/KERNELS.md): fp16 22.7 us streamed (256 threads, 2 slots) vs 31.1 in registers
  stream = { dtypes = { fp16 = true, bf16 = true }, min_bytes = 16384, block = 256, stages = 2 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- mean_reduction_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_rows {
    name = "mean_reduction",
    rows_cols = rows_cols,
    loop = true,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
