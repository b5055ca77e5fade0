-- matmul_int8: C (M, N) int32 = A (M, K) int8 @ Bu (K, N), Bu unpacked slice-major from the 2-bit
-- fields of B (K/4, N) uint8: Bu[i * K/4 + k, n] = ((B[k, n] >> 2i) & 3) - 1 (OPERATORS.md 28).
-- `cuda` and `lib` first unpack B into Bt = Bu^T (N, K) int8 (matmul_int8.cu, a timed step: int8
-- tensor cores take B only K-major), then multiply: gemm_wgmma.cu's kernels with DT 4 (wgmma
-- m64nNk32 s8, int32 accumulators; the gemm family's plans, operators/_shared/gemm.lua), or
-- cuBLASLt's int8 TN GEMM (COMPUTE_32I). `triton` does the same in two Triton kernels (matmul_int8_triton.py).
local gemm = require("gemm")

local op = {}
op.category = "MatMul/Attn"

local function problem(case)
  local p = case.params
  return { M = p.M, N = p.N, K = p.K, batch = 1, dtype = "int8", out = "int32", b_kmajor = true }
end

-- a = randint(-64, 65) int8, b = randint(0, 256) uint8 (any byte)
function op.inputs(case, ctx)
  local p = problem(case)
  if p.K % 4 ~= 0 then error(string.format("matmul_int8: K = %d is not a multiple of 4 (B holds K/4 rows)", p.K), 0) end
  return { a = ctx.randint("a", { p.M, p.K }, "int8", -64, 65),
           b = ctx.randint("b", { p.K // 4, p.N }, "uint8", 0, 256) }
end

function op.outputs(case, ins, ctx)
  local p = problem(case)
  return { c = ctx.empty({ p.M, p.N }, "int32") }
end

function op.reference(case, ins, outs, ctx)
  local p = problem(case)
  local f = ctx:kernel("matmul_int8_ref.cu", "matmul_int8_ref")
  return ctx.plan{ { fn = f, grid = { ctx.cdiv(p.N, 16), ctx.cdiv(p.M, 16) }, block = { 16, 16 },
                     args = { ins.a, ins.b, outs.c, ctx.i32(p.M), ctx.i32(p.N), ctx.i32(p.K) } } }
end

-- The unpack step (matmul_int8.cu): returns step, Bt (N, K) int8.
local function unpack_step(p, b, ctx)
  local bt = ctx.empty({ p.N, p.K }, "int8")
  local f = ctx:kernel("matmul_int8.cu", "unpack_bt")
  return { fn = f, grid = { ctx.cdiv(p.N, 64), ctx.cdiv(p.K // 4, 64) }, block = { 256 },
           args = { b, bt, ctx.i32(p.N), ctx.i32(p.K // 4) } }, bt
end

-- Bt's rows and A's rows are 16-byte aligned (TMA, cp.async, cuBLASLt's IMMA), and C's int32
-- pairs are 8-byte aligned: K % 16 == 0 and N % 8 == 0 (every grid case is).
local function supports(case)
  local p = problem(case)
  return p.K % 16 == 0 and p.N % 8 == 0
end

op.implementations = {
  cuda = {
    source = "gemm_wgmma.cu",
    sources = { "gemm_wgmma.cu", "matmul_int8.cu" },
    description = "unpack B to K-major int8, then the gemm family's wgmma kernels with s8 inputs and int32 accumulators",
    -- the fp8 operator's choice (one byte per element, the same tile bytes): TMA, 128 x 256 tiles
    default = { VARIANT = "tma", BN = 256, STAGES = 4, SMALL = 1 }, -- SMALL: gemm.resolve
    space = gemm.space,
    valid = function(case, cfg) return gemm.valid(problem(case), cfg) end,
    supports = supports,
    plan = function(case, ins, outs, cfg, ctx)
      local p = problem(case)
      local step, bt = unpack_step(p, ins.b, ctx)
      p.pre = { step }
      return gemm.cuda_plan(p, ins.a, bt, outs.c, cfg, ctx)
    end,
  },
  lib = {
    description = "unpack B to K-major int8 (matmul_int8.cu), then cuBLASLt int8 TN, int32 output",
    supports = supports,
    plan = function(case, ins, outs, cfg, ctx)
      local p = problem(case)
      local step, bt = unpack_step(p, ins.b, ctx)
      local blas = require("tb.blas")
      return ctx.plan{ step, { call = blas.matmul{ a = ins.a, b = bt, c = outs.c, m = p.M, n = p.N, k = p.K,
                                                  layout = "row", b_transposed = true } } }
    end,
  },
  -- matmul_int8_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: B unpacked once to K-major int8 (N, K) by a Triton kernel, then BM x BN tiles of int8 tl.dot (wgmma s8, both operands K-major in shared memory) into int32",
    default = { BM = 128, BN = 256, BK = 128, GROUP_M = 8, num_warps = 8, num_stages = 3 },
    space = { BM = { 64, 128 }, BN = { 64, 128, 256 }, BK = { 64, 128 }, GROUP_M = { 8 },
              num_warps = { 4, 8 }, num_stages = { 3, 4, 5 } },
    -- the pipelined A and Bt tiles within the H200's 227 KiB; at most 128 int32 accumulators a
    -- thread (256 spilled)
    valid = function(case, cfg)
      return (cfg.BM * cfg.BK + cfg.BK * cfg.BN) * cfg.num_stages <= 227 * 1024
        and cfg.BM * cfg.BN // (32 * cfg.num_warps) <= 128
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = problem(case)
      local k4 = p.K // 4
      local bt = ctx.empty({ p.N, p.K }, "int8")
      return ctx.plan {
        -- 128 packed rows x 64 columns a program: 8 KiB in, four 64 x 128 tiles (128 bytes a row) out
        ctx:triton { file = "matmul_int8_triton.py", kernel = "matmul_int8_unpack_kernel",
          grid = { ctx.cdiv(k4, 128), ctx.cdiv(p.N, 64) },
          args = { b = ins.b, bt = bt, N = ctx.i32(p.N), K = ctx.i32(p.K), K4 = ctx.i32(k4) },
          constexprs = { BR = 128, BN = 64 }, num_warps = 4, num_stages = 1 },
        ctx:triton { file = "matmul_int8_triton.py", kernel = "matmul_int8_kernel",
          grid = { ctx.cdiv(p.M, cfg.BM) * ctx.cdiv(p.N, cfg.BN) },
          args = { a = ins.a, bt = bt, c = outs.c, M = ctx.i32(p.M), N = ctx.i32(p.N), K = ctx.i32(p.K) },
          constexprs = { BM = cfg.BM, BN = cfg.BN, BK = cfg.BK, GROUP_M = cfg.GROUP_M, EVEN_K = p.K % cfg.BK == 0 },
          num_warps = cfg.num_warps, num_stages = cfg.num_stages },
      }
    end,
  },
}
op.baseline = "lib"
return op
