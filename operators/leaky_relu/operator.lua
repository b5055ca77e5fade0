-- leaky_relu: out = x > 0 ? x : 0.01 * x over n elements (F.leaky_relu, negative_slope 0.01: for
-- half types the product in fp32, rounded once; NaN propagates). Point-wise like relu.
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  return { x = ctx.randn("x", { case.params.n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, leaky_relu_ref.cu) and the `cuda` implementation
-- (leaky_relu.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride): oplib's point-wise family.
-- Default BLOCK 128, UNROLL 2 (32 bytes in flight a thread, 4 KiB of fp16 a block), not the
-- family's 256 x 4: on the H200 the autotune of sigmoid (the same driver, the same bytes per
-- element, its arithmetic hidden under the memory time) picked 128 x 2 (or 128 x 1) at every fp16
-- and bf16 case from n = 17.5 M and every fp32 case from 12.5 M, 2-5 % faster than 256 x 4
-- (docs/KERNELS.md); leaky_relu's cuda was 0.4-4 % behind torch with 256 x 4.
local reference, cuda = oplib.pointwise {
  name = "leaky_relu",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, outs.out, ctx.i64(n) } end,
  default = { BLOCK = 128, UNROLL = 2, WAVES = 0 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- leaky_relu_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "leaky_relu",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
