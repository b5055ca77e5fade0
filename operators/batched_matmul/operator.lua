-- batched_matmul: C[b] = A[b] @ B[b] for BATCH square M x M problems (N = K = M), flat A, B and
-- C as in TileBench. Kernels and plans are the gemm family's (operators/_shared/gemm.lua), shared
-- with matmul_fp32_fp16_fp8.
local gemm = require("gemm")

local op = {}
op.category = "MatMul/Attn"

local function problem(case)
  local p = case.params
  return { M = p.M, N = p.M, K = p.M, batch = p.BATCH, dtype = gemm.canon(case.dtype) }
end

function op.inputs(case, ctx)
  local p = problem(case)
  return { A = ctx.randn("A", { p.batch * p.M * p.K }, p.dtype),
           B = ctx.randn("B", { p.batch * p.K * p.N }, p.dtype) }
end

function op.outputs(case, ins, ctx)
  local p = problem(case)
  return { C = ctx.empty({ p.batch * p.M * p.N }, p.dtype) }
end

function op.reference(case, ins, outs, ctx)
  return gemm.reference(problem(case), ins.A, ins.B, outs.C, ctx)
end

op.implementations = {
  cuda = {
    source = "gemm_wgmma.cu",
    default = { VARIANT = "pp", BN = 128, STAGES = 4, SMALL = 1 }, -- SMALL: gemm.resolve
    space = gemm.space,
    valid = function(case, cfg) return gemm.valid(problem(case), cfg) end,
    supports = function(case) return gemm.supports(problem(case)) end,
    plan = function(case, ins, outs, cfg, ctx)
      return gemm.cuda_plan(problem(case), ins.A, ins.B, outs.C, cfg, ctx)
    end,
  },
  lib = {
    plan = function(case, ins, outs, cfg, ctx)
      return gemm.lib_plan(problem(case), ins.A, ins.B, outs.C, ctx)
    end,
  },
  -- operators/_shared/gemm_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = gemm.triton(problem, { a = "A", b = "B", c = "C" },
    { BM = 64, BN = 128, BK = 0, GROUP_M = 8, num_warps = 4, num_stages = 3 }),
}
op.baseline = "lib"
return op
