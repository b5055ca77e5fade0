-- swiglu: out = silu(x) * y over (M, N) inputs, PyTorch's F.silu(x) * y: silu in fp32 rounded to
-- the dtype, then the product rounded again. Point-wise over the M * N elements, like vector_add.
local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local shape = { case.params.M, case.params.N }
  return { x = ctx.randn("x", shape, case.dtype), y = ctx.randn("y", shape, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.M, case.params.N }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local n = case.params.M * case.params.N
  local f = ctx:kernel("swiglu_ref.cu", "swiglu_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(n, 256) }, block = { 256 },
                      args = { ins.x, ins.y, outs.out, ctx.i64(n) } } }
end

-- Blocks for n elements: one per BLOCK * UNROLL vectors, or, with WAVES > 0, at most WAVES
-- times what the device holds at once (the kernel's grid-stride loop covers the rest).
local function grid_size(n, dtype, cfg, ctx)
  local per_block = cfg.BLOCK * cfg.UNROLL * (16 // ctx.dtype_size(dtype))
  local blocks = math.max(1, ctx.cdiv(n, per_block))
  if cfg.WAVES > 0 then
    local resident = ctx.props.sm_count * math.max(1, (ctx.props.max_threads_per_sm or 2048) // cfg.BLOCK)
    blocks = math.min(blocks, resident * cfg.WAVES)
  end
  return blocks
end

op.implementations = {
  cuda = {
    source = "swiglu.cu",
    description = "16-byte vector loads/stores, UNROLL vectors per thread in flight, grid-stride chunks",
    default = { BLOCK = 256, UNROLL = 4, WAVES = 0 },
    space = { BLOCK = { 128, 256, 512, 1024 }, UNROLL = { 1, 2, 4, 8 }, WAVES = { 0, 2 } },
    plan = function(case, ins, outs, cfg, ctx)
      local n = case.params.M * case.params.N
      local f = ctx:kernel("swiglu.cu", "swiglu_cuda",
        { DTYPE = ctx.ctype(case.dtype), BLOCK = cfg.BLOCK, UNROLL = cfg.UNROLL })
      return ctx.plan { { fn = f, grid = { grid_size(n, case.dtype, cfg, ctx) }, block = { cfg.BLOCK },
                          args = { ins.x, ins.y, outs.out, ctx.i64(n) } } }
    end,
  },
}

return op
