-- interleave: out (2n,), out[2i] = A[i], out[2i + 1] = B[i] (OPERATORS.md 40). Point-wise over
-- the n element pairs: oplib's point-wise family, with interleave.cu's own vector (16 bytes of A
-- and of B in, 32 bytes of out).
local oplib = require("oplib")

local op = {}
op.category = "Data Layout"

function op.inputs(case, ctx)
  local n = case.params.n
  if case.dtype == "int8" then -- [-64, 64]
    return { A = ctx.randint("A", { n }, "int8", -64, 65), B = ctx.randint("B", { n }, "int8", -64, 65) }
  end
  return { A = ctx.randn("A", { n }, case.dtype), B = ctx.randn("B", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ 2 * case.params.n }, case.dtype) }
end

-- The reference (interleave_ref.cu: one thread per element of out, so its count is 2n).
local args = function(ins, outs, _, ctx, case) return { ins.A, ins.B, outs.out, ctx.i64(case.params.n) } end
local reference = oplib.pointwise {
  name = "interleave",
  count = function(case) return 2 * case.params.n end,
  args = args,
}
-- `cuda` (interleave.cu): a thread's vector is 16 bytes of A and of B (HALF = 0, the warp's
-- stores made contiguous by shuffle) or 8 bytes of each (HALF = 1), so VE = 16 or 8 bytes of
-- the dtype pairs; oplib's point-wise space and grid, with HALF beside BLOCK, UNROLL and WAVES.
-- Default BLOCK 128 x UNROLL 2, as matrix_copy (docs/LAYOUT.md).
local space = { HALF = { 0, 1 } }
for k, v in pairs(oplib.POINTWISE_SPACE) do space[k] = { table.unpack(v) } end
local cuda = {
  source = "interleave.cu",
  description = "16-byte loads of A and B, UNROLL vectors per thread in flight, PRMT interleave, each warp store 512 contiguous bytes (a shuffle exchange, or 8-byte loads with HALF = 1), grid-stride chunks",
  default = { BLOCK = 128, UNROLL = 2, WAVES = 0, HALF = 0 },
  space = space,
  plan = function(case, ins, outs, cfg, ctx)
    local n = case.params.n
    local f = ctx:kernel("interleave.cu", "interleave_cuda",
      { DTYPE = ctx.ctype(case.dtype), BLOCK = cfg.BLOCK, UNROLL = cfg.UNROLL, HALF = cfg.HALF })
    local ve = (cfg.HALF == 1 and 8 or 16) // ctx.dtype_size(case.dtype)
    return ctx.plan { { fn = f, grid = { oplib.pointwise_grid(n, case.dtype, cfg, ctx, ve) }, block = { cfg.BLOCK },
                        args = args(ins, outs, n, ctx, case) } }
  end,
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- interleave_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "interleave",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { A = ins.A, B = ins.B, out = outs.out } end,
  },
}

return op
