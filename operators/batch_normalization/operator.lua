-- batch_normalization: training-mode batch norm of x (N, C) over the batch axis (OPERATORS.md 23):
-- per channel the mean and biased variance in fp32, y = (x - mean) / sqrt(var + eps) * gamma + beta
-- in the input dtype, eps = case.params.eps (1e-5). gamma and beta in the case dtype.
-- Reference: one thread per channel in double. `cuda`: a statistics kernel writing per-row-range
-- partial sums, a kernel totalling them into each channel's scale and shift, and an apply kernel
-- that normalises (batch_normalization.cu).
-- `triton`: the same two-kernel structure (batch_normalization_triton.py). `lib`: cuDNN's batch
-- norm through its backend (graph) API (tb.dnn.batchnorm, host/gpu/cuda_dnn.c; docs/REDUCTIONS.md).
local op = {}
op.category = "Reduction/Norm"

function op.inputs(case, ctx)
  local p = case.params
  return { x = ctx.randn("x", { p.N, p.C }, case.dtype), gamma = ctx.randn("gamma", { p.C }, case.dtype),
           beta = ctx.randn("beta", { p.C }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { y = ctx.empty({ case.params.N, case.params.C }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local f = ctx:kernel("batch_normalization_ref.cu", "batch_normalization_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(p.C, 128) }, block = { 128 },
                      args = { ins.x, ins.gamma, ins.beta, outs.y, ctx.i32(p.N), ctx.i32(p.C), ctx.f32(p.eps) } } }
end

-- The row ranges: about WAVES x the blocks the device holds, over the column tiles, each range at
-- least one row per thread row. Returns R (ranges) and rows_per (rows a range).
local function row_split(n, tiles, block, waves, props)
  local resident = (props.sm_count or 132) * math.max(1, (props.max_threads_per_sm or 2048) // block)
  local r = math.max(1, math.min(resident * waves // tiles, n // (block // 32)))
  local rows_per = (n + r - 1) // r
  return (n + rows_per - 1) // rows_per, rows_per
end

-- batch_normalization_finalize's thread rows (BN_FY in batch_normalization.cu): a block of 32
-- channels x 32 rows of partial sums at a time.
local FINALIZE_ROWS = 32

-- cuDNN's batch norm takes fp32 scale and bias for fp16 and bf16 x (as its legacy API's
-- bnScaleBiasMeanVarDesc and PyTorch's cudnn_batch_norm do): gamma and beta are widened once,
-- exactly, when the plan is built, outside the timed plan.
local function dnn_spec(case)
  local p = case.params
  return { n = p.N, c = p.C, dtype = case.dtype, param_dtype = "fp32", eps = p.eps }
end

local lib = {
  description = "cuDNN 9's backend API: one NORM_FORWARD operation (batch norm, training phase) over x as NCHW (N, C, 1, 1) with channels innermost, fp32 scale/bias and saved statistics; the heuristic's first engine that builds",
}

-- unsupported (with cuDNN's reason) where cuDNN cannot be opened or used or offers no engine;
-- the engine cuDNN chose is the plan's note (dnnlib.lua)
function lib.supports(case)
  return require("dnnlib").supports(function(dnn) return dnn.batchnorm(dnn_spec(case)) end)
end

function lib.plan(case, ins, outs, cfg, ctx)
  local dnn = require("tb.dnn")
  local p = case.params
  local scale, bias = ins.gamma, ins.beta
  if case.dtype ~= "fp32" then
    scale = ctx.from_table(ins.gamma:to_host(), "fp32", { p.C })
    bias = ctx.from_table(ins.beta:to_host(), "fp32", { p.C })
  end
  local g = dnn.batchnorm { x = ins.x, scale = scale, bias = bias, y = outs.y, mean = ctx.empty({ p.C }, "fp32"),
                            inv_var = ctx.empty({ p.C }, "fp32"), eps = p.eps }
  return require("dnnlib").plan(ctx, g)
end

op.implementations = {
  lib = lib,
  cuda = {
    source = "batch_normalization.cu",
    description = "three kernels: shifted sum and sum of squares over column tiles x row ranges into per-range partials; per-channel totals, scale and shift once; x * scale + shift over the ranges, each range last rows first (x's latest-read rows, in L2), x's last read evict-first",
    default = { BLOCK = 256, UNROLL = 4, WAVES = 1, REV = 1 },
    space = { BLOCK = { 128, 256, 512, 1024 }, UNROLL = { 1, 2, 4, 8 }, WAVES = { 1, 2, 4 }, REV = { 0, 1 } },
    -- registers: about 28 + 1.75 per element of the UNROLL vectors in flight (ptxas -v, sm_90: fp16
    -- UNROLL 4 / 8: 84 / 140, fp32: 58 / 85 for the apply kernel of the two-kernel design, the
    -- heavier then; an upper bound for the three kernels now) within what a thread gets at that
    -- block size; beyond it __launch_bounds__ makes ptxas spill
    valid = function(case, cfg)
      local vec = 16 // require("tb.dtype").info[case.dtype].size
      return 28 + 1.75 * vec * cfg.UNROLL <= math.min(255, 65536 // cfg.BLOCK)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local vec = 16 // ctx.dtype_size(case.dtype)
      local tiles = ctx.cdiv(p.C, 32 * vec)
      local r, rows_per = row_split(p.N, tiles, cfg.BLOCK, cfg.WAVES, ctx.props)
      local partials = ctx.empty({ 2, r, p.C }, "fp32")
      local defines = { DTYPE = ctx.ctype(case.dtype), BLOCK = cfg.BLOCK, UNROLL = cfg.UNROLL }
      local ss = ctx.empty({ 2, p.C }, "fp32") -- per channel: scale, then shift
      local stats = ctx:kernel("batch_normalization.cu", "batch_normalization_stats", defines)
      local finalize = ctx:kernel("batch_normalization.cu", "batch_normalization_finalize", defines)
      local apply = ctx:kernel("batch_normalization.cu", "batch_normalization_apply", defines)
      return ctx.plan {
        { fn = stats, grid = { tiles, r }, block = { cfg.BLOCK },
          args = { ins.x, partials, ctx.i32(p.N), ctx.i32(p.C), ctx.i32(rows_per) } },
        { fn = finalize, grid = { ctx.cdiv(p.C, 32) }, block = { 32 * FINALIZE_ROWS },
          args = { ins.x, ins.gamma, ins.beta, partials, ss, ctx.i32(p.N), ctx.i32(p.C), ctx.i32(r), ctx.f32(p.eps) } },
        { fn = apply, grid = { tiles, r }, block = { cfg.BLOCK },
          args = { ins.x, ss, outs.y, ctx.i32(p.N), ctx.i32(p.C), ctx.i32(rows_per), ctx.i32(cfg.REV) } },
      }
    end,
  },
  -- batch_normalization_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a statistics kernel (BLOCK_N x BLOCK_C tiles, shifted sums into per-range partials), a finalize kernel (totals, scale and shift per column) and an apply kernel (x * scale + shift, ranges in reverse order for L2 hits)",
    default = { BLOCK_C = 128, BLOCK_N = 16, SPLIT = 128, num_warps = 4 },
    space = { BLOCK_C = { 64, 128, 256 }, BLOCK_N = { 8, 16, 32 }, SPLIT = { 64, 128, 256 }, num_warps = { 4, 8 } },
    valid = function(case, cfg)
      local per_thread = cfg.BLOCK_N * cfg.BLOCK_C // (32 * cfg.num_warps)
      return per_thread >= 1 and per_thread <= 64
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local rows_per = ctx.cdiv(p.N, math.min(cfg.SPLIT, p.N))
      local r = ctx.cdiv(p.N, rows_per)
      local partials = ctx.empty({ 2, r, p.C }, "fp32")
      local ss = ctx.empty({ 2, p.C }, "fp32") -- the columns' scale and shift
      local grid = { ctx.cdiv(p.C, cfg.BLOCK_C), r }
      return ctx.plan {
        ctx:triton { file = "batch_normalization_triton.py", kernel = "batch_normalization_stats_kernel", grid = grid,
          args = { x = ins.x, part = partials, N = ctx.i32(p.N), C = ctx.i32(p.C), rows_per = ctx.i32(rows_per) },
          constexprs = { BLOCK_N = cfg.BLOCK_N, BLOCK_C = cfg.BLOCK_C }, num_warps = cfg.num_warps, num_stages = 2 },
        ctx:triton { file = "batch_normalization_triton.py", kernel = "batch_normalization_finalize_kernel",
          grid = { ctx.cdiv(p.C, 32) },
          args = { x = ins.x, gamma = ins.gamma, beta = ins.beta, part = partials, ss = ss, N = ctx.i32(p.N),
                   C = ctx.i32(p.C), nsplit = ctx.i32(r), eps = ctx.f32(p.eps) },
          constexprs = { BLOCK_C = 32, BLOCK_R = 64 }, num_warps = 4, num_stages = 2 },
        ctx:triton { file = "batch_normalization_triton.py", kernel = "batch_normalization_apply_kernel", grid = grid,
          args = { x = ins.x, ss = ss, y = outs.y, N = ctx.i32(p.N), C = ctx.i32(p.C), rows_per = ctx.i32(rows_per) },
          constexprs = { BLOCK_N = cfg.BLOCK_N, BLOCK_C = cfg.BLOCK_C }, num_warps = cfg.num_warps, num_stages = 2 },
      }
    end,
  },
}

return op
