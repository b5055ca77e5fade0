-- fused_activation: z = x * gate + bias, out = silu(z) over n fp32 elements (three full-size
-- inputs). Point-wise with three inputs: oplib's point-wise family over fused_activation.cu's own
-- vectors (tb_pointwise_ops: a 16-byte vector of each input).
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local n = case.params.n
  return { x = ctx.randn("x", { n }, case.dtype), gate = ctx.randn("gate", { n }, case.dtype),
           bias = ctx.randn("bias", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, fused_activation_ref.cu) and the `cuda` implementation
-- (fused_activation.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride).
-- Default BLOCK 256, UNROLL 4, the family's default until session 13, kept: the family's rule was
-- measured on tb_pointwise's kernels only, and this one was 1.7-2.1x ahead of torch at every H200
-- case with rho 1.13 at the largest (docs/KERNELS.md, "The default launch shape").
local reference, cuda = oplib.pointwise {
  name = "fused_activation",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, ins.gate, ins.bias, outs.out, ctx.i64(n) } end,
  default = { BLOCK = 256, UNROLL = 4, WAVES = 0 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- fused_activation_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "fused_activation",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, gate = ins.gate, bias = ins.bias, out = outs.out } end,
  },
}

return op
