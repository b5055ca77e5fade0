-- quantize_global: out = fp16(x) over n fp32 elements (x.to(torch.float16): round to nearest
-- even, bit-exact). The output is fp16 whatever the case dtype (the input's, fp32). Point-wise
-- over quantize_global.cu's own vectors (tb_pointwise_ops: 8 elements, two 16-byte loads of fp32
-- and one 16-byte store of fp16).
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  return { x = ctx.randn("x", { case.params.n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, "fp16") }
end

local reference, cuda = oplib.pointwise {
  name = "quantize_global",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.x, outs.out, ctx.i64(n) } end,
  vec = function() return 8 end, -- a 16-byte vector of the fp16 output
  -- Default BLOCK 128, UNROLL 1: 32 bytes of fp32 in flight a thread (the family's 256 x 4 had
  -- 128, 256 KiB an SM at full occupancy, more than its L1 holds for the misses in flight; the
  -- point-wise autotunes on the H200 settled on 16-32 bytes a thread; docs/KERNELS.md).
  default = { BLOCK = 128, UNROLL = 1, WAVES = 0 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- quantize_global_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "quantize_global",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
  },
}

return op
