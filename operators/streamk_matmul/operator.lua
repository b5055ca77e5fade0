-- streamk_matmul: C (m, n) = A (m, k) @ B (k, n) in fp16, bf16 and fp32 (TF32 tensor cores, as
-- the reference's allow_tf32), OPERATORS.md 29. An ordinary GEMM whose point is the schedule: the
-- `cuda` default is gemm_streamk (operators/_shared/gemm_wgmma.cu with STREAMK: gemm_tma's TMA +
-- wgmma pipeline over persistent CTAs, the tile remainder's K-loops shared out evenly, fp32
-- partials fixed up through a workspace without waiting; gemm.lua's streamk_split), with the gemm
-- family's other kernels in its autotune space; `lib` is cuBLASLt; `triton` is a Stream-K kernel
-- of its own (streamk_matmul_triton.py).
local gemm = require("gemm")

local op = {}
op.category = "MatMul/Attn"

local function problem(case)
  local p = case.params
  return { M = p.m, N = p.n, K = p.k, batch = 1, dtype = gemm.canon(case.dtype) }
end

-- randn(m, k) and randn(k, n), unscaled (TileBench's generator)
function op.inputs(case, ctx)
  local p = problem(case)
  return { a = ctx.randn("a", { p.M, p.K }, p.dtype), b = ctx.randn("b", { p.K, p.N }, p.dtype) }
end

function op.outputs(case, ins, ctx)
  local p = problem(case)
  return { c = ctx.empty({ p.M, p.N }, p.dtype) }
end

function op.reference(case, ins, outs, ctx)
  return gemm.reference(problem(case), ins.a, ins.b, outs.c, ctx)
end

-- The gemm family's space with the Stream-K variant and its split (SK, gemm.streamk_split; the
-- other variants take SK = 1 only). mma and ws are left out: slower everywhere they were timed
-- (docs/MATMUL.md) and not Stream-K.
local CUDA_SPACE = { VARIANT = { "sk", "tma", "pp", "wgmma" }, BN = { 128, 256 }, STAGES = { 3, 4, 5, 6 },
                     SK = { 1, 2 } }

-- Triton: tile sizes as the matmul family's, SK 0 = data-parallel only
local TRITON_SPACE = { BM = { 64, 128 }, BN = { 64, 128, 256 }, BK = { 32, 64 }, GROUP_M = { 8 }, SK = { 0, 1, 2 },
                       num_warps = { 4, 8 }, num_stages = { 3, 4 } }

-- BK = 0 (the default's): 32 for fp32, 64 for fp16/bf16 (three stages of 128 x 256 tiles fit);
-- BN = 0: 128 for fp32 (128 x 256 spilled there: ptxas, 160 bytes of stack), 256 otherwise
local function bk_of(p, cfg)
  if cfg.BK > 0 then return cfg.BK end
  return p.dtype == "fp32" and 32 or 64
end
local function bn_of(p, cfg)
  if cfg.BN > 0 then return cfg.BN end
  return p.dtype == "fp32" and 128 or 256
end

local function triton_split(p, cfg, ctx)
  local tiles = ctx.cdiv(p.M, cfg.BM) * ctx.cdiv(p.N, bn_of(p, cfg))
  local sms = (ctx.props and ctx.props.sm_count) or 132
  if cfg.SK == 0 then return 0, math.min(tiles, sms) end
  return gemm.streamk_split(tiles, ctx.cdiv(p.K, bk_of(p, cfg)), sms, cfg.SK)
end

op.implementations = {
  cuda = {
    source = "gemm_wgmma.cu",
    sources = { "gemm_wgmma.cu", "matmul_ref.cu" },
    description = "Stream-K over persistent TMA + wgmma CTAs (gemm_streamk), fp32 fix-up through a workspace",
    default = { VARIANT = "sk", BN = 256, STAGES = 3, SK = 2 },
    space = CUDA_SPACE,
    valid = function(case, cfg) return gemm.valid(problem(case), cfg) end,
    supports = function(case) return gemm.supports(problem(case)) end,
    plan = function(case, ins, outs, cfg, ctx)
      return gemm.cuda_plan(problem(case), ins.a, ins.b, outs.c, cfg, ctx)
    end,
  },
  lib = {
    plan = function(case, ins, outs, cfg, ctx)
      return gemm.lib_plan(problem(case), ins.a, ins.b, outs.c, ctx)
    end,
  },
  -- streamk_matmul_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: Stream-K over a persistent grid, tl.dot (wgmma), atomic fp32 fix-up",
    default = { BM = 128, BN = 0, BK = 0, GROUP_M = 8, SK = 2, num_warps = 8, num_stages = 3 },
    space = TRITON_SPACE,
    -- the pipelined A and B tiles within the H200's 227 KiB; at most 128 fp32 accumulators a
    -- thread (256 spilled: ptxas, sm_90)
    valid = function(case, cfg)
      local p = problem(case)
      local size, bk, bn = require("tb.dtype").info[p.dtype].size, bk_of(p, cfg), bn_of(p, cfg)
      return (cfg.BM * bk + bk * bn) * size * cfg.num_stages <= 227 * 1024
        and cfg.BM * bn // (32 * cfg.num_warps) <= 128
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = problem(case)
      local sk, grid = triton_split(p, cfg, ctx)
      return ctx.plan { ctx:triton { file = "streamk_matmul_triton.py", kernel = "streamk_kernel", grid = { grid },
        args = { a = ins.a, b = ins.b, c = outs.c,
                 -- the fix-up's partial sums and counts, zeroed once; the kernel leaves them zeroed
                 W = ctx.full({ math.max(1, sk) * cfg.BM * bn_of(p, cfg) }, "fp32", 0),
                 counters = ctx.full({ math.max(1, sk) }, "int32", 0),
                 M = ctx.i32(p.M), N = ctx.i32(p.N), K = ctx.i32(p.K), sk_tiles = ctx.i32(sk) },
        constexprs = { BM = cfg.BM, BN = bn_of(p, cfg), BK = bk_of(p, cfg), GROUP_M = cfg.GROUP_M,
                       EVEN_K = p.K % bk_of(p, cfg) == 0 },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end,
  },
}
op.baseline = "lib"
return op
