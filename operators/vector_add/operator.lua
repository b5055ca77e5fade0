-- vector_add: out = x + y over n elements (torch `+`, in the input dtype). The template the
-- other point-wise operators follow: inputs, outputs, a one-thread-per-element reference and the
-- `cuda` implementation (16-byte accesses, UNROLL vectors in flight per thread, grid-stride).
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local n = case.params.n
  if case.dtype == "int8" then -- torch.randint(-32, 33): the sum cannot overflow int8
    return { x = ctx.randint("x", { n }, "int8", -32, 33), y = ctx.randint("y", { n }, "int8", -32, 33) }
  end
  return { x = ctx.randn("x", { n }, case.dtype), y = ctx.randn("y", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, vector_add_ref.cu) and the `cuda` implementation
-- (vector_add.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride): oplib's point-wise family.
local reference, cuda = oplib.pointwise {
  name = "vector_add",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, ins.y, outs.out, ctx.i64(n) } end,
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- vector_add_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "vector_add",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, y = ins.y, out = outs.out } end,
  },
}

return op
