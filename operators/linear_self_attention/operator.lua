-- linear_self_attention: non-causal single-head linear attention (OPERATORS.md 31): phi(x) = x + 1
-- (x > 0) else exp(x), S = phi(K)^T V (D, D), Z = sum over rows of phi(K) (D,), out = phi(Q) S /
-- ((phi(Q) Z)[:, None] + eps), eps = 1e-6, no 1/sqrt(D); Q, K, V, out (M, D) fp32, inputs
-- uniform(-3, 3). TileBench's reference runs its matmuls in TF32, and so do the `cuda` and
-- `triton` kernels (tensor cores); the reference here accumulates in double.
-- Reference: one thread per entry of [S | Z], then one per output (linear_self_attention_ref.cu).
-- `cuda`: clear S and Z, S and Z by split-K TF32 mma.sync with atomic adds, out by a TF32 mma.sync
-- tile kernel whose epilogue divides by the fp32 denominators (linear_self_attention.cu).
-- `triton`: S and Z by split-K tl.dot into per-split partials, summed in a fixed order by a
-- second kernel (no float atomics: the same bits on every run), then the out tiles.
local op = {}
op.category = "MatMul/Attn"

local function cdiv(a, b) return (a + b - 1) // b end

function op.inputs(case, ctx)
  local p = case.params
  return { Q = ctx.rand("Q", { p.M, p.D }, "fp32", -3, 3),
           K = ctx.rand("K", { p.M, p.D }, "fp32", -3, 3),
           V = ctx.rand("V", { p.M, p.D }, "fp32", -3, 3) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.M, case.params.D }, "fp32") }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local kv = ctx.empty({ p.D, p.D + 1 }, "fp32")
  local f_kv = ctx:kernel("linear_self_attention_ref.cu", "lsa_ref_kv", {})
  local f_out = ctx:kernel("linear_self_attention_ref.cu", "lsa_ref_out", {})
  return ctx.plan {
    { fn = f_kv, grid = { cdiv(p.D * (p.D + 1), 128) }, block = { 128 },
      args = { ins.K, ins.V, kv, ctx.i32(p.M), ctx.i32(p.D) } },
    { fn = f_out, grid = { cdiv(p.M * p.D, 128) }, block = { 128 },
      args = { ins.Q, kv, outs.out, ctx.i32(p.M), ctx.i32(p.D), ctx.f32(p.eps) } },
  }
end

-- The kernels' shapes: D a multiple of 32 (the K-steps), of TILE (S blocks) and of BN (out tiles).
local function supports(case)
  local D = case.params.D
  if D < 32 or D % 32 ~= 0 then
    return false, string.format("D = %d: the kernels take D in multiples of 32 (the grid's are 32 .. 256)", D)
  end
  return true
end

-- A tile size: 0 = automatic, min(want, D).
local function auto(v, want, D) return v == 0 and math.min(want, D) or v end

-- Row splits of the S kernel: SPLIT = 0 aims at two CTAs per SM over the (D / TILE)^2 blocks of
-- S; chunk (rows per split) is a multiple of 32.
local function kv_split(M, D, tile, split, sms)
  local blocks = (D // tile) ^ 2
  local want = split > 0 and split or math.max(1, (2 * sms) // blocks)
  local steps = cdiv(M, 32)
  local chunk = cdiv(steps, math.max(1, math.min(want, steps))) * 32
  return chunk, cdiv(M, chunk)
end

-- The out kernel's tiles: (BM, BN, MINB), MINB the CTAs an SM the kernel is compiled for
-- (__launch_bounds__'s second argument; 1 compiles as before). BM = 0 (the default): 128-row
-- tiles (8 warps, 162 registers at BN 128: one CTA an SM) while they fit one wave on the SMs,
-- else 64-row tiles compiled for 3 CTAs an SM (168 registers, 40 bytes of stack at BN 128:
-- 3 x 132 = 396 CTAs at once). The CTA is latency-bound (D / 32 dependent steps of loads and
-- products), so a second wave costs a whole CTA's time however few CTAs it has: at M = 10000,
-- D = 256 the 158 tiles of 128 rows ran in two waves on 132 SMs, and the H200 time jumped from
-- 0.062 ms (M = 8192: 128 tiles, one wave) to 0.0916, slower than torch's 0.0828; 314 tiles of 64
-- rows run in one wave. An explicit BM (the space) keeps MINB 1.
local function out_tiles(M, D, cfg, sms)
  local bn = auto(cfg.BN, 128, D)
  if cfg.BM ~= 0 then return cfg.BM, bn, 1 end
  if cdiv(M, 128) * (D // bn) <= sms then return 128, bn, 1 end
  return 64, bn, 3
end
op.out_tiles = out_tiles

op.implementations = {
  cuda = {
    source = "linear_self_attention.cu",
    description = "TF32 mma.sync (m16n8k8, fp32 accumulation): S and Z by split-K over the rows (TILE x TILE blocks, 16-byte loads, phi once per element, atomic adds), out by BM x BN tiles with the fp32 denominators phi(Q) . Z in the epilogue; a clearing kernel first",
    -- TILE = 0, BN = 0: automatic, min(64, D) and min(128, D): 16 blocks x 16 splits at D = 256,
    -- out tiles BM x min(D, 128) with BM = 0: 128, or 64 where 128 would need a second wave
    -- (out_tiles)
    default = { TILE = 0, SPLIT = 0, BM = 0, BN = 0 },
    space = { TILE = { 32, 64 }, SPLIT = { 0, 4, 8, 16, 32 }, BM = { 64, 128 }, BN = { 32, 64, 128 } },
    supports = supports,
    -- TILE and BN within D; BN >= BM / 4 (each thread loads a 16-byte vector of S a step);
    -- BM 64 x BN 128 needs 214 registers (ptxas, sm_90): allowed, 128 threads
    valid = function(case, cfg)
      local D = case.params.D
      if not supports(case) then return false end
      local tile = auto(cfg.TILE, 64, D)
      local bm, bn = out_tiles(case.params.M, D, cfg, 132)
      return tile <= D and bn <= D and D % bn == 0 and bn >= bm // 4
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local D = p.D
      local tile = auto(cfg.TILE, 64, D)
      local bm, bn, minb = out_tiles(p.M, D, cfg, ctx.props.sm_count or 132)
      local chunk, nsplit = kv_split(p.M, D, tile, cfg.SPLIT, ctx.props.sm_count or 132)
      local kv = ctx.empty({ D * D + D }, "fp32") -- S then Z
      local zero = ctx:kernel("linear_self_attention.cu", "lsa_zero", { TILE = tile })
      local f_kv = ctx:kernel("linear_self_attention.cu", "lsa_kv", { TILE = tile })
      local out_defines = { BM = bm, BN = bn }
      if minb ~= 1 then out_defines.MINB = minb end
      local f_out = ctx:kernel("linear_self_attention.cu", "lsa_out", out_defines)
      return ctx.plan {
        { fn = zero, grid = { cdiv(D * D + D, 256) }, block = { 256 }, args = { kv, ctx.i32(D * D + D) } },
        { fn = f_kv, grid = { D // tile, D // tile, nsplit }, block = { 128 },
          args = { ins.K, ins.V, kv, ctx.i32(p.M), ctx.i32(D), ctx.i32(chunk) } },
        { fn = f_out, grid = { cdiv(p.M, bm), D // bn }, block = { 2 * bm },
          args = { ins.Q, kv, outs.out, ctx.i32(p.M), ctx.i32(D), ctx.f32(p.eps) } },
      }
    end,
  },
  -- linear_self_attention_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: phi(K)^T V by split-K tl.dot (TF32) into per-split partials, their sum in a fixed order (deterministic), then phi(Q) S tiles divided by the fp32 denominators",
    default = { BT = 0, SPLIT = 0, BM = 64, BN = 0, num_warps = 4 }, -- BT, BN 0: min(64, D)
    space = { BT = { 32, 64 }, SPLIT = { 0, 8, 16 }, BM = { 32, 64, 128 }, BN = { 32, 64, 128 }, num_warps = { 4, 8 } },
    supports = supports,
    valid = function(case, cfg)
      local D = case.params.D
      if not supports(case) then return false end
      local bt, bn = auto(cfg.BT, 64, D), auto(cfg.BN, 64, D)
      return bt <= D and bn <= D and D % bn == 0 and cfg.BM * bn // (32 * cfg.num_warps) <= 128
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local D = p.D
      local bt, bn = auto(cfg.BT, 64, D), auto(cfg.BN, 64, D)
      local chunk, nsplit = kv_split(p.M, D, bt, cfg.SPLIT, ctx.props.sm_count or 132)
      local n = D * D + D
      local part = ctx.empty({ nsplit, n }, "fp32") -- each split's S then Z
      local kv = ctx.empty({ n }, "fp32")
      return ctx.plan {
        ctx:triton { file = "linear_self_attention_triton.py", kernel = "lsa_kv_kernel",
          grid = { D // bt, D // bt, nsplit },
          args = { K = ins.K, V = ins.V, part = part, M = ctx.i32(p.M), D = ctx.i32(D), chunk = ctx.i32(chunk) },
          constexprs = { BT = bt, BK = 32 }, num_warps = 4, num_stages = 2 },
        -- 64 splits x 64 entries a step: at most three steps at the grid's splits (157 at D = 32)
        ctx:triton { file = "linear_self_attention_triton.py", kernel = "lsa_reduce_kernel",
          grid = { cdiv(n, 64) }, args = { part = part, kv = kv, n = ctx.i32(n), nsplit = ctx.i32(nsplit) },
          constexprs = { BZ = 64, BLOCK = 64 }, num_warps = 4, num_stages = 1 },
        ctx:triton { file = "linear_self_attention_triton.py", kernel = "lsa_out_kernel",
          grid = { cdiv(p.M, cfg.BM), D // bn },
          args = { Q = ins.Q, kv = kv, out = outs.out, M = ctx.i32(p.M), D = ctx.i32(D), eps = ctx.f32(p.eps) },
          constexprs = { BM = cfg.BM, BN = bn, BK = 32 }, num_warps = cfg.num_warps, num_stages = 2 },
      }
    end,
  },
}

return op
