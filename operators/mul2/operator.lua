-- mul2: out = x * 2 over n elements (in the input dtype; exact for floats and for the int8
-- inputs, which lie in [-32, 32]). Point-wise like vector_add, with one input.
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local n = case.params.n
  if case.dtype == "int8" then -- integers in [-32, 32]: doubling cannot overflow int8
    return { x = ctx.randint("x", { n }, "int8", -32, 33) }
  end
  return { x = ctx.randn("x", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, mul2_ref.cu) and the `cuda` implementation
-- (mul2.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride): oplib's point-wise family.
local reference, cuda = oplib.pointwise {
  name = "mul2",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, outs.out, ctx.i64(n) } end,
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- mul2_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "mul2",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
