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
-- Default: the family's rule (BLOCK 128, UNROLL 2 for fp16/bf16 and 1 for fp32). Session 9 had
-- set 128 x 2 here, from the H200 autotune of sigmoid (the same driver, the same bytes per
-- element, its arithmetic hidden under the memory time): 2-5 % faster than the family's former
-- 256 x 4, with which leaky_relu's cuda was 0.4-6 % behind torch; the rule keeps 128 x 2 for the
-- 2-byte dtypes and takes 128 x 1 for fp32, level with 128 x 2 there (docs/KERNELS.md).
local reference, cuda = oplib.pointwise {
  name = "leaky_relu",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, outs.out, ctx.i64(n) } end,
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
