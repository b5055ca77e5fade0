-- rope: rotate-half (NeoX) rotary embedding of q (batch, seq, heads, head_dim) by cos and sin
-- (seq, head_dim / 2), the same row of cos/sin for every batch entry and head, each op rounded in
-- the dtype (PyTorch eager's q1 * cos - q2 * sin and q2 * cos + q1 * sin); a new output, q
-- untouched. Point-wise over the batch * seq * heads * head_dim / 2 element pairs (j, j + D/2):
-- rope.cu's own vector (tb_pointwise_ops) is 16 bytes of pairs from each half of a row.
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

local function dims(case)
  local p = case.params
  if p.head_dim % 2 ~= 0 then
    error(string.format("rope: head_dim = %d: the half-split rotation needs an even head_dim", p.head_dim), 0)
  end
  return p.batch_size, p.seq_len, p.n_heads, p.head_dim
end

function op.inputs(case, ctx)
  local b, s, h, d = dims(case)
  return { q = ctx.randn("q", { b, s, h, d }, case.dtype), cos = ctx.randn("cos", { s, d // 2 }, case.dtype),
           sin = ctx.randn("sin", { s, d // 2 }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  local b, s, h, d = dims(case)
  return { out = ctx.empty({ b, s, h, d }, case.dtype) }
end

-- Default UNROLL 2: four 16-byte loads a vector (both halves, cos, sin), so 8 in flight a thread
-- (the family's 128 bytes) and 40 registers; UNROLL 4 takes 78-88 (ptxas, sm_90).
local reference, cuda = oplib.pointwise {
  name = "rope",
  default = { BLOCK = 256, UNROLL = 2, WAVES = 0 },
  count = function(case) local b, s, h, d = dims(case) return b * s * h * (d // 2) end, -- element pairs
  args = function(ins, outs, n, ctx, case)
    local _, s, h, d = dims(case)
    return { ins.q, ins.cos, ins.sin, outs.out, ctx.i64(n), ctx.i64(s), ctx.i64(h), ctx.i64(d) }
  end,
}
op.reference = reference

-- Triton: a program per ROWS rows of (batch, seq, head) by the half row (HP2 = D/2 rounded up to
-- a power of two, the excess masked): both halves, and the rows' cos and sin, as 2-D blocks.
local function hp2(case) local _, _, _, d = dims(case) return oplib.next_pow2(d // 2) end
op.implementations = {
  cuda = cuda,
  -- rope_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per ROWS (batch, seq, head) rows, both halves and cos/sin as 2-D blocks",
    default = { ROWS = 0, num_warps = 4, num_stages = 1 },
    space = { ROWS = { 0, 4, 8, 16, 32, 64 }, num_warps = { 2, 4, 8 }, num_stages = { 1 } },
    -- ROWS = 0: 2048 pairs a program. 16 bytes to 32 pairs per thread.
    valid = function(case, cfg)
      local rows = cfg.ROWS > 0 and cfg.ROWS or math.max(1, 2048 // hp2(case))
      local per_thread = rows * hp2(case) // (32 * cfg.num_warps)
      local size = require("tb.dtype").info[case.dtype].size
      return per_thread * size >= 16 and per_thread <= 32
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local b, s, h, d = dims(case)
      local rows = cfg.ROWS > 0 and cfg.ROWS or math.max(1, 2048 // hp2(case))
      return ctx.plan { ctx:triton { file = "rope_triton.py", kernel = "rope_kernel",
        grid = { ctx.cdiv(b * s * h, rows) },
        args = { q = ins.q, cos = ins.cos, sin = ins.sin, out = outs.out, nrows = ctx.i32(b * s * h),
                 S = ctx.i32(s), H = ctx.i32(h), D = ctx.i32(d), HALF = ctx.i32(d // 2) },
        constexprs = { ROWS = rows, HP2 = hp2(case) }, num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end,
  },
}

return op
