-- matmul_fp32_fp16_fp8: C (M, N) = A (M, K) @ B (K, N) in fp32 (TF32 tensor cores), fp16 and
-- fp8 e4m3 (unit-scaled, bf16-rounded then e4m3 output). Plans and kernels are the gemm family's
-- (operators/_shared/gemm.lua, gemm_wgmma.cu, gemm_mma.cu, matmul_ref.cu), shared with batched_matmul.
local gemm = require("gemm")

local op = {}
op.category = "MatMul/Attn"

local function problem(case)
  local p = case.params
  return { M = p.M, N = p.N, K = p.K, batch = 1, dtype = gemm.canon(case.dtype) }
end

-- a, b = randn * K^-0.5. fp8: TileBench draws fp32 and casts; ctx.randn in fp8_e4m3 draws the
-- same fp32 normals and rounds each to e4m3 (round-to-nearest-even), which is that cast.
function op.inputs(case, ctx)
  local p = problem(case)
  local std = p.K ^ -0.5
  return { a = ctx.randn("a", { p.M, p.K }, p.dtype, 0, std),
           b = ctx.randn("b", { p.K, p.N }, p.dtype, 0, std) }
end

function op.outputs(case, ins, ctx)
  local p = problem(case)
  return { c = ctx.empty({ p.M, p.N }, p.dtype) }
end

function op.reference(case, ins, outs, ctx)
  return gemm.reference(problem(case), ins.a, ins.b, outs.c, ctx)
end

-- b is given row-major (K, N), as OPERATORS.md generates it. Every fp8 GEMM here takes B only
-- K-major (cuBLASLt runs fp8 as TN, _scaled_mm wants B column-major, wgmma reads fp8 B K-major),
-- so each implementation makes that copy inside its timed interval: lib, cuda and triton as a
-- transpose step first in the plan, torch (matmul_fp32_fp16_fp8_torch.py) in forward, as
-- TileBench's run(a, b) did. Only the unit scales are made once, untimed (docs/MEASUREMENT.md,
-- "Layouts an implementation needs"; tests/gpu/matmul_fp8_layout.sh). TF32 wgmma also needs
-- K-major B, so cuda and triton transpose for fp32 too; cuBLAS's TF32 takes B as it is.
op.implementations = {
  cuda = {
    source = "gemm_wgmma.cu",
    sources = { "gemm_wgmma.cu", "gemm_mma.cu", "matmul_ref.cu" },
    default = { VARIANT = "tma", BN = 256, STAGES = 3, SMALL = 1 }, -- SMALL: gemm.resolve
    space = gemm.space,
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
  -- operators/_shared/gemm_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = gemm.triton(problem, { a = "a", b = "b", c = "c" },
    { BM = 128, BN = 0, BK = 0, GROUP_M = 8, num_warps = 8, num_stages = 3 }),
}
op.baseline = "lib"
return op
