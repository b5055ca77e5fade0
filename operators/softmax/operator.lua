-- softmax: y = softmax(x, -1) row by row over (n_rows, n_cols) (torch.softmax: fp32 math, output
-- in the input dtype). Reference: one thread per row. `cuda`: a row per group of TPR threads held
-- in registers, one pass over the data.
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"

local function rows_cols(case) return case.params.n_rows, case.params.n_cols end

function op.inputs(case, ctx)
  return { x = ctx.randn("x", { case.params.n_rows, case.params.n_cols }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n_rows, case.params.n_cols }, case.dtype) }
end

-- The reference (one thread per row, softmax_ref.cu) and the `cuda` implementation (softmax.cu:
-- a row per group of TPR threads held in registers, layouts from warp- to block-per-row, autotuned
-- over TPR and BLOCK): oplib's row-wise family.
-- Kernel defines and case size: NV (16-byte vectors per thread = cdiv(cols, TPR x VEC)) and, with
-- TPR = 0, the layout it picks depend on the row length, so the cuda kernel is compiled once
-- per configuration and NV, not once per configuration: the row is held in registers, whose
-- count must be known at compile time (a register array of NV vectors, its loops unrolled). Cases with the
-- same NV share one kernel; the reference's defines carry no size (oplib.rowwise, KERNELS.md).
local reference, cuda = oplib.rowwise {
  name = "softmax",
  description = "row in registers per TPR-thread group (warp- to block-per-row), max/sum reductions, one pass; or rows streamed through shared memory by cp.async.bulk (STAGES slots, persistent blocks; default: the operator's stream rule)",
  rows_cols = rows_cols,
  args = function(ins, outs, rows, cols, ctx) return { ins.x, outs.out, ctx.i32(rows), ctx.i32(cols) } end,
  -- H200, n_cols = 10240 (docs/KERNELS.md): fp16 37.7 us streamed (automatic block, 2 slots) vs 41.0 in registers;
  -- autotune of 2026-11-29 (bound checks per vector, FULLVEC): 27.9 us with 256 threads, 3 slots, FULLVEC 1
  -- Since the fp16 packed max and ex2.approx.ftz (2026-11-29, fourth session), the register kernel with
  -- FULLVEC = 1 is the fastest at every fp16 case (bench/rows/fullvec.lua: 20.4 us at 10240 columns
  -- against 22.7 streamed, 23.9 with FULLVEC = 0): no stream rule any more
  stream = { dtypes = {}, reg_fullvec = { fp16 = 1 } },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- softmax_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_rows {
    name = "softmax",
    rows_cols = rows_cols,
    loop = false,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
