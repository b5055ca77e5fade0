-- conv_triton.lua (operators/_shared; `require("conv_triton")`): the convolutions' `triton`
-- implementation (1d_conv, 2d_conv, 3d_conv; kernels in conv_triton.py beside this file,
-- docs/CONV.md "Triton"). M.implementation(rank) is the table an operator.lua puts under
-- `triton`. The plan is up to three launches, all timed: the weight to (taps, Cout, Cin_g)
-- (conv_transpose_kernel, 0.1-0.9 MB), with CL the input to channels-last (B, D H W, Cin) (the
-- same kernel), then conv_kernel, an implicit GEMM on wgmma (fp32 in TF32, as cuDNN under
-- PyTorch's defaults).
local conv = require("conv")

local M = {}

-- cfg (0 / -1 = chosen by the case):
--   BM  output positions a program; 0 = the largest of 256 (only where BN <= 64), 128, 64 that
--       still gives every SM a program. 3-D fp16: a 128 x 64 x 64 step is 256 cycles of wgmma
--       against 133 SASS instructions a thread of 8 warps (about as long to issue), 256 x 64 x 64
--       512 cycles against 181;
--   BN  output channels a program; 0 = the group's as a power of two, 16 to 128;
--   BK  input channels a step; 0 = 64 for 2-byte dtypes, 32 for fp32 (128 bytes a row), at most
--       the group's as a power of two, at least 16 (tl.dot's K);
--   CL  1: the input transposed to channels-last first, 0: read as given; -1 = 1 for 2-byte
--       dtypes, 0 for fp32. As given, a tap shifts the positions by one element (no alignment
--       known) and no cp.async moves 2 bytes: fp16 tiles go element by element through registers
--       (426 SASS instructions a 128 x 128 x 64 step against 136 channels-last, loads not
--       pipelined); fp32 tiles go by 4-byte cp.async straight into shared memory, K-major (200 a
--       128 x 128 x 32 step), so fp32 keeps the input as given and saves the transpose's read and
--       write of it;
--   SPLIT  programs sharing one tile's K steps (taps x channel blocks), each writing fp32 partials
--       that conv_splitk_reduce_kernel sums in split order (deterministic); 0 = more than one only
--       where the tiles fill at most half the SMs: as many as bring them to one wave, each split
--       keeping at least 2 steps (2-D 3 x 3 at H <= 80 ... 16: 2 to 9 splits);
--   num_warps, num_stages  triton's.
M.DEFAULT = { BM = 0, BN = 0, BK = 0, CL = -1, SPLIT = 0, num_warps = 8, num_stages = 3 }
M.SPACE = { BM = { 64, 128, 256 }, BN = { 64, 128 }, BK = { 32, 64 }, CL = { 0, 1 }, num_warps = { 4, 8 },
            num_stages = { 3, 4 } }

-- the transposes' tiles (conv_transpose_kernel): 64 x 64, 4 warps
local TT = 64

local function pow2_at_least(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end

local function size_of(dtype) return require("tb.dtype").info[dtype].size end

-- the tiles, layout and split cfg resolves to at this case: bm, bn, bk, cl (boolean), split
function M.tiles(case, t, cfg, sms)
  sms = sms or 132
  local size = size_of(case.dtype)
  local bn = cfg.BN > 0 and cfg.BN or math.max(16, math.min(128, pow2_at_least(t.cout // t.groups)))
  local bk = cfg.BK > 0 and cfg.BK
    or math.max(16, math.min(size >= 4 and 32 or 64, pow2_at_least(t.cin // t.groups)))
  local cl = cfg.CL
  if cl < 0 then cl = size < 4 and 1 or 0 end
  local bm = cfg.BM
  if bm == 0 then
    local m = t.out[1] * t.out[2] * t.out[3]
    local programs = t.b * t.groups * ((t.cout // t.groups + bn - 1) // bn)
    for _, c in ipairs(bn <= 64 and { 256, 128, 64 } or { 128, 64 }) do
      bm = c
      if programs * ((m + c - 1) // c) >= sms then break end
    end
  end
  local tiles = t.b * t.groups * ((t.cout // t.groups + bn - 1) // bn) * ((t.out[1] * t.out[2] * t.out[3] + bm - 1) // bm)
  local steps = t.k[1] * t.k[2] * t.k[3] * ((t.cin // t.groups + bk - 1) // bk)
  local split = cfg.SPLIT or 0
  if split == 0 then
    split = 1
    if tiles * 2 <= sms then split = math.max(1, math.min((sms + tiles - 1) // tiles, steps // 2)) end
  end
  return bm, bn, bk, cl == 1, math.min(split, steps)
end

local function extents(t)
  local s = t.sp[1] * t.sp[2] * t.sp[3]
  local m = t.out[1] * t.out[2] * t.out[3]
  local taps = t.k[1] * t.k[2] * t.k[3]
  return s, m, taps
end

function M.implementation(rank)
  local function dims(case) return conv.dims(case, rank) end
  local default, space = {}, {}
  for k, v in pairs(M.DEFAULT) do default[k] = v end
  for k, v in pairs(M.SPACE) do space[k] = { table.unpack(v) } end
  return {
    source = "conv_triton.py",
    description = "Triton: implicit GEMM, a program per BM positions x BN output channels of one (batch, group), "
      .. "BK channels of one tap a tl.dot step (wgmma, TF32 for fp32), one loop over taps x channel blocks, "
      .. "weight to (taps, Cout, Cin_g) first, the input to channels-last first where CL",
    default = default,
    space = space,
    -- offsets inside one (batch, group) slab are int32 in the kernels; grid y is batch x groups
    supports = function(case)
      local t = dims(case)
      local s, m, taps = extents(t)
      local lim = 2 ^ 31
      if t.cin * s >= lim or t.cout * m >= lim or taps * t.cout * (t.cin // t.groups) >= lim then
        return false, "an input, output or weight of one batch element reaches 2^31 elements (int32 offsets)"
      end
      if t.b * t.groups > 65535 then return false, "batch x groups above 65535 (grid y)" end
      return true
    end,
    -- the pipelined A and B tiles within the H200's 227 KiB of shared memory, at most 128 fp32
    -- accumulators a thread (ptxas: 126 registers at 128 x 128 on 8 warps), and no tile wider than
    -- the group's channels as a power of two (the extra columns would be masked work)
    valid = function(case, cfg)
      local t = dims(case)
      local bm, bn, bk = M.tiles(case, t, cfg)
      local smem = (bm * bk + bk * bn) * size_of(case.dtype) * cfg.num_stages
      return smem <= 227 * 1024 and bm * bn // (32 * cfg.num_warps) <= 128
        and bn <= math.max(16, pow2_at_least(t.cout // t.groups))
        and bk <= math.max(16, pow2_at_least(t.cin // t.groups))
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local t = dims(case)
      local bm, bn, bk, cl, split = M.tiles(case, t, cfg, ctx.props and ctx.props.sm_count)
      local s, m, taps = extents(t)
      local cin_g, cout_g = t.cin // t.groups, t.cout // t.groups
      local function transpose(src, dst, r, c, batch)
        return ctx:triton { file = "conv_triton.py", kernel = "conv_transpose_kernel",
          grid = { ctx.cdiv(r, TT) * ctx.cdiv(c, TT), batch },
          args = { src = src, dst = dst, R = ctx.i32(r), C = ctx.i32(c) },
          constexprs = { TR = TT, TC = TT }, num_warps = 4, num_stages = 1 }
      end
      local wt = ctx.empty({ taps * t.cout * cin_g }, case.dtype)
      local steps = { transpose(ins.weight, wt, t.cout * cin_g, taps, 1) }
      local x = ins.input
      if cl then
        x = ctx.empty({ t.b * t.cin * s }, case.dtype)
        steps[2] = transpose(ins.input, x, t.cin, s, t.b)
      end
      local n_out = t.b * t.cout * m
      local ws = outs.out -- SPLIT 1: not written
      if split > 1 then ws = ctx.empty({ split * n_out }, "fp32") end
      steps[#steps + 1] = ctx:triton { file = "conv_triton.py", kernel = "conv_kernel",
        grid = { ctx.cdiv(m, bm) * ctx.cdiv(cout_g, bn), t.b * t.groups, split },
        args = { x = x, wt = wt, out = outs.out, ws = ws, n_out = ctx.i64(n_out), Cin = ctx.i32(t.cin), Cout = ctx.i32(t.cout),
                 cin_g = ctx.i32(cin_g), cout_g = ctx.i32(cout_g), groups = ctx.i32(t.groups),
                 D = ctx.i32(t.sp[1]), H = ctx.i32(t.sp[2]), W = ctx.i32(t.sp[3]), OD = ctx.i32(t.out[1]),
                 OH = ctx.i32(t.out[2]), OW = ctx.i32(t.out[3]), stride = ctx.i32(t.stride),
                 pad = ctx.i32(t.pad[3]) },
        constexprs = { RANK = rank, KD = t.k[1], KH = t.k[2], KW = t.k[3], BM = bm, BN = bn, BK = bk, CL = cl,
                       EVEN_C = cin_g % bk == 0, SPLIT = split },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages }
      if split > 1 then
        steps[#steps + 1] = ctx:triton { file = "conv_triton.py", kernel = "conv_splitk_reduce_kernel",
          grid = { ctx.cdiv(n_out, 1024) }, args = { ws = ws, out = outs.out, n_out = ctx.i64(n_out) },
          constexprs = { SPLIT = split, BLOCK = 1024 }, num_warps = 4, num_stages = 1 }
      end
      local p = ctx.plan(steps)
      p.note = string.format("BM %d BN %d BK %d, input %s, %d split%s", bm, bn, bk, cl and "channels-last" or "as given",
        split, split > 1 and "s" or "")
      return p
    end,
  }
end

return M
