-- swiglu: out = silu(x) * y over (M, N) inputs, PyTorch's F.silu(x) * y: silu in fp32 rounded to
-- the dtype, then the product rounded again. Point-wise over the M * N elements, like vector_add.
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local shape = { case.params.M, case.params.N }
  return { x = ctx.randn("x", shape, case.dtype), y = ctx.randn("y", shape, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.M, case.params.N }, case.dtype) }
end

-- The reference (one thread per element, swiglu_ref.cu) and the `cuda` implementation
-- (swiglu.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride): oplib's point-wise family.
local reference, cuda = oplib.pointwise {
  name = "swiglu",
  count = function(case) return case.params.M * case.params.N end,
  args = function(ins, outs, n, ctx) return { ins.x, ins.y, outs.out, ctx.i64(n) } end,
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- swiglu_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "swiglu",
    count = function(case) return case.params.M * case.params.N end,
    tensors = function(ins, outs) return { x = ins.x, y = ins.y, out = outs.out } end,
  },
}

return op
