-- argmax: out[r] = index of the first maximum of x[r, :] over (M, N) (torch.argmax(x, dim=1)),
-- int64. Reference: one thread per row, a left-to-right scan. `cuda`: a row per group of TPR
-- threads, all of its loads in flight at once, (value, index) reductions with ties to the lower
-- index.
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"

local function rows_cols(case) return case.params.M, case.params.N end

function op.inputs(case, ctx)
  return { x = ctx.randn("x", { case.params.M, case.params.N }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.M }, "int64") }
end

-- The reference (one thread per row, argmax_ref.cu) and the `cuda` implementation (argmax.cu:
-- a row per group of TPR threads held in registers, layouts from warp- to block-per-row, autotuned
-- over TPR and BLOCK): oplib's row-wise family.
-- Kernel defines and case size: NV (16-byte vectors per thread = cdiv(cols, TPR x VEC)) and, with
-- TPR = 0, the layout it picks depend on the row length, so the cuda kernel is compiled once
-- per configuration and NV, not once per configuration: the row is held in registers, whose
-- count must be known at compile time (a register array of NV vectors, its loops unrolled). Cases with the
-- same NV share one kernel; the reference's defines carry no size (oplib.rowwise, KERNELS.md).
local reference, cuda = oplib.rowwise {
  name = "argmax",
  description = "row per TPR-thread group (warp- to block-per-row), every 16-byte load in flight, first-index ties; or rows streamed through shared memory by cp.async.bulk (STAGES slots, persistent blocks; default: the operator's stream rule)",
  rows_cols = rows_cols,
  args = function(ins, outs, rows, cols, ctx) return { ins.x, outs.out, ctx.i32(rows), ctx.i32(cols) } end,
  -- H200, N = 20480 (docs/KERNELS.md): fp16 56.0 / fp32 53.4 us streamed (automatic block, 2 slots) vs 73.5 / 63.9
  -- in registers with the automatic layout. Over the whole grid (PERFORMANCE.md, runs A and B) streaming is
  -- 7-22 % slower for rows under 34 KiB (fp16) and 52 KiB (fp32), 14-24 % faster from there up. Autotune of
  -- 2026-11-29 (bound checks per vector, FULLVEC): fp16 38.0 us with 512 threads, fp32 50.0 us with 1024 (the
  -- automatic block then; 512 was 10-13 % slower from N = 15360 up), 2 slots. Since fp16's packed search
  -- (2026-11-29, fourth session) the fp16 register kernel with FULLVEC = 1 is the fastest at every case
  -- (bench/rows/fullvec.lua: 20.9 us at N = 20480 against 22.9 streamed, 37.7 with FULLVEC = 0).
  stream = { dtypes = { fp32 = true }, min_bytes = { fp32 = 53248 }, block = { fp32 = 1024 }, stages = 2,
             fullvec = 1, reg_fullvec = { fp16 = 1 } },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- argmax_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_rows {
    name = "argmax",
    rows_cols = rows_cols,
    loop = true,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
