-- conv_wgmma.lua (operators/_shared; `require("conv_wgmma")`): the `cuda` implementation's VARIANT
-- wgmma (conv_wgmma.cu, sm_90a; docs/CONV.md): its geometry (the kernel's defines, shared memory,
-- tiles) and its plan. conv.lua's M.cuda picks it (VARIANT auto) on sm_90 for 2-D and 3-D
-- convolutions of stride 1; the mma.sync kernel (conv_igemm.cu) everywhere else.
local M = {}

local ESIZE = { fp16 = 2, fp32 = 4 }
local THREADS = 256
local OPTS = { "--gpu-architecture=sm_90a" }

-- One tile shape (tw positions a row, th rows) at BM / BCB / STAGES: the kernel's numbers, or nil
-- and why. NV: the tile's virtual positions (rows RW = TW + KW - 1 apart, conv_wgmma.cu), rounded
-- to whole n8 blocks a warpgroup; N = NV / (warpgroups along N) is the wgmma's N (<= 256).
local function shape(t, es, cfg, bm, tw, th, limit)
  if t.stride ~= 1 then return nil, string.format("stride %d (the wgmma kernel takes stride 1)", t.stride) end
  if bm ~= 64 and bm ~= 128 then return nil, "BM is 64 or 128" end
  if cfg.BCB ~= 32 and cfg.BCB ~= 64 then return nil, "BCB is 32 or 64 bytes" end
  local kh, kw = t.k[2], t.k[3]
  local g = { es = es, ve = 16 // es, bm = bm, bcb = cfg.BCB, bc = cfg.BCB // es, tw = tw, th = th }
  local wgm = bm // 64
  g.wgn = 2 // wgm
  g.rw, g.rh = tw + kw - 1, th + kh - 1
  local q = 8 * g.wgn
  g.nv = ((th - 1) * g.rw + tw + q - 1) // q * q
  g.n = g.nv // g.wgn
  -- registers: N / 2 accumulators a thread; ptxas (13.0, sm_90a) spills past N 248 (BM 64) or 224
  -- (BM 128) at KW <= 3, and past 192 at KW 5 and 7 (more taps' descriptors live), docs/CONV.md
  local nmax = kw > 3 and 192 or bm == 128 and 224 or 248
  if g.n > nmax then return nil, string.format("a tile of %d x %d positions: wgmma N %d past %d (registers)", th, tw, g.n, nmax) end
  local rv = (g.ve - 1 + g.rw + g.ve - 1) // g.ve
  local rawc0 = g.rh * rv * g.ve
  local rawc = rawc0 + (40 - rawc0 % 32) % 32
  g.vecload = t.sp[3] % g.ve == 0 and 1 or 0
  g.npb = g.nv + (kh - 1) * g.rw + kw - 1
  local stage = kh * kw * bm * cfg.BCB + (g.vecload == 1 and g.bc * rawc * es or 0)
  local function smem(st) return st * stage + 2 * cfg.BCB * g.npb end
  if cfg.STAGES ~= 0 then
    g.stages = cfg.STAGES
  else
    for st = 4, 3, -1 do
      if smem(st) <= limit then g.stages = st break end
    end
    g.stages = g.stages or 3
  end
  g.smem = smem(g.stages)
  if g.smem > limit then
    return nil, string.format("%d bytes of shared memory (weights of %d taps x %d channels, a %d x %d input region, %d stages): more than the %d a block may have",
      g.smem, kh * kw, bm, g.rh, g.rw, g.stages, limit)
  end
  local cout_g = t.cout // t.groups
  g.ocp = (cout_g + bm - 1) // bm * bm
  g.ntx, g.nty = (t.out[3] + tw - 1) // tw, (t.out[2] + th - 1) // th
  g.ntiles = t.groups * (g.ocp // bm) * t.b * t.out[1] * g.nty * g.ntx
  return g
end

-- A configuration resolved for a case: BM 0 is 128 output channels a CTA where a group has more
-- than 64, else 64; TW 0 and BN 0 (positions a tile: TH = BN / TW rows) pick the tile that finishes
-- first on the persistent grid (one CTA an SM), a tile costing its wgmma N (at least 64: below
-- that a chunk's barriers and copies take longer than its wgmmas) plus 32 (its epilogue, where
-- the tensor cores wait, and its halo): rounds x (max(N, 64) + 32), the larger N on a tie. TW
-- candidates: the output row split in 1 to 8 even pieces, and 64 to 240 where the row is longer
-- (1-D); TH: 1 to 32 rows (at most the output's). Returns the geometry or nil and why.
function M.geometry(t, dtype, cfg, sms, limit)
  local es = ESIZE[dtype]
  if not es then return nil, "dtype " .. tostring(dtype) .. " (the kernel has fp16 and fp32)" end
  for _, k in ipairs({ "BM", "BN", "TW", "BCB", "STAGES" }) do
    if math.type(cfg[k]) ~= "integer" then return nil, "the configuration has no integer " .. k end
  end
  if cfg.STAGES ~= 0 and cfg.STAGES < 3 then
    return nil, "STAGES >= 3 (the wgmma kernel transposes the next chunk while this one computes)"
  end
  local cout_g = t.cout // t.groups
  local bm = cfg.BM ~= 0 and cfg.BM or (cout_g > 64 and 128 or 64)
  local ow, oh = t.out[3], t.out[2]
  local tws = {}
  if cfg.TW ~= 0 then tws = { cfg.TW }
  else
    local seen = {}
    local function add(tw)
      if tw > 1 then tw = (tw + 1) // 2 * 2 end -- even: pairs of outputs stay aligned
      if not seen[tw] then seen[tw] = true tws[#tws + 1] = tw end
    end
    for k = 1, 8 do add((ow + k - 1) // k) end
    -- fixed widths for long rows (1-D: the whole row is one tile row)
    for _, tw in ipairs({ 64, 128, 192, 240 }) do if tw < ow then add(tw) end end
  end
  local best, cost, why
  for _, tw in ipairs(tws) do
    local ths = {}
    if cfg.BN ~= 0 then ths = { math.min(math.max(1, cfg.BN // tw), oh) }
    else for th = 1, math.min(32, oh) do ths[#ths + 1] = th end end
    for _, th in ipairs(ths) do
      local g, w = shape(t, es, cfg, bm, tw, th, limit)
      if g then
        local c = (g.ntiles + sms - 1) // sms * (math.max(g.n, 64) + 32)
        if not cost or c < cost or (c == cost and g.n > best.n) then best, cost = g, c end
      else why = why or w end
    end
  end
  if best then return best end
  return nil, why or "no tile fits"
end

function M.launch_key(g, cfg)
  return string.format("wgmma,BM=%d,TH=%d,TW=%d,NV=%d,BCB=%d,STAGES=%d", g.bm, g.th, g.tw, g.nv, cfg.BCB, g.stages)
end

-- The plan: the weights reordered (conv_wgmma_wprep), then the persistent kernel.
function M.plan(t, dtype, g, cfg, ins, outs, ctx, sms)
  local props = ctx.props or {}
  if props.cc_major and not (props.cc_major == 9 and (props.cc_minor or 0) == 0) then
    error(string.format("VARIANT=wgmma needs an sm_90 GPU (wgmma: sm_90a); this device is sm_%d%d: VARIANT=mma runs on sm_80+",
      props.cc_major, props.cc_minor or 0), 0)
  end
  local cin_g, cout_g = t.cin // t.groups, t.cout // t.groups
  local ntaps = t.k[1] * t.k[2] * t.k[3]
  local ocp, icp = g.ocp, ctx.cdiv(cin_g, g.bc) * g.bc
  local defs = { DT = dtype == "fp16" and 1 or 0, BM = g.bm, TH = g.th, TW = g.tw, KD = t.k[1], KH = t.k[2],
                 KW = t.k[3], BCB = cfg.BCB, STAGES = g.stages, VECLOAD = g.vecload, NV = g.nv }
  local prep = ctx:kernel("conv_wgmma.cu", "conv_wgmma_wprep", defs, OPTS)
  local main = ctx:kernel("conv_wgmma.cu", "conv_wgmma", defs, OPTS)
  local nwr = t.groups * ntaps * ocp * icp
  local wr = ctx.empty({ nwr }, dtype)
  if g.ntiles * (icp // g.bc) * t.k[1] >= 2 ^ 31 or g.bc * t.sp[1] * t.sp[2] * t.sp[3] >= 2 ^ 31 then
    error(string.format("%d tiles x %d chunks, %d channels of %d positions a chunk: past the kernel's 32-bit counters and offsets",
      g.ntiles, (icp // g.bc) * t.k[1], g.bc, t.sp[1] * t.sp[2] * t.sp[3]), 0)
  end
  local grid = math.min(g.ntiles, sms) -- persistent: one CTA an SM
  local plan = ctx.plan {
    { fn = prep, grid = { ctx.cdiv(nwr, 256) }, block = { 256 },
      args = { ins.weight, wr, ctx.i32(t.groups), ctx.i32(cout_g), ctx.i32(cin_g), ctx.i32(ocp // g.bm), ctx.i32(icp // g.bc) } },
    { fn = main, grid = { grid }, block = { THREADS }, smem = g.smem,
      args = { ins.input, wr, outs.out, ctx.i32(t.b), ctx.i32(t.cin), ctx.i32(t.cout), ctx.i32(t.groups),
               ctx.i32(t.sp[1]), ctx.i32(t.sp[2]), ctx.i32(t.sp[3]), ctx.i32(t.out[1]), ctx.i32(t.out[2]),
               ctx.i32(t.out[3]), ctx.i32(t.pad[1]), ctx.i32(t.pad[2]), ctx.i32(t.pad[3]), ctx.i32(ocp),
               ctx.i32(icp), ctx.i32(g.ntx), ctx.i32(g.nty), ctx.i32(g.ntiles) } },
  }
  plan.note = string.format("wgmma: tile %d x %d positions (N %d) x %d channels, %d stages, %d B shared, %d CTAs over %d tiles",
    g.th, g.tw, g.n, g.bm, g.stages, g.smem, grid, g.ntiles)
  return plan
end

return M
