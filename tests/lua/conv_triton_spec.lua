-- conv_triton (operators/_shared/conv_triton.lua, the convolutions' `triton` implementation):
-- the tiles a configuration resolves to, its validity checks and the plan's launches, without a
-- GPU (a recording ctx stands in for context.lua's).
local ct = require("conv_triton")

local function case(rank, dtype, over)
  local p = { batch = 1, in_channels = 128, out_channels = 128, kernel_size = 3, stride = 1, padding = 1, groups = 1 }
  if rank == 1 then p.L = 131072 elseif rank == 2 then p.H = 320 else p.in_channels, p.out_channels, p.D, p.H = 64, 64, 32, 64 end
  for k, v in pairs(over or {}) do p[k] = v end
  return { params = p, dtype = dtype, id = "spec" }
end

-- a ctx that records ctx:triton specs and returns the step list as the plan
local function recording_ctx()
  local ctx = { props = { sm_count = 132 }, launches = {} }
  function ctx.cdiv(a, b) return (a + b - 1) // b end
  function ctx.i32(v) return { i32 = v } end
  function ctx.i64(v) return { i64 = v } end
  function ctx.empty(shape, dtype) return { shape = shape, dtype = dtype } end
  function ctx.plan(steps) return steps end
  function ctx:triton(spec)
    self.launches[#self.launches + 1] = spec
    return spec
  end
  return ctx
end

local function plan(rank, c, cfg)
  local impl = ct.implementation(rank)
  local ctx = recording_ctx()
  local ins = { input = { name = "input" }, weight = { name = "weight" } }
  local outs = { out = { name = "out" } }
  impl.plan(c, ins, outs, cfg or impl.default, ctx)
  return ctx.launches, ins, outs
end

describe("conv_triton.tiles", function()
  local cfg = ct.DEFAULT
  local function tiles(c, rank, sms, over)
    local conf = {}
    for k, v in pairs(cfg) do conf[k] = v end
    for k, v in pairs(over or {}) do conf[k] = v end
    local r = ct.tiles(c, require("conv").dims(c, rank), conf, sms or 132)
    return { r.bm, r.bn, r.bk, r.cl, r.pf, r.split, r.warps }
  end
  it("2-D / 3-D fp16: channels-last, 64 channels a step; fp32 as given, 32; BN the group's", function()
    assert.same({ 128, 128, 64, true, false, 1, 8 }, tiles(case(2, "fp16"), 2))
    assert.same({ 128, 128, 32, false, false, 1, 8 }, tiles(case(2, "fp32"), 2))
    assert.same({ 256, 64, 64, true, false, 1, 8 }, tiles(case(3, "fp16"), 3)) -- 256 tiles of 256
  end)
  it("1-D fp16: as given through registers (PF), 64 positions on 4 warps", function()
    assert.same({ 64, 128, 64, false, true, 1, 4 }, tiles(case(1, "fp16"), 1))
    assert.same({ 128, 128, 32, false, false, 1, 8 }, tiles(case(1, "fp32"), 1))
    -- channels-last asked for: no prefetch
    assert.same({ 128, 128, 64, true, false, 1, 8 }, tiles(case(1, "fp16"), 1, 132, { CL = 1 }))
  end)
  it("takes fewer positions where the tiles would not fill the SMs", function()
    assert.equal(64, tiles(case(3, "fp16", { H = 16, D = 8 }), 3)[1]) -- 2048 positions: 16 tiles of 128, 32 of 64
    assert.equal(64, tiles(case(2, "fp16", { H = 128 }), 2)[1]) -- 16384 positions: 128 tiles of 128
    assert.equal(128, tiles(case(2, "fp16", { H = 128 }), 2, 100)[1])
    assert.equal(64, tiles(case(3, "fp32", { H = 16, D = 8 }), 3)[1])
  end)
  it("reads small 2-D / 3-D fp16 cases as given (PF) where 64-position tiles would not fill the SMs", function()
    assert.same({ 64, 128, 64, false, true }, { table.unpack(tiles(case(2, "fp16", { H = 80 }), 2), 1, 5) }) -- 6400
    assert.same({ 64, 128, 64, true, false }, { table.unpack(tiles(case(2, "fp16", { H = 96 }), 2), 1, 5) }) -- 9216
    assert.same({ 64, 64, 64, false, true }, { table.unpack(tiles(case(3, "fp16", { H = 16, D = 32 }), 3), 1, 5) })
    assert.same({ 128, 64, 64, true, false }, { table.unpack(tiles(case(3, "fp16", { H = 32, D = 32 }), 3), 1, 5) })
  end)
  it("narrows BN and BK to small groups (at least 16, tl.dot's K)", function()
    local r = tiles(case(2, "fp16", { groups = 16 }), 2) -- 8 channels a group
    assert.same({ 16, 16 }, { r[2], r[3] })
  end)
  it("keeps explicit values", function()
    assert.same({ 64, 64, 32, false, true, 3, 8 },
      tiles(case(1, "fp16"), 1, 132, { BM = 64, BN = 64, BK = 32, CL = 0, SPLIT = 3, num_warps = 8 }))
  end)
  it("splits the K steps only where the tiles fill at most half the SMs, keeping 2 steps a split", function()
    local function split(c, rank) return tiles(c, rank)[6] end
    assert.equal(9, split(case(2, "fp16", { H = 16 }), 2)) -- 4 tiles of 64, 18 steps
    assert.equal(4, split(case(2, "fp16", { H = 48 }), 2)) -- 36 tiles
    assert.equal(3, split(case(2, "fp16", { H = 64 }), 2)) -- 64 tiles
    assert.equal(1, split(case(2, "fp16", { H = 80 }), 2)) -- 100 tiles of 64: more than half a wave
    assert.equal(1, split(case(2, "fp16", { H = 96 }), 2)) -- 144 tiles
    assert.equal(1, split(case(1, "fp16", { L = 64, kernel_size = 1, padding = 0 }), 1)) -- 2 steps: 1 a split at most
    assert.equal(13, split(case(3, "fp16", { H = 16, D = 2 }), 3)) -- 8 tiles, 27 steps: 17 would fill the SMs
  end)
end)

describe("conv_triton.implementation", function()
  it("refuses shared memory past 227 KiB, more than 128 accumulators a thread and tiles past the group", function()
    local impl = ct.implementation(2)
    local c = case(2, "fp32")
    assert.is_true(impl.valid(c, impl.default))
    assert.is_false(impl.valid(c, { BM = 256, BN = 128, BK = 64, CL = 0, num_warps = 8, num_stages = 4 })) -- 384 KiB
    assert.is_false(impl.valid(c, { BM = 256, BN = 128, BK = 32, CL = 0, num_warps = 4, num_stages = 3 })) -- 256 a thread
    assert.is_false(ct.implementation(3).valid(case(3, "fp16"), { BM = 128, BN = 128, BK = 64, CL = 1, num_warps = 8,
                                                                   num_stages = 3 })) -- 64 channels
    -- PF: the prefetched A tile counts too (64 + 16 registers; 128 + 32)
    local one, f16 = ct.implementation(1), case(1, "fp16")
    assert.is_true(one.valid(f16, { BM = 64, BN = 128, BK = 64, CL = 0, num_warps = 4, num_stages = 4 }))
    assert.is_false(one.valid(f16, { BM = 128, BN = 128, BK = 64, CL = 0, num_warps = 4, num_stages = 3 }))
    assert.is_true(one.valid(f16, { BM = 128, BN = 128, BK = 64, CL = 1, num_warps = 4, num_stages = 3 }))
    -- 3-D on 4 warps spills past 64 positions
    local three, c3 = ct.implementation(3), case(3, "fp16")
    assert.is_false(three.valid(c3, { BM = 128, BN = 64, BK = 64, CL = 1, num_warps = 4, num_stages = 3 }))
    assert.is_true(three.valid(c3, { BM = 64, BN = 64, BK = 64, CL = 1, num_warps = 4, num_stages = 3 }))
    assert.is_true(three.valid(c3, { BM = 128, BN = 64, BK = 64, CL = 1, num_warps = 8, num_stages = 3 }))
  end)
  it("refuses slabs past int32 offsets and grids past 65535 in y, with the reason", function()
    local impl = ct.implementation(1)
    assert.is_true(impl.supports(case(1, "fp16")))
    local ok, why = impl.supports(case(1, "fp16", { L = 1 << 24 })) -- 128 x 2^24 = 2^31
    assert.is_false(ok)
    assert.matches("2%^31", why)
    ok, why = impl.supports(case(1, "fp16", { L = 64, batch = 70000 }))
    assert.is_false(ok)
    assert.matches("65535", why)
  end)
  it("plans the weight's and the input's transposes in one launch (CL), then the conv kernel", function()
    local l, ins, outs = plan(2, case(2, "fp16", { batch = 2 }))
    assert.equal(2, #l)
    local p = l[1]
    assert.equal("conv_prep_kernel", p.kernel)
    assert.equal(ins.weight, p.args.w)
    assert.same({ 128 * 128 * 9 }, p.args.wt.shape)
    assert.equal(ins.input, p.args.x)
    assert.same({ 2 * 128 * 102400 }, p.args.xt.shape)
    -- (Cout Cin_g, taps) and (Cin, positions) = (128, 102400) in 64 x 64 tiles, the latter per batch entry
    assert.same({ 256, 2 * 1600 }, { p.args.n_w.i32, p.args.n_x.i32 })
    assert.same({ 256 + 2 * 3200 }, p.grid)
    assert.same({ 16384, 9, 128, 102400 }, { p.args.RW.i32, p.args.CW.i32, p.args.RX.i32, p.args.CX.i32 })
    local k = l[2]
    assert.equal("conv_kernel", k.kernel)
    assert.equal(p.args.xt, k.args.x)
    assert.equal(p.args.wt, k.args.wt)
    assert.equal(outs.out, k.args.out)
    assert.same({ 320 * 320 // 128, 2, 1 }, k.grid)
    assert.same({ RANK = 2, KD = 1, KH = 3, KW = 3, BM = 128, BN = 128, BK = 64, CL = true, EVEN_C = true, SPLIT = 1,
                  PF = false }, k.constexprs)
    assert.equal(8, k.num_warps)
    assert.same({ 1, 320, 320, 1, 320, 320, 1, 1 }, { k.args.D.i32, k.args.H.i32, k.args.W.i32, k.args.OD.i32,
      k.args.OH.i32, k.args.OW.i32, k.args.stride.i32, k.args.pad.i32 })
  end)
  it("transposes the weight alone where the input is read as given", function()
    local l, ins = plan(2, case(2, "fp32"))
    assert.equal(2, #l)
    assert.equal("conv_transpose_kernel", l[1].kernel)
    assert.equal(ins.weight, l[1].args.src)
    assert.same({ 128 * 128 // 64 * 1, 1 }, l[1].grid) -- (Cout Cin_g, taps) in 64 x 64 tiles
    assert.equal(ins.input, l[2].args.x)
    assert.equal(l[1].args.dst, l[2].args.wt)
  end)
  it("splits small cases over grid z into fp32 partials and sums them in a last launch", function()
    local l, ins, outs = plan(2, case(2, "fp16", { H = 16 })) -- read as given (PF): no input transpose
    assert.equal(3, #l)
    local k, r = l[2], l[3]
    assert.equal(ins.input, k.args.x)
    assert.is_true(k.constexprs.PF)
    assert.same({ 4, 1, 9 }, k.grid)
    assert.equal(9, k.constexprs.SPLIT)
    assert.same({ 9 * 128 * 256 }, k.args.ws.shape)
    assert.equal("fp32", k.args.ws.dtype)
    assert.equal(128 * 256, k.args.n_out.i64)
    assert.equal("conv_splitk_reduce_kernel", r.kernel)
    assert.equal(k.args.ws, r.args.ws)
    assert.equal(outs.out, r.args.out)
    assert.same({ 32 }, r.grid)
    assert.equal(9, r.constexprs.SPLIT)
  end)
  it("reads 1-D fp16 as given (two launches), prefetching through registers on 4 warps", function()
    local l, ins = plan(1, case(1, "fp16"))
    assert.equal(2, #l)
    local k = l[2]
    assert.equal(ins.input, k.args.x)
    assert.same({ true, false, 64, 4 }, { k.constexprs.PF, k.constexprs.CL, k.constexprs.BM, k.num_warps })
    assert.same({ 131072 // 64, 1, 1 }, k.grid)
  end)
  it("reads fp32 as given (two launches) and puts batch x groups on grid y", function()
    local l, ins = plan(1, case(1, "fp32", { groups = 4, batch = 3, L = 1000, stride = 2 }))
    assert.equal(2, #l)
    local k = l[2]
    assert.equal(ins.input, k.args.x)
    assert.same({ 500 // 64 + 1, 12, 1 }, k.grid) -- 500 positions, BN 32 = the group's 32; 96 tiles: no split
    assert.same({ 32, 32, 32, 4 }, { k.constexprs.BN, k.constexprs.BK, k.args.cin_g.i32, k.args.groups.i32 })
    assert.equal(64, k.constexprs.BM)
    assert.same({ 1, 1, 1000, 500, 2 }, { k.args.D.i32, k.args.H.i32, k.args.W.i32, k.args.OW.i32, k.args.stride.i32 })
  end)
end)
