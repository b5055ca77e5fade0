-- conv.lua (operators/_shared; `require("conv")`): what the convolution operators 1d_conv, 2d_conv
-- and 3d_conv share (OPERATORS.md 32-34): their shapes, inputs, outputs and reference, and the
-- `cuda` implementation (an implicit GEMM on tensor cores, conv_igemm.cu; docs/CONV.md). Every
-- rank is a 3-D problem to the kernels: 1-D is D = H = 1 with a 1 x 1 x k kernel, 2-D D = 1 with
-- 1 x k x k; padding applies to the real spatial axes only.
local M = {}

-- The case's shape, checked: b, cin, cout, groups, stride, the input's and output's spatial
-- extents as 3-D {D, H, W}, the kernel's {KD, KH, KW}, the padding {PD, PH, PW}, and the torch
-- shapes of input, weight and output.
function M.dims(case, rank)
  local p = case.params
  local k, s, pad, g = p.kernel_size, p.stride, p.padding, p.groups
  local name = rank .. "d_conv"
  local function bad(fmt, ...) error(name .. ": " .. string.format(fmt, ...), 0) end
  if g < 1 or p.in_channels % g ~= 0 or p.out_channels % g ~= 0 then
    bad("groups %d must divide in_channels %d and out_channels %d", g, p.in_channels, p.out_channels)
  end
  if k < 1 or s < 1 or pad < 0 then bad("kernel_size %d, stride %d, padding %d: want k >= 1, stride >= 1, padding >= 0", k, s, pad) end
  local sp
  if rank == 1 then sp = { 1, 1, p.L }
  elseif rank == 2 then sp = { 1, p.H, p.W or p.H }
  else sp = { p.D, p.H, p.W or p.H } end
  local kk, pp, out = {}, {}, {}
  for d = 1, 3 do
    local real = d > 3 - rank
    kk[d], pp[d] = real and k or 1, real and pad or 0
    out[d] = (sp[d] + 2 * pp[d] - kk[d]) // s + 1
    if out[d] < 1 then bad("an input of %d along an axis gives no output at kernel_size %d, stride %d, padding %d", sp[d], k, s, pad) end
  end
  local t = { b = p.batch, cin = p.in_channels, cout = p.out_channels, groups = g, stride = s,
              sp = sp, out = out, k = kk, pad = pp, rank = rank }
  t.in_shape, t.w_shape, t.out_shape = { t.b, t.cin }, { t.cout, t.cin // g }, { t.b, t.cout }
  for d = 4 - rank, 3 do
    t.in_shape[#t.in_shape + 1], t.w_shape[#t.w_shape + 1], t.out_shape[#t.out_shape + 1] = sp[d], kk[d], out[d]
  end
  return t
end

-- op.category, inputs (input, weight: randn), outputs (out) and reference for a rank.
function M.operator(rank)
  -- Every implementation (ours, Triton's, cuDNN's) runs the convolution as a GEMM on the tensor
  -- cores: rho is measured against the dtype's matrix rate (fp32: TF32), not the fp32 vector rate
  -- its category would pick, which put every H200 row above 1 (2026-12-02).
  local op = { category = "Stencil/Conv", ceiling = "matrix" }
  function op.inputs(case, ctx)
    local t = M.dims(case, rank)
    return { input = ctx.randn("input", t.in_shape, case.dtype), weight = ctx.randn("weight", t.w_shape, case.dtype) }
  end
  function op.outputs(case, ins, ctx)
    return { out = ctx.empty(M.dims(case, rank).out_shape, case.dtype) }
  end
  function op.reference(case, ins, outs, ctx)
    local t = M.dims(case, rank)
    local f = ctx:kernel("conv_ref.cu", "conv_ref", { DTYPE = ctx.ctype(case.dtype) })
    local n = t.b * t.cout * t.out[1] * t.out[2] * t.out[3]
    return ctx.plan { { fn = f, grid = { ctx.cdiv(n, 256) }, block = { 256 },
      args = { ins.input, ins.weight, outs.out, ctx.i32(t.b), ctx.i32(t.cin), ctx.i32(t.cout), ctx.i32(t.groups),
               ctx.i32(t.sp[1]), ctx.i32(t.sp[2]), ctx.i32(t.sp[3]), ctx.i32(t.out[1]), ctx.i32(t.out[2]),
               ctx.i32(t.out[3]), ctx.i32(t.k[1]), ctx.i32(t.k[2]), ctx.i32(t.k[3]), ctx.i32(t.stride),
               ctx.i32(t.pad[1]), ctx.i32(t.pad[2]), ctx.i32(t.pad[3]) } } }
  end
  return op
end

-- ---- `cuda`: conv_igemm.cu (docs/CONV.md) ------------------------------------------------------
local SMEM_OPTIN = 232448 -- H100/H200 per-block limit; plans use ctx.props where they have it
local SMEM_PER_SM = 233472
local ESIZE = { fp16 = 2, fp32 = 4 }
local wgmma = require("conv_wgmma")

-- A configuration resolved for a case: BM 0 picks 128 output channels a CTA where a group has more
-- than 64 (else 64), BN 0 the one of 256 / 128 / 64 positions a CTA whose tiles finish first on the
-- persistent grid (valid ones only), TW 0 a tile row of 16 positions where the output rows are that short,
-- else 32 (2-D / 3-D; 1-D tiles are one row of BN), STAGES 0 as many stages as fit in shared
-- memory (4 at most). Returns the kernel's numbers, or nil and why.
local function geometry(t, dtype, cfg, sms, limit)
  local es = ESIZE[dtype]
  if not es then return nil, "dtype " .. tostring(dtype) .. " (the kernel has fp16 and fp32)" end
  for _, k in ipairs({ "BM", "BN", "WARPS", "TW", "BCB", "STAGES", "OVERLAP" }) do
    if math.type(cfg[k]) ~= "integer" then return nil, "the configuration has no integer " .. k end
  end
  local cout_g, cin_g = t.cout // t.groups, t.cin // t.groups
  local bm = cfg.BM ~= 0 and cfg.BM or (cout_g > 64 and 128 or 64)
  local function shape(bn)
    local g = { es = es, ve = 16 // es, bm = bm, bn = bn, warps = cfg.WARPS, bcb = cfg.BCB }
    if t.rank == 1 then g.th, g.tw = 1, bn
    else
      g.tw = cfg.TW ~= 0 and cfg.TW or (t.out[3] <= 16 and 16 or 32)
      if bn % g.tw ~= 0 then return nil, string.format("BN %d is not a whole number of rows of TW %d", bn, g.tw) end
      g.th = bn // g.tw
    end
    if bm ~= 64 and bm ~= 128 then return nil, "BM is 64 or 128" end
    local wm = bm // 64
    if cfg.WARPS % wm ~= 0 then return nil, "WARPS must hold the BM / 64 warp rows" end
    local wn = cfg.WARPS // wm
    if bn % (16 * wn) ~= 0 then return nil, string.format("BN %d over %d warp columns: not a whole number of n16 pairs a warp", bn, wn) end
    g.nf = bn // (8 * wn)
    if cfg.BCB ~= 32 and cfg.BCB ~= 64 then return nil, "BCB is 32 or 64 bytes" end
    local s = t.stride
    g.rh, g.rw = (g.th - 1) * s + t.k[2], (g.tw - 1) * s + t.k[3]
    g.rv = (g.ve - 1 + g.rw + g.ve - 1) // g.ve
    local rawc0 = g.rh * g.rv * g.ve
    local rawc = rawc0 + (40 - rawc0 % 32) % 32
    g.vecload = t.sp[3] % g.ve == 0 and 1 or 0
    local bc, rsb = cfg.BCB // es, cfg.BCB + 16
    local stage = t.k[2] * t.k[3] * bm * rsb + (g.vecload == 1 and bc * rawc * es or 0)
    -- OVERLAP 1: two Bs buffers, the next chunk transposed during this one's MMAs (3 stages at
    -- least); where that does not fit, the kernel without it
    local function smem(st, ov) return st * stage + (ov == 1 and 2 or 1) * g.rh * g.rw * rsb end
    local function pick(ov, lo)
      if cfg.STAGES ~= 0 then return cfg.STAGES >= lo and smem(cfg.STAGES, ov) <= limit and cfg.STAGES or nil end
      for st = 4, lo, -1 do if smem(st, ov) <= limit then return st end end -- as many as fit, 4 at most
      return nil
    end
    if cfg.OVERLAP ~= 0 and cfg.OVERLAP ~= 1 then return nil, "OVERLAP is 0 or 1" end
    g.overlap, g.stages = 0, nil
    if cfg.OVERLAP == 1 then
      g.stages = pick(1, 3)
      if g.stages then g.overlap = 1 end
    end
    g.stages = g.stages or pick(0, 2) or (cfg.STAGES ~= 0 and cfg.STAGES or 2)
    if g.stages < 2 then return nil, "STAGES >= 2" end
    g.smem = smem(g.stages, g.overlap)
    if g.smem > limit then
      return nil, string.format("%d bytes of shared memory (weights of %d taps, a %d x %d input region, %d stages): more than the %d a block may have",
        g.smem, t.k[2] * t.k[3], g.rh, g.rw, g.stages, limit)
    end
    g.bc = bc
    -- registers: 4 x NF x 4 accumulators a thread; NF 16 (a 64 x 128 warp tile) would spill
    if g.nf > 8 then return nil, string.format("a warp tile of 64 x %d: more accumulators than registers", g.nf * 8) end
    -- tiles, and the persistent CTAs resident at once (shared memory, and registers: ptxas gives a
    -- 64 x 64 warp tile about 250 a thread, 64 x 32 about 185, 64 x 16 about 135)
    g.ocp = (cout_g + bm - 1) // bm * bm
    g.ntx, g.nty = (t.out[3] + g.tw - 1) // g.tw, (t.out[2] + g.th - 1) // g.th
    g.ntiles = t.groups * (g.ocp // bm) * t.b * t.out[1] * g.nty * g.ntx
    local threads = cfg.WARPS * 32
    local regs = g.nf >= 8 and 256 or g.nf >= 4 and 192 or 136
    g.per_sm = math.max(1, math.min(SMEM_PER_SM // (g.smem + 1024), 65536 // (threads * regs), 2048 // threads))
    return g
  end
  if cfg.BN ~= 0 then return shape(cfg.BN) end
  -- BN 0: the tile that finishes first on the persistent grid, counting a tile as its positions
  -- plus 32 (its weights, halo and pipeline start): rounds x (BN + 32); the larger BN on a tie
  local best, why, cost
  for _, bn in ipairs({ 256, 128, 64 }) do
    local g, w = shape(bn)
    if g then
      local rounds = (g.ntiles + sms * g.per_sm - 1) // (sms * g.per_sm)
      local c = rounds * (bn + 32)
      if not cost or c < cost then best, cost = g, c end
    else why = why or w end
  end
  if best then return best end
  return nil, why
end

local function sm_count(ctx) return (ctx and ctx.props and ctx.props.sm_count) or 132 end
local function smem_limit(ctx) return (ctx and ctx.props and ctx.props.smem_per_block_optin) or SMEM_OPTIN end

local function fits(t, dtype, cfg, ctx)
  return geometry(t, dtype, cfg, sm_count(ctx), smem_limit(ctx))
end

-- The mma variant's plan (conv_igemm.cu): the weights reordered (conv_wprep), then the persistent kernel.
local function plan_mma(t, case, ins, outs, cfg, ctx)
  local g = assert(fits(t, case.dtype, cfg, ctx))
  local cin_g, cout_g = t.cin // t.groups, t.cout // t.groups
  local ntaps = t.k[1] * t.k[2] * t.k[3]
  local ocp, icp = ctx.cdiv(cout_g, g.bm) * g.bm, ctx.cdiv(cin_g, g.bc) * g.bc
  local defs = { DT = case.dtype == "fp16" and 1 or 0, BM = g.bm, WARPS = cfg.WARPS, TH = g.th, TW = g.tw,
                 KD = t.k[1], KH = t.k[2], KW = t.k[3], S = t.stride, BCB = cfg.BCB, STAGES = g.stages,
                 VECLOAD = g.vecload, OVERLAP = g.overlap }
  local prep = ctx:kernel("conv_igemm.cu", "conv_wprep", defs)
  local main = ctx:kernel("conv_igemm.cu", "conv_igemm", defs)
  local nwr = t.groups * ntaps * ocp * icp
  local wr = ctx.empty({ nwr }, case.dtype)
  local ntx, nty, ntiles = g.ntx, g.nty, g.ntiles
  if ntiles * (icp // g.bc) * t.k[1] >= 2 ^ 31 or g.bc * t.sp[1] * t.sp[2] * t.sp[3] >= 2 ^ 31 then
    error(string.format("%d tiles x %d chunks, %d channels of %d positions a chunk: past the kernel's 32-bit counters and offsets",
      ntiles, (icp // g.bc) * t.k[1], g.bc, t.sp[1] * t.sp[2] * t.sp[3]), 0)
  end
  local threads = cfg.WARPS * 32
  local grid = math.min(ntiles, sm_count(ctx) * g.per_sm) -- persistent: the CTAs resident at once
  local plan = ctx.plan {
    { fn = prep, grid = { ctx.cdiv(nwr, 256) }, block = { 256 },
      args = { ins.weight, wr, ctx.i32(t.groups), ctx.i32(cout_g), ctx.i32(cin_g), ctx.i32(ocp // g.bm), ctx.i32(icp // g.bc) } },
    { fn = main, grid = { grid }, block = { threads }, smem = g.smem,
      args = { ins.input, wr, outs.out, ctx.i32(t.b), ctx.i32(t.cin), ctx.i32(t.cout), ctx.i32(t.groups),
               ctx.i32(t.sp[1]), ctx.i32(t.sp[2]), ctx.i32(t.sp[3]), ctx.i32(t.out[1]), ctx.i32(t.out[2]),
               ctx.i32(t.out[3]), ctx.i32(t.pad[1]), ctx.i32(t.pad[2]), ctx.i32(t.pad[3]), ctx.i32(ocp),
               ctx.i32(icp), ctx.i32(ntx), ctx.i32(nty), ctx.i32(ntiles) } },
  }
  plan.note = string.format("tile %d x %d positions x %d channels, %d stages%s, %d B shared, %d CTAs over %d tiles",
    g.th, g.tw, g.bm, g.stages, g.overlap == 1 and " (transpose overlapped)" or "", g.smem, grid, ntiles)
  return plan
end

-- VARIANT auto (the default) resolved for a case: wgmma (conv_wgmma.lua) on sm_90 for 2-D and
-- 3-D convolutions where its kernel takes the case (stride 1, the tile within shared memory), mma
-- (conv_igemm.cu) otherwise; 1-D stays on mma (its target was met on mma.sync: E_lib 1.13 fp16,
-- 0.95 fp32, session 10). Without ctx (launch_key) an H200 is assumed.
local function resolve(t, dtype, cfg, ctx)
  if cfg.VARIANT ~= "auto" then return cfg.VARIANT end
  local props = (ctx and ctx.props) or { cc_major = 9, cc_minor = 0 }
  if t.rank >= 2 and props.cc_major == 9 and (props.cc_minor or 0) == 0
      and wgmma.geometry(t, dtype, cfg, sm_count(ctx), smem_limit(ctx)) then
    return "wgmma"
  end
  return "mma"
end

-- The `cuda` implementation for a rank (docs/CONV.md). VARIANT: wgmma (conv_wgmma.cu, sm_90a) or
-- mma (conv_igemm.cu, sm_80+); auto picks (resolve, above). Space: BM output channels x BN
-- positions a CTA, TW (2-D / 3-D tile rows; wgmma: 1-D too), BCB bytes of input channels a K
-- chunk, STAGES in flight; mma also WARPS and OVERLAP (1: the next chunk's transpose during this
-- chunk's MMAs where 3 stages and two Bs fit; 0 and STAGES 2: transpose, barrier, MMAs). wgmma
-- candidates keep WARPS 8 and OVERLAP 1 (its one structure, 256 threads), mma ones vary them.
function M.cuda(rank)
  local default = { VARIANT = "auto", BM = 0, BN = 0, WARPS = 8, TW = 0, BCB = rank == 1 and 64 or 32, STAGES = 0, OVERLAP = 1 }
  local space = { VARIANT = { "wgmma", "mma" }, BM = { 64, 128 }, BN = { 64, 128, 256 }, WARPS = { 4, 8 },
                  TW = rank == 1 and { 0 } or { 16, 32, 64 }, BCB = { 32, 64 }, STAGES = { 2, 3, 4 }, OVERLAP = { 1 } }
  local function wgmma_fits(t, dtype, cfg, ctx)
    return wgmma.geometry(t, dtype, cfg, sm_count(ctx), smem_limit(ctx))
  end
  return {
    source = rank == 1 and "conv_igemm.cu" or "conv_wgmma.cu", -- the default's kernel on an H200
    description = "implicit GEMM on tensor cores, the input region of a tile by cp.async, transposed in shared memory to [position][channel] so that every tap is a row shift; sm_90 (VARIANT wgmma, 2-D / 3-D): wgmma m64nNk16 (fp16) / m64nNk8 (TF32) from shared-memory descriptors over virtual positions (region rows RW apart), two warpgroups, fp32 accumulators; elsewhere (VARIANT mma): mma.sync m16n8k16 / TF32 m16n8k8 from ldmatrix",
    default = default,
    space = space,
    supports = function(case, ctx)
      local t = M.dims(case, rank)
      local g, why
      if resolve(t, case.dtype, default, ctx) == "wgmma" then g, why = wgmma_fits(t, case.dtype, default, ctx)
      else g, why = fits(t, case.dtype, default, ctx) end
      if not g then return false, why end
      return true
    end,
    valid = function(case, cfg)
      local t = M.dims(case, rank)
      if cfg.VARIANT == "wgmma" then
        return cfg.WARPS == 8 and cfg.OVERLAP == 1 and wgmma_fits(t, case.dtype, cfg) ~= nil
      end
      return fits(t, case.dtype, cfg) ~= nil
    end,
    -- what compiles and launches: the variant and its resolved tile (0s resolve to one of the others)
    launch_key = function(case, cfg)
      local t = M.dims(case, rank)
      if resolve(t, case.dtype, cfg, nil) == "wgmma" then
        local g = wgmma.geometry(t, case.dtype, cfg, 132, SMEM_OPTIN)
        return g and wgmma.launch_key(g, cfg) or "invalid"
      end
      local g = geometry(t, case.dtype, cfg, 132, SMEM_OPTIN)
      if not g then return "invalid" end
      return string.format("BM=%d,BN=%d,TH=%d,TW=%d,WARPS=%d,BCB=%d,STAGES=%d,OVERLAP=%d", g.bm, g.bn, g.th, g.tw,
        cfg.WARPS, cfg.BCB, g.stages, g.overlap)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local t = M.dims(case, rank)
      local v = resolve(t, case.dtype, cfg, ctx)
      if v == "wgmma" then
        local g = assert(wgmma_fits(t, case.dtype, cfg, ctx))
        return wgmma.plan(t, case.dtype, g, cfg, ins, outs, ctx, sm_count(ctx))
      end
      if v ~= "mma" then error(string.format("VARIANT=%s: wgmma, mma or auto", tostring(cfg.VARIANT)), 0) end
      return plan_mma(t, case, ins, outs, cfg, ctx)
    end,
  }
end

return M
