-- reverse_array: out[i] = input[n - 1 - i] (OPERATORS.md 45: flip(0) into a fresh tensor).
-- Point-wise over n elements with reverse_array.cu's own vector (16 bytes of input from the
-- mirrored end, reversed): oplib's point-wise family.
local oplib = require("oplib")

local op = {}
op.category = "Data Layout"

function op.inputs(case, ctx)
  local n = case.params.n
  if case.dtype == "int8" then return { input = ctx.randint("input", { n }, "int8", -64, 65) } end -- [-64, 64]
  return { input = ctx.randn("input", { n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

-- The reference (one thread per element, reverse_array_ref.cu) and `cuda` (reverse_array.cu).
-- Default BLOCK 128 x UNROLL 2, as matrix_copy (docs/LAYOUT.md).
local reference, cuda = oplib.pointwise {
  name = "reverse_array",
  count = function(case) return case.params.n end,
  args = function(ins, outs, n, ctx) return { ins.input, outs.out, ctx.i64(n) } end,
  default = { BLOCK = 128, UNROLL = 2, WAVES = 0 },
}
op.reference = reference
op.implementations = {
  cuda = cuda,
  -- reverse_array_triton.py: Triton, compiled ahead of time (selected with --impl triton). The
  -- point-wise family's plan and space, plus the constexpr V (16 bytes of the dtype: a row of the
  -- mirrored block a thread flips).
  triton = (function()
    local t = oplib.triton_pointwise {
      name = "reverse_array",
      count = function(case) return case.params.n end,
      tensors = function(ins, outs) return { x = ins.input, out = outs.out } end,
    }
    t.description = "Triton: a program per BLOCK elements, the mirrored block loaded in order as rows of 16 bytes, each row flipped in its thread and stored in order"
    t.plan = function(case, ins, outs, cfg, ctx)
      local n = case.params.n
      return ctx.plan { ctx:triton { file = "reverse_array_triton.py", kernel = "reverse_array_kernel",
        grid = { ctx.cdiv(n, cfg.BLOCK) }, args = { x = ins.input, out = outs.out, n = ctx.i64(n) },
        constexprs = { BLOCK = cfg.BLOCK, V = 16 // ctx.dtype_size(case.dtype) },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end
    return t
  end)(),
}

return op
