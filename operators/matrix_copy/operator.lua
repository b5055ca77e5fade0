-- matrix_copy: B = A + 0 for an (N, N) A (OPERATORS.md 38), a fresh copy in A's dtype. A copy is
-- point-wise over the N * N elements: oplib's point-wise family, with the identity.
local oplib = require("oplib")

local op = {}
op.category = "Data Layout"

local function count(case) return case.params.N * case.params.N end

function op.inputs(case, ctx)
  local n = case.params.N
  if case.dtype == "int8" then return { A = ctx.randint("A", { n, n }, "int8", -64, 65) } end -- [-64, 64]
  return { A = ctx.randn("A", { n, n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { B = ctx.empty({ case.params.N, case.params.N }, case.dtype) }
end

-- The reference (one thread per element, matrix_copy_ref.cu: A + 0) and the `cuda`
-- implementation (matrix_copy.cu: 16-byte vectors, grid-stride). Default BLOCK 128 x UNROLL 2
-- (4 KiB a block for every dtype): on the H200 the point-wise operators' autotune runs picked
-- small blocks for the largest fp32 cases (mul2, relu, vector_add: BLOCK 128 with UNROLL 1 or 2,
-- 1-3 % faster than the family's 256 x 4 and level with torch's eager kernel, whose blocks are as
-- small; results/H200/csv/*_autotune.csv), and no dtype lost with them.
local reference, cuda = oplib.pointwise {
  name = "matrix_copy",
  count = count,
  args = function(ins, outs, n, ctx) return { ins.A, outs.B, ctx.i64(n) } end,
  default = { BLOCK = 128, UNROLL = 2, WAVES = 0 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- matrix_copy_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "matrix_copy",
    count = count,
    tensors = function(ins, outs) return { A = ins.A, B = outs.B } end,
  },
}

return op
