-- relu: out = max(x, 0) over n elements (torch.relu: NaN propagates; int8 supported).
-- Point-wise like vector_add, with one input.
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local n = case.params.n
  if case.dtype == "int8" then -- torch.randint(-64, 65), the newest TileBench generator
    return { x = ctx.randint("x", { n }, "int8", -64, 65) }
  end
  return { x = ctx.randn("x", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, relu_ref.cu) and the `cuda` implementation
-- (relu.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride): oplib's point-wise family.
local reference, cuda = oplib.pointwise {
  name = "relu",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, outs.out, ctx.i64(n) } end,
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- relu_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "relu",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
