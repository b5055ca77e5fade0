-- 2d_max_pooling: the flat input viewed as (N, C, H, W) (W = H in TileBench's cases; a case may
-- give W), F.max_pool2d(kernel_size, stride, padding) with -inf padding, NaN propagating, the
-- result flattened (OPERATORS.md 35). Exact: a max rounds nothing.
-- Reference: one thread per output (2d_max_pooling_ref.cu), any kernel_size / stride / padding.
-- `cuda`: 3 x 3, stride 2, padding 1 (the grid's): a thread per 16-byte output vector down a strip
-- of output rows, every input element loaded once (2d_max_pooling.cu; docs/STENCILS.md).
-- `triton`: output tiles, the taps as strided masked loads (2d_max_pooling_triton.py). `lib`: cuDNN
-- (below).
local op = {}
op.category = "Stencil/Conv"

local function dims(case)
  local p = case.params
  local w = p.W or p.H
  local hout = (p.H + 2 * p.padding - p.kernel_size) // p.stride + 1
  local wout = (w + 2 * p.padding - p.kernel_size) // p.stride + 1
  if hout < 1 or wout < 1 then
    error(string.format("2d_max_pooling: a %d x %d image gives no output at kernel_size %d, stride %d, padding %d",
      p.H, w, p.kernel_size, p.stride, p.padding), 0)
  end
  return p.N * p.C, p.H, w, hout, wout
end

function op.inputs(case, ctx)
  local planes, h, w = dims(case)
  return { input = ctx.randn("input", { planes * h * w }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  local planes, _, _, hout, wout = dims(case)
  return { out = ctx.empty({ planes * hout * wout }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local planes, h, w, hout, wout = dims(case)
  local f = ctx:kernel("2d_max_pooling_ref.cu", "max_pool2d_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(planes * hout * wout, 256) }, block = { 256 },
                      args = { ins.input, outs.out, ctx.i64(planes), ctx.i32(h), ctx.i32(w), ctx.i32(hout),
                               ctx.i32(wout), ctx.i32(p.kernel_size), ctx.i32(p.stride), ctx.i32(p.padding) } } }
end

-- Outputs a thread: a 16-byte vector where W is a multiple of two of them (every row's input and
-- output then start 16-byte aligned: every case of the grid), else one.
local function vo(case)
  local _, _, w = dims(case)
  local v = 16 // require("tb.dtype").info[case.dtype].size
  return w % (2 * v) == 0 and v or 1
end

-- Output rows a thread walks: ROWS, or with ROWS = 0 enough thread-strips for two waves of
-- resident threads (1 to 64 rows).
local function rows_per(case, cfg, ct, props)
  local planes, _, _, hout = dims(case)
  local r = cfg.ROWS
  if r == 0 then
    local resident = (props.sm_count or 132) * (props.max_threads_per_sm or 2048)
    r = math.max(1, math.min(64, (planes * hout * ct + 2 * resident - 1) // (2 * resident)))
  end
  return math.min(r, hout)
end

-- `lib`: cuDNN's max pooling (tb.dnn.maxpool, host/gpu/cuda_dnn_conv.c) through its legacy
-- cudnnPoolingForward, which takes the NCHW input as it is: CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN
-- (a NaN in a window gives NaN, as max_pool2d), padded positions never chosen. It has no engine
-- choice; the plan's note says so (dnnlib.lua).
local function dnn_spec(case)
  local p = case.params
  return { n = p.N, c = p.C, h = p.H, w = p.W or p.H, window = p.kernel_size, stride = p.stride, padding = p.padding }
end

local lib = {
  description = "cuDNN's legacy cudnnPoolingForward over the input as NCHW: CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, padding never chosen; no engine choice, no workspace",
}

-- The legacy API checks the data type only when called: the probe is one call on a one-plane image
-- of the case's window (a dtype cuDNN's pooling lacks then answers CUDNN_STATUS_NOT_SUPPORTED:
-- unsupported, not a failed row).
function lib.supports(case)
  local spec = dnn_spec(case)
  return require("dnnlib").supports(function(dnn)
    local tensor = require("tb.tensor")
    local k = spec.window
    local x <close> = tensor.empty({ k * k }, case.dtype)
    local ho = (k + 2 * spec.padding - k) // spec.stride + 1
    local y <close> = tensor.empty({ ho * ho }, case.dtype)
    local probe = dnn.maxpool { x = x, y = y, n = 1, c = 1, h = k, w = k, window = k, stride = spec.stride,
                                padding = spec.padding }
    local ok, err = pcall(function() probe:run() y:to_host() end)
    if not ok then probe:close() error(err, 0) end
    return probe
  end)
end

function lib.plan(case, ins, outs, cfg, ctx)
  local spec = dnn_spec(case)
  spec.x, spec.y = ins.input, outs.out
  return require("dnnlib").plan(ctx, require("tb.dnn").maxpool(spec))
end

op.implementations = {
  lib = lib,
  cuda = {
    source = "2d_max_pooling.cu",
    description = "3 x 3 / 2 / 1: a thread per 16-byte output vector down a strip of output rows, two 16-byte loads an input row, the shared row kept, column maxima, the left column by shuffle",
    default = { BX = 256, ROWS = 0, UNROLL = 2 },
    space = { BX = { 64, 128, 256 }, ROWS = { 0, 1, 2, 4, 8, 16, 32 }, UNROLL = { 1, 2, 4 } },
    supports = function(case)
      local p = case.params
      if p.kernel_size ~= 3 or p.stride ~= 2 or p.padding ~= 1 then
        return false, string.format("kernel_size %d, stride %d, padding %d: the kernel is written for 3, 2, 1 (the grid's)",
          p.kernel_size, p.stride, p.padding)
      end
      return true
    end,
    -- UNROLL beyond ROWS loads rows the strip never uses
    valid = function(case, cfg) return cfg.ROWS == 0 or cfg.UNROLL <= cfg.ROWS end,
    plan = function(case, ins, outs, cfg, ctx)
      local planes, h, w, hout, wout = dims(case)
      local v = vo(case)
      local ct = ctx.cdiv(wout, v)
      local per = rows_per(case, cfg, ct, ctx.props)
      local strips = ctx.cdiv(hout, per)
      local f = ctx:kernel("2d_max_pooling.cu", "max_pool2d", { DTYPE = ctx.ctype(case.dtype), VO = v, UNROLL = cfg.UNROLL })
      return ctx.plan { { fn = f, grid = { ctx.cdiv(planes * strips * ct, cfg.BX) }, block = { cfg.BX },
                          args = { ins.input, outs.out, ctx.i64(planes), ctx.i32(h), ctx.i32(w), ctx.i32(hout),
                                   ctx.i32(wout), ctx.i32(per), ctx.i32(strips) } } }
    end,
  },
  -- 2d_max_pooling_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per BR x BC tile of the output as (N*C*Hout, Wout), the taps as strided masked loads (-inf outside), NaN-propagating maxima",
    default = { BR = 8, BC = 64, num_warps = 4 },
    space = { BR = { 2, 4, 8, 16, 32 }, BC = { 32, 64, 128, 256 }, num_warps = { 2, 4, 8 } },
    -- 1 to 32 outputs a thread
    valid = function(case, cfg)
      local per_thread = cfg.BR * cfg.BC // (32 * cfg.num_warps)
      return per_thread >= 1 and per_thread <= 32
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local planes, h, w, hout, wout = dims(case)
      return ctx.plan { ctx:triton { file = "2d_max_pooling_triton.py", kernel = "max_pool2d_kernel",
        grid = { ctx.cdiv(wout, cfg.BC), ctx.cdiv(planes * hout, cfg.BR) },
        args = { x = ins.input, out = outs.out, out_rows = ctx.i32(planes * hout), H = ctx.i32(h), W = ctx.i32(w),
                 Hout = ctx.i32(hout), Wout = ctx.i32(wout) },
        constexprs = { K = p.kernel_size, S = p.stride, P = p.padding, BR = cfg.BR, BC = cfg.BC },
        num_warps = cfg.num_warps, num_stages = 1 } }
    end,
  },
}

return op
