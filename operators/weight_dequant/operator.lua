-- weight_dequant: Y[i, j] = X[i, j] * S[i // T, j // T] (T = TILE_SIZE; N = M, S of
-- ceil(M / T) x ceil(N / T), scales may be negative), the product rounded once to the dtype.
-- Point-wise over the M * N elements with weight_dequant.cu's own vector (tb_pointwise_ops: a
-- 16-byte vector of X and the scale of its tile).
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

-- A case's shape: M rows, N = M columns (OPERATORS.md; a case may give N to differ), T, and S's
-- row stride ceil(N / T).
local function shape(case)
  local p = case.params
  local m, n, t = p.M, p.N or p.M, p.TILE_SIZE
  return m, n, t, (m + t - 1) // t, (n + t - 1) // t
end

function op.inputs(case, ctx)
  local m, n, _, sm, sn = shape(case)
  return { X = ctx.randn("X", { m, n }, case.dtype), S = ctx.randn("S", { sm, sn }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  local m, n = shape(case)
  return { Y = ctx.empty({ m, n }, case.dtype) }
end

-- Default BLOCK 256, UNROLL 4, the family's default until session 13, kept: the family's rule was
-- measured on tb_pointwise's kernels only (this one has three divisions a vector), and this one
-- was 1.8-3.4x ahead of torch at every H200 case with rho 1.08-1.09 at the largest
-- (docs/KERNELS.md, "The default launch shape").
local reference, cuda = oplib.pointwise {
  name = "weight_dequant",
  count = function(case) local m, n = shape(case) return m * n end,
  args = function(ins, outs, count, ctx, case)
    local _, n, t, _, sn = shape(case)
    return { ins.X, ins.S, outs.Y, ctx.i64(count), ctx.i64(n), ctx.i64(t), ctx.i64(sn) }
  end,
  default = { BLOCK = 256, UNROLL = 4, WAVES = 0 },
}
op.reference = reference

-- Triton: a program per TPB tiles' width of one row (grid: column blocks x rows), X viewed as
-- (TPB, T) so the TPB scales load once and broadcast; T is a constexpr (one compile per tile
-- size: the grid has one), rounded up to a power of two with the excess masked.
local function tile_p2(case) local _, _, t = shape(case) return oplib.next_pow2(t) end
-- TPB = 0: up to 8 tiles a program, no more than a row has; WARPS = 0: 8 elements a thread
-- (16 bytes of fp16), 1 to 8 warps.
local function tpb_of(case, cfg)
  if cfg.TPB > 0 then return cfg.TPB end
  local _, _, _, _, sn = shape(case)
  return math.min(8, oplib.next_pow2(sn))
end
local function warps_of(case, cfg)
  if cfg.WARPS > 0 then return cfg.WARPS end
  return math.max(1, math.min(8, tpb_of(case, cfg) * tile_p2(case) // 256))
end
op.implementations = {
  cuda = cuda,
  -- weight_dequant_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per TPB tile widths of a row, each tile's scale loaded once and broadcast",
    default = { TPB = 0, WARPS = 0, num_stages = 1 },
    space = { TPB = { 0, 1, 2, 4, 8, 16 }, WARPS = { 0, 1, 2, 4, 8 }, num_stages = { 1 } },
    -- 16 bytes to 64 elements per thread, and no more tiles a program than a row has
    valid = function(case, cfg)
      local _, _, _, _, sn = shape(case)
      local tpb = tpb_of(case, cfg)
      local per_thread = tpb * tile_p2(case) // (32 * warps_of(case, cfg))
      local size = require("tb.dtype").info[case.dtype].size
      return per_thread * size >= 16 and per_thread <= 64 and tpb <= oplib.next_pow2(sn)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local m, n, t, _, sn = shape(case)
      local tpb = tpb_of(case, cfg)
      return ctx.plan { ctx:triton { file = "weight_dequant_triton.py", kernel = "weight_dequant_kernel",
        grid = { ctx.cdiv(sn, tpb), m },
        args = { X = ins.X, S = ins.S, Y = outs.Y, N = ctx.i32(n), SN = ctx.i32(sn) },
        constexprs = { T = t, TP2 = tile_p2(case), TPB = tpb },
        num_warps = warps_of(case, cfg), num_stages = cfg.num_stages } }
    end,
  },
}

return op
