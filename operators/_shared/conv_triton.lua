-- conv_triton.lua (operators/_shared; `require("conv_triton")`): the convolutions' `triton`
-- implementation (1d_conv, 2d_conv, 3d_conv; kernels in conv_triton.py beside this file,
-- docs/CONV.md "`triton`"). M.implementation(rank) is the table an operator.lua puts under
-- `triton`. The plan is up to three launches, all timed: the weight to (taps, Cout, Cin_g)
-- (conv_transpose_kernel, 0.1-0.9 MB; with CL conv_prep_kernel, which also writes the input
-- channels-last, (B, D H W, Cin)), conv_kernel, an implicit GEMM on wgmma (fp32 in TF32, as
-- cuDNN under PyTorch's defaults), and with SPLIT > 1 conv_splitk_reduce_kernel.
local conv = require("conv")

local M = {}

-- cfg (0 / -1 = chosen by the case):
--   BM  output positions a program; 0 = 64 where the A tile goes through registers (PF below),
--       else the largest of 256 (only where BN <= 64), 128, 64 that still gives every SM a
--       program. 3-D fp16: a 128 x 64 x 64 step is 256 cycles of wgmma against 133 SASS
--       instructions a thread of 8 warps (about as long to issue), 256 x 64 x 64 512 cycles
--       against 181;
--   BN  output channels a program; 0 = the group's as a power of two, 16 to 128;
--   BK  input channels a step; 0 = 64 for 2-byte dtypes, 32 for fp32 (128 bytes a row), at most
--       the group's as a power of two, at least 16 (tl.dot's K);
--   CL  1: the input transposed to channels-last first, 0: read as given; -1 = 0 for fp32 and
--       for 1-D, 1 for 2-byte dtypes in 2-D and 3-D where 64-position tiles fill the SMs (below
--       that the transpose's launch costs more than the register path: 2-D H <= 80, 3-D H = 16
--       of the grid read as given). As given, a tap shifts the positions by one element (no
--       alignment known). fp32 tiles then go by 4-byte cp.async straight into shared memory,
--       K-major, pipelined (208 SASS instructions a 128 x 128 x 32 step): no transpose needed.
--       2-byte tiles cannot (no cp.async moves 2 bytes): they go through registers, a
--       2-byte load and store an element, and the kernel prefetches the next step's tile into
--       registers before this step's wgmma (PF; 379 instructions a 64 x 128 x 64 step, 159
--       registers, three programs an SM) against 136 a 128 x 128 x 64 step channels-last. The
--       transpose reads and writes the input once more: cheap beside 2-D's and 3-D's K of 1152
--       and 1728, but the 1-D cases (K 384, 671 MB of fp16 input at L = 2.6M) are about as much
--       memory as tensor work, so 1-D reads its input as given;
--   SPLIT  programs sharing one tile's K steps (taps x channel blocks), each writing fp32 partials
--       that conv_splitk_reduce_kernel sums in split order (deterministic); 0 = more than one only
--       where the tiles fill at most half the SMs: as many as bring them to one wave, each split
--       keeping at least 2 steps (2-D 3 x 3 at H <= 64: 3 to 9 splits);
--   num_warps  0 = 4 where BM is 64, else 8; num_stages  triton's.
M.DEFAULT = { BM = 0, BN = 0, BK = 0, CL = -1, SPLIT = 0, num_warps = 0, num_stages = 3 }
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

-- What cfg resolves to at this case: {bm, bn, bk, cl (boolean), pf (boolean: the A tile through
-- registers, prefetched), split, warps}.
function M.tiles(case, t, cfg, sms)
  sms = sms or 132
  local size = size_of(case.dtype)
  local r = {}
  r.bn = cfg.BN > 0 and cfg.BN or math.max(16, math.min(128, pow2_at_least(t.cout // t.groups)))
  r.bk = cfg.BK > 0 and cfg.BK or math.max(16, math.min(size >= 4 and 32 or 64, pow2_at_least(t.cin // t.groups)))
  local m = t.out[1] * t.out[2] * t.out[3]
  local n_tiles = t.b * t.groups * ((t.cout // t.groups + r.bn - 1) // r.bn)
  local cl = cfg.CL
  if cl < 0 then cl = (size < 4 and t.rank >= 2 and n_tiles * m > 64 * sms) and 1 or 0 end
  r.cl = cl == 1
  r.pf = not r.cl and size < 4
  r.bm = cfg.BM
  if r.bm == 0 then
    local choices = r.pf and { 64 } or (r.bn <= 64 and { 256, 128, 64 } or { 128, 64 })
    for _, c in ipairs(choices) do
      r.bm = c
      if n_tiles * ((m + c - 1) // c) >= sms then break end
    end
  end
  r.warps = cfg.num_warps > 0 and cfg.num_warps or (r.bm <= 64 and 4 or 8)
  local tiles = n_tiles * ((m + r.bm - 1) // r.bm)
  local steps = t.k[1] * t.k[2] * t.k[3] * ((t.cin // t.groups + r.bk - 1) // r.bk)
  local split = cfg.SPLIT or 0
  if split == 0 then
    split = 1
    if tiles * 2 <= sms then split = math.max(1, math.min((sms + tiles - 1) // tiles, steps // 2)) end
  end
  r.split = math.min(split, steps)
  return r
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
    -- the pipelined A and B tiles within the H200's 227 KiB of shared memory (PF: one A tile, in
    -- registers), at most 128 fp32 accumulators a thread (ptxas: 124-128 registers at 128 x 128 on
    -- 8 warps, no spills), with PF counting the prefetched tile's 2-byte pairs too (64 x 128 x 64
    -- on 4 warps: 159 registers), and no tile wider than the group's channels as a power of two
    -- (the extra columns would be masked work)
    valid = function(case, cfg)
      local t = dims(case)
      local r = M.tiles(case, t, cfg)
      local stages = r.pf and cfg.num_stages * r.bk * r.bn + r.bm * r.bk or cfg.num_stages * (r.bm * r.bk + r.bk * r.bn)
      local threads = 32 * r.warps
      local regs = r.bm * r.bn // threads + (r.pf and r.bm * r.bk // threads // 2 or 0)
      -- 3-D on 4 warps at BM 128 and 256 spills (ptxas: 255 registers and 16-152 bytes of stack, the
      -- only spills among the 380 candidates of the grid's last cases): the 27 taps' row state
      if t.rank == 3 and r.warps == 4 and r.bm >= 128 then return false end
      return stages * size_of(case.dtype) <= 227 * 1024 and regs <= 128
        and r.bn <= math.max(16, pow2_at_least(t.cout // t.groups))
        and r.bk <= math.max(16, pow2_at_least(t.cin // t.groups))
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local t = dims(case)
      local r = M.tiles(case, t, cfg, ctx.props and ctx.props.sm_count)
      local bm, bn, bk, cl, split = r.bm, r.bn, r.bk, r.cl, r.split
      local s, m, taps = extents(t)
      local cin_g, cout_g = t.cin // t.groups, t.cout // t.groups
      local function transpose(src, dst, rows, cols, batch)
        return ctx:triton { file = "conv_triton.py", kernel = "conv_transpose_kernel",
          grid = { ctx.cdiv(rows, TT) * ctx.cdiv(cols, TT), batch },
          args = { src = src, dst = dst, R = ctx.i32(rows), C = ctx.i32(cols) },
          constexprs = { TR = TT, TC = TT }, num_warps = 4, num_stages = 1 }
      end
      local wt = ctx.empty({ taps * t.cout * cin_g }, case.dtype)
      local x, steps = ins.input, nil
      if cl then -- both transposes in one launch (conv_prep_kernel): one launch less to wait for
        x = ctx.empty({ t.b * t.cin * s }, case.dtype)
        local n_w = ctx.cdiv(t.cout * cin_g, TT) * ctx.cdiv(taps, TT)
        local n_x = ctx.cdiv(t.cin, TT) * ctx.cdiv(s, TT)
        steps = { ctx:triton { file = "conv_triton.py", kernel = "conv_prep_kernel", grid = { n_w + t.b * n_x },
          args = { w = ins.weight, wt = wt, RW = ctx.i32(t.cout * cin_g), CW = ctx.i32(taps), x = ins.input, xt = x,
                   RX = ctx.i32(t.cin), CX = ctx.i32(s), n_w = ctx.i32(n_w), n_x = ctx.i32(n_x) },
          constexprs = { TR = TT, TC = TT }, num_warps = 4, num_stages = 1 } }
      else
        steps = { transpose(ins.weight, wt, t.cout * cin_g, taps, 1) }
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
                       EVEN_C = cin_g % bk == 0, SPLIT = split, PF = r.pf },
        num_warps = r.warps, num_stages = cfg.num_stages }
      if split > 1 then
        steps[#steps + 1] = ctx:triton { file = "conv_triton.py", kernel = "conv_splitk_reduce_kernel",
          grid = { ctx.cdiv(n_out, 1024) }, args = { ws = ws, out = outs.out, n_out = ctx.i64(n_out) },
          constexprs = { SPLIT = split, BLOCK = 1024 }, num_warps = 4, num_stages = 1 }
      end
      local p = ctx.plan(steps)
      p.note = string.format("BM %d BN %d BK %d, %d warps, input %s, %d split%s", bm, bn, bk, r.warps,
        cl and "channels-last" or (r.pf and "as given, prefetched through registers" or "as given"), split,
        split > 1 and "s" or "")
      return p
    end,
  }
end

return M
