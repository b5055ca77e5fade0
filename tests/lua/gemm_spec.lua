-- gemm (operators/_shared/gemm.lua, the matmul operators' plans): which kernel a configuration runs, without a GPU.
local gemm = require("gemm")
local h200_ctx = { props = { sm_count = 132 } }

describe("gemm.resolve", function()
  local pp = { VARIANT = "pp", BN = 128, STAGES = 4, SMALL = 1 }
  it("runs one wave of 128 x 128 tiles or less on the non-persistent kernel", function()
    local small = gemm.resolve({ M = 256, N = 256, K = 256, batch = 32 }, pp, h200_ctx) -- 128 tiles
    assert.same(gemm.SMALL_CONFIG, small)
    assert.equal("wgmma", small.VARIANT)
    local one = gemm.resolve({ M = 32, N = 32, K = 32, batch = 32 }, pp, h200_ctx)
    assert.equal("wgmma", one.VARIANT)
  end)
  it("keeps the configuration from one tile over a wave on, and without SMALL", function()
    assert.equal(pp, gemm.resolve({ M = 288, N = 288, K = 288, batch = 32 }, pp, h200_ctx)) -- 288 tiles
    local plain = { VARIANT = "pp", BN = 128, STAGES = 4 }
    assert.equal(plain, gemm.resolve({ M = 32, N = 32, K = 32, batch = 1 }, plain, h200_ctx))
  end)
  it("counts tiles against the device's SMs", function()
    local p = { M = 1536, N = 1408, K = 64, batch = 1 } -- 12 x 11 = 132 tiles
    assert.equal("wgmma", gemm.resolve(p, pp, h200_ctx).VARIANT)
    assert.equal("pp", gemm.resolve(p, pp, { props = { sm_count = 100 } }).VARIANT)
  end)
end)

describe("gemm.streamk_split", function()
  it("runs whole waves data-parallel", function()
    assert.same({ 0, 132 }, { gemm.streamk_split(264, 64, 132, 1) })
    assert.same({ 0, 132 }, { gemm.streamk_split(264, 64, 132, 2) })
  end)
  it("shares every tile out when there are fewer tiles than SMs, over no more CTAs than K-tiles", function()
    assert.same({ 128, 132 }, { gemm.streamk_split(128, 64, 132, 1) }) -- streamk m 1024 n 4096, BN 256
    assert.same({ 1, 3 }, { gemm.streamk_split(1, 3, 132, 2) })
  end)
  it("streams the remainder (SK = 1) or the remainder and one wave (SK = 2)", function()
    -- m 1024, n 11008, BN 256: 8 x 43 = 344 tiles = 2 waves + 80
    assert.same({ 80, 132 }, { gemm.streamk_split(344, 64, 132, 1) })
    assert.same({ 212, 132 }, { gemm.streamk_split(344, 64, 132, 2) })
    -- between one and two waves, SK = 2 streams every tile
    assert.same({ 200, 132 }, { gemm.streamk_split(200, 64, 132, 2) })
  end)
end)

describe("gemm.valid for the Stream-K and int8 kernels", function()
  local p16 = { M = 1024, N = 4096, K = 4096, batch = 1, dtype = "fp16" }
  local p8 = { M = 2048, N = 2048, K = 1024, batch = 1, dtype = "int8", out = "int32" }
  it("takes SK 1 and 2 for sk and only SK 1 for the other variants (no duplicate candidates)", function()
    assert.is_true(gemm.valid(p16, { VARIANT = "sk", BN = 256, STAGES = 3, SK = 2 }))
    assert.is_true(gemm.valid(p16, { VARIANT = "sk", BN = 128, STAGES = 6, SK = 1 }))
    assert.is_true(gemm.valid(p16, { VARIANT = "tma", BN = 256, STAGES = 3, SK = 1 }))
    assert.is_false(gemm.valid(p16, { VARIANT = "tma", BN = 256, STAGES = 3, SK = 2 }))
    assert.is_false(gemm.valid(p16, { VARIANT = "sk", BN = 256, STAGES = 5, SK = 1 })) -- 5 x 48 KiB
  end)
  it("has int8 on the wgmma kernels but not on mma or the fp32 Stream-K fix-up", function()
    assert.is_true(gemm.valid(p8, { VARIANT = "tma", BN = 256, STAGES = 4 }))
    assert.is_true(gemm.valid(p8, { VARIANT = "wgmma", BN = 128, STAGES = 5 }))
    assert.is_false(gemm.valid(p8, { VARIANT = "mma", BN = 128, STAGES = 3 }))
    assert.is_false(gemm.valid(p8, { VARIANT = "sk", BN = 256, STAGES = 3, SK = 1 }))
  end)
end)

-- The plans' wiring, with a stand-in context that records kernels and steps (no NVRTC, no GPU).
local function fake_ctx(sms)
  local c = { props = { sm_count = sms or 132 }, allocated = {} }
  function c:kernel(file, name, defines) return { file = file, name = name, defines = defines } end
  c.plan = function(steps) return steps end
  c.cdiv = function(a, b) return (a + b - 1) // b end
  c.i32 = function(v) return { i32 = v } end
  c.i64 = function(v) return { i64 = v } end
  c.dtype_size = function(d) return require("tb.dtype").info[gemm.canon(d)].size end
  c.tensormap = function(t, spec) return { map = t, spec = spec } end
  c.empty = function(shape, dtype) return { shape = shape, dtype = dtype } end
  c.full = function(shape, dtype, v)
    local t = { shape = shape, dtype = dtype, value = v }
    c.allocated[#c.allocated + 1] = t
    return t
  end
  return c
end

describe("the int8 and Stream-K plans", function()
  it("runs int8 on B^T as given (no transpose), with int32 output, after the steps in p.pre", function()
    local ctx = fake_ctx()
    local pre = { name = "unpack" }
    local p = { M = 2048, N = 2048, K = 1024, batch = 1, dtype = "int8", out = "int32", b_kmajor = true, pre = { pre } }
    local steps = gemm.cuda_plan(p, "a", "bt", "c", { VARIANT = "tma", BN = 256, STAGES = 4 }, ctx)
    assert.equal(2, #steps)
    assert.equal(pre, steps[1])
    local f = steps[2].fn
    assert.equal("gemm_tma", f.name)
    assert.same({ DT = 4, OUT = 4, BN = 256, STAGES = 4, B_KMAJOR = 1, TMA = 1 }, f.defines)
    assert.equal("bt", steps[2].args[2])
    assert.same({ 1024, 2048, 1 }, steps[2].args[12].spec.dims) -- B^T (N, K)
    assert.same({ 128, 256, 1 }, steps[2].args[12].spec.box) -- 128 int8 of K x BN rows
  end)
  it("gives gemm_streamk zeroed workspace and counters for its stream-K tiles", function()
    local ctx = fake_ctx()
    -- m 1024, n 11008, fp16, BN 256: 344 tiles; SK = 2 streams 80 + 132
    local p = { M = 1024, N = 11008, K = 4096, batch = 1, dtype = "fp16" }
    local steps = gemm.cuda_plan(p, "a", "b", "c", { VARIANT = "sk", BN = 256, STAGES = 3, SK = 2 }, ctx)
    assert.equal(1, #steps)
    local s = steps[1]
    assert.equal("gemm_streamk", s.fn.name)
    assert.equal(1, s.fn.defines.STREAMK)
    assert.same({ 132 }, s.grid)
    assert.same({ 212 * 128 * 256 }, s.args[13].shape)
    assert.equal("fp32", s.args[13].dtype)
    assert.equal(0, s.args[13].value)
    assert.same({ 212 }, s.args[14].shape)
    assert.equal(0, s.args[14].value)
    assert.same({ i32 = 212 }, s.args[15])
  end)
  it("adds nothing to the other variants' launches", function()
    local ctx = fake_ctx()
    local p = { M = 4096, N = 4096, K = 1024, batch = 1, dtype = "fp16" }
    local steps = gemm.cuda_plan(p, "a", "b", "c", { VARIANT = "tma", BN = 256, STAGES = 3 }, ctx)
    assert.equal(12, #steps[1].args)
    assert.is_nil(steps[1].fn.defines.STREAMK)
    assert.equal(0, #ctx.allocated)
  end)
end)
