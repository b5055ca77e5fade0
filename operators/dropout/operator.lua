-- dropout: out = (x * x_keep) * (1 / (1 - p)) over n elements in x's dtype (PyTorch eager: the
-- mask product rounded to the dtype, then the scale as an fp32 multiply rounded again; with
-- p = 0.5 both are exact: kept elements give 2x, dropped ones 0). No RNG inside the operator:
-- x_keep is an input. Point-wise with two inputs, like vector_add, plus the scale.
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

-- TileBench draws the mask as torch.bernoulli(full(n, 1 - p)); tilebench's seeded generator has
-- no Bernoulli draw, but randint(0, 2) is exactly Bernoulli(0.5) (each value the top bit of a
-- Philox word), which is the grid's p. Any other p is refused with the reason rather than drawn
-- from the wrong distribution.
local function check_p(case)
  local p = case.params.p
  if p ~= 0.5 then
    error(string.format("dropout: p = %s: the keep-mask is drawn as randint(0, 2), a Bernoulli(0.5) mask, "
      .. "so only p = 0.5 is supported (tilebench's generator has no Bernoulli(1 - p) draw)", tostring(p)), 0)
  end
  return p
end

-- The scale as PyTorch applies it to a tensor: the Python float 1 / (1 - p), then fp32.
local function scale(case) return 1.0 / (1.0 - check_p(case)) end

function op.inputs(case, ctx)
  check_p(case)
  local n = case.params.n
  return { x = ctx.randn("x", { n }, case.dtype), x_keep = ctx.randint("x_keep", { n }, case.dtype, 0, 2) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, dropout_ref.cu) and the `cuda` implementation
-- (dropout.cu: 16-byte vectors, UNROLL in flight per thread, grid-stride): oplib's point-wise family.
local reference, cuda = oplib.pointwise {
  name = "dropout",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx, case)
    return { ins.x, ins.x_keep, outs.out, ctx.i64(n), ctx.f32(scale(case)) }
  end,
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- dropout_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = oplib.triton_pointwise {
    name = "dropout",
    count = function(case) return case.params.n end,
    tensors = function(ins, outs) return { x = ins.x, x_keep = ins.x_keep, out = outs.out } end,
    scalars = function(case, ctx) return { scale = ctx.f32(scale(case)) } end,
  },
}

return op
