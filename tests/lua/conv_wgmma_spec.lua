-- conv_wgmma (operators/_shared/conv_wgmma.lua, the convolutions' `cuda` VARIANT wgmma) and the
-- VARIANT choice of conv.lua's `cuda`: the tiles a configuration resolves to, what `valid` and
-- `supports` refuse, and the plan's kernels and launches, without a GPU (a recording ctx stands
-- in for context.lua's).
local cw = require("conv_wgmma")
local conv = require("conv")

local function case(rank, dtype, over)
  local p = { batch = 1, in_channels = 128, out_channels = 128, kernel_size = 3, stride = 1, padding = 1, groups = 1 }
  if rank == 1 then p.L = 131072 elseif rank == 2 then p.H = 320 else p.in_channels, p.out_channels, p.D, p.H = 64, 64, 32, 320 end
  for k, v in pairs(over or {}) do p[k] = v end
  return { params = p, dtype = dtype, id = "spec" }
end

local H200 = { sm_count = 132, smem_per_block_optin = 232448, cc_major = 9, cc_minor = 0 }

-- a ctx that records ctx:kernel calls and returns the step list as the plan
local function recording_ctx(props)
  local ctx = { props = props or H200, kernels = {} }
  function ctx.cdiv(a, b) return (a + b - 1) // b end
  function ctx.i32(v) return { i32 = v } end
  function ctx.empty(shape, dtype) return { shape = shape, dtype = dtype } end
  function ctx.plan(steps) return steps end
  function ctx:kernel(file, name, defines, options)
    local k = { file = file, name = name, defines = defines, options = options }
    self.kernels[#self.kernels + 1] = k
    return k
  end
  return ctx
end

local function geometry(rank, c, over, sms)
  local cfg = { BM = 0, BN = 0, TW = 0, BCB = 32, STAGES = 0 }
  for k, v in pairs(over or {}) do cfg[k] = v end
  return cw.geometry(conv.dims(c, rank), c.dtype, cfg, sms or 132, 232448)
end

describe("conv_wgmma.geometry", function()
  it("2-D H = 320: 128 channels a CTA (two warpgroups along M), 5 x 40 positions, N 208, 4 stages", function()
    for _, dt in ipairs({ "fp16", "fp32" }) do
      local g = geometry(2, case(2, dt))
      assert.same({ 128, 5, 40, 208, 208, 4 }, { g.bm, g.th, g.tw, g.nv, g.n, g.stages })
      assert.equal(42, g.rw) -- the virtual positions' row pitch: TW + KW - 1
      assert.equal(8 * 64, g.ntiles)
      assert.is_true(g.smem <= 232448)
    end
  end)
  it("3-D H = 320: 64 channels, the two warpgroups halve the positions (N 248 of NV 496)", function()
    local g = geometry(3, case(3, "fp16"))
    assert.same({ 64, 3, 160, 496, 248, 3 }, { g.bm, g.th, g.tw, g.nv, g.n, g.stages })
    assert.equal(32 * 2 * 107, g.ntiles)
  end)
  it("covers the tile's last position in whole n8 blocks a warpgroup", function()
    for _, over in ipairs({ { H = 16 }, { H = 48, W = 20 }, { H = 7, W = 200 } }) do
      for _, rank in ipairs({ 2, 3 }) do
        local g = geometry(rank, case(rank, "fp16", over))
        assert.is_true(g.nv >= (g.th - 1) * g.rw + g.tw)
        assert.equal(0, g.nv % (8 * g.wgn))
        assert.is_true(g.npb >= g.rh * g.rw) -- Bs holds the whole region
      end
    end
  end)
  it("keeps explicit TW and BN (TH = BN / TW)", function()
    local g = geometry(2, case(2, "fp16"), { TW = 64, BN = 128, BM = 64, STAGES = 3 })
    -- (2 - 1) 66 + 64 = 130 positions, in n8 blocks for each of the two warpgroups: 144, N 72
    assert.same({ 64, 2, 64, 144, 72, 3 }, { g.bm, g.th, g.tw, g.nv, g.n, g.stages })
  end)
  it("refuses stride > 1, N past the registers, STAGES < 3 and shared memory past the block", function()
    local g, why = geometry(2, case(2, "fp16", { stride = 2 }))
    assert.is_nil(g)
    assert.matches("stride 2", why)
    g, why = geometry(2, case(2, "fp16"), { TW = 64, BN = 256, BM = 64 }) -- 4 rows of 66: NV 264, N 136
    assert.is_not_nil(g)
    g, why = geometry(2, case(2, "fp16"), { TW = 64, BN = 256, BM = 128 }) -- N 264
    assert.is_nil(g)
    assert.matches("past 224", why)
    g, why = geometry(3, case(3, "fp16"), { TW = 64, BN = 512, BM = 64 }) -- 8 rows: NV 528, N 264
    assert.is_nil(g)
    assert.matches("past 248", why)
    g, why = geometry(2, case(2, "fp16", { kernel_size = 5, padding = 2 }), { TW = 64, BN = 192 }) -- k 5: N <= 192
    assert.is_nil(g)
    assert.matches("past 192", why)
    g, why = geometry(2, case(2, "fp16"), { STAGES = 2 })
    assert.is_nil(g)
    assert.matches("STAGES >= 3", why)
    g, why = geometry(2, case(2, "fp16"), { BCB = 64, STAGES = 4, TW = 64, BN = 128 })
    assert.is_nil(g)
    assert.matches("shared memory", why)
  end)
  it("1-D: one tile row of up to 240 positions", function()
    local g = geometry(1, case(1, "fp16"), { BCB = 64 })
    assert.equal(1, g.th)
    assert.is_true(g.tw <= 240 and g.n <= 248)
  end)
end)

describe("conv.cuda VARIANT", function()
  local function run_plan(rank, c, cfg, props)
    local impl = conv.cuda(rank)
    local ctx = recording_ctx(props)
    local ins, outs = { input = "input", weight = "weight" }, { out = "out" }
    local steps = impl.plan(c, ins, outs, cfg or impl.default, ctx)
    return steps, ctx.kernels
  end
  it("auto is wgmma on sm_90 for 2-D and 3-D of stride 1, mma for 1-D, other strides and other GPUs", function()
    local _, k = run_plan(2, case(2, "fp16"))
    assert.same({ "conv_wgmma.cu", "conv_wgmma_wprep" }, { k[1].file, k[1].name })
    assert.same({ "conv_wgmma.cu", "conv_wgmma" }, { k[2].file, k[2].name })
    assert.same({ "--gpu-architecture=sm_90a" }, k[2].options)
    _, k = run_plan(3, case(3, "fp32"))
    assert.equal("conv_wgmma", k[2].name)
    _, k = run_plan(1, case(1, "fp16"))
    assert.equal("conv_igemm", k[2].name)
    _, k = run_plan(2, case(2, "fp16", { stride = 2 }))
    assert.equal("conv_igemm", k[2].name)
    _, k = run_plan(2, case(2, "fp16"), nil, { sm_count = 108, smem_per_block_optin = 166912, cc_major = 8, cc_minor = 0 })
    assert.equal("conv_igemm", k[2].name)
  end)
  it("launches the wgmma kernel persistent (one CTA an SM), 256 threads, its shared memory, NV in the defines", function()
    local steps, k = run_plan(2, case(2, "fp16"))
    assert.same({ 132 }, steps[2].grid)
    assert.same({ 256 }, steps[2].block)
    local g = geometry(2, case(2, "fp16"))
    assert.equal(g.smem, steps[2].smem)
    assert.same({ DT = 1, BM = 128, TH = 5, TW = 40, KD = 1, KH = 3, KW = 3, BCB = 32, STAGES = 4, VECLOAD = 1, NV = 208 },
      k[2].defines)
    assert.equal(g.ntiles, steps[2].args[#steps[2].args].i32)
    assert.matches("^wgmma: tile 5 x 40", steps.note)
  end)
  it("VARIANT wgmma on another GPU is an error naming the device", function()
    local c = case(2, "fp16")
    local cfg = {}
    for kk, v in pairs(conv.cuda(2).default) do cfg[kk] = v end
    cfg.VARIANT = "wgmma"
    local ok, err = pcall(run_plan, 2, c, cfg, { sm_count = 108, cc_major = 8, cc_minor = 0 })
    assert.is_false(ok)
    assert.matches("sm_80", err)
  end)
  it("valid: wgmma candidates keep WARPS 8 and OVERLAP 1; launch keys tell the variants apart", function()
    local impl = conv.cuda(2)
    local c = case(2, "fp16")
    local base = { VARIANT = "wgmma", BM = 128, BN = 128, WARPS = 8, TW = 32, BCB = 32, STAGES = 3, OVERLAP = 1 }
    assert.is_true(impl.valid(c, base))
    local w4 = {}
    for kk, v in pairs(base) do w4[kk] = v end
    w4.WARPS = 4
    assert.is_false(impl.valid(c, w4))
    local mma = {}
    for kk, v in pairs(base) do mma[kk] = v end
    mma.VARIANT = "mma"
    assert.is_true(impl.valid(c, mma))
    assert.matches("^wgmma,", impl.launch_key(c, base))
    assert.not_matches("wgmma", impl.launch_key(c, mma))
    assert.equal(impl.launch_key(c, base), impl.launch_key(c, (function()
      local a = {}
      for kk, v in pairs(base) do a[kk] = v end
      a.VARIANT = "auto"
      return a
    end)()))
    assert.is_false(impl.valid(case(2, "fp16", { stride = 2 }), base))
  end)
  it("supports every case of the grids with the default", function()
    local impl2, impl3 = conv.cuda(2), conv.cuda(3)
    for i = 1, 20 do
      for _, dt in ipairs({ "fp16", "fp32" }) do
        assert.is_true(impl2.supports(case(2, dt, { H = 16 * i }), { props = H200 }))
        assert.is_true(impl3.supports(case(3, dt, { H = 16 * i }), { props = H200 }))
      end
    end
  end)
end)
