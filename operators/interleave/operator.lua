-- interleave: out (2n,), out[2i] = A[i], out[2i + 1] = B[i] (OPERATORS.md 40). Point-wise over
-- the n element pairs: oplib's point-wise family, with interleave.cu's own vector (16 bytes of A
-- and of B in, 32 bytes of out).
local oplib = require("oplib")

local op = {}
op.category = "Data Layout"

function op.inputs(case, ctx)
  local n = case.params.n
  if case.dtype == "int8" then -- [-64, 64]
    return { A = ctx.randint("A", { n }, "int8", -64, 65), B = ctx.randint("B", { n }, "int8", -64, 65) }
  end
  return { A = ctx.randn("A", { n }, case.dtype), B = ctx.randn("B", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ 2 * case.params.n }, case.dtype) }
end

-- The reference (interleave_ref.cu: one thread per element of out, so its count is 2n) and
-- `cuda` (interleave.cu: a thread's vector is VE pairs, so its count is n). Default BLOCK 128 x
-- UNROLL 2, as matrix_copy (docs/LAYOUT.md).
local args = function(ins, outs, _, ctx, case) return { ins.A, ins.B, outs.out, ctx.i64(case.params.n) } end
local reference = oplib.pointwise {
  name = "interleave",
  count = function(case) return 2 * case.params.n end,
  args = args,
}
local _, cuda = oplib.pointwise {
  name = "interleave",
  count = function(case) return case.params.n end,
  args = args,
  default = { BLOCK = 128, UNROLL = 2, WAVES = 0 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- interleave_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "interleave",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { A = ins.A, B = ins.B, out = outs.out } end,
  },
}

return op
