-- sigmoid: out = 1 / (1 + exp(-x)) over n elements (torch.sigmoid; fp32 math rounded once
-- to the dtype). Point-wise like vector_add, with one input.
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local n = case.params.n
  return { x = ctx.randn("x", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, sigmoid_ref.cu) and the `cuda` implementation
-- (sigmoid.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride): oplib's point-wise family.
local reference, cuda = oplib.pointwise {
  name = "sigmoid",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, outs.out, ctx.i64(n) } end,
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- sigmoid_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "sigmoid",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
