-- gemm (operators/_shared/gemm.lua, the matmul operators' plans): which kernel a configuration runs, without a GPU.
local gemm = require("gemm")
local ctx = { props = { sm_count = 132 } }

describe("gemm.resolve", function()
  local pp = { VARIANT = "pp", BN = 128, STAGES = 4, SMALL = 1 }
  it("runs one wave of 128 x 128 tiles or less on the non-persistent kernel", function()
    local small = gemm.resolve({ M = 256, N = 256, K = 256, batch = 32 }, pp, ctx) -- 128 tiles
    assert.same(gemm.SMALL_CONFIG, small)
    assert.equal("wgmma", small.VARIANT)
    local one = gemm.resolve({ M = 32, N = 32, K = 32, batch = 32 }, pp, ctx)
    assert.equal("wgmma", one.VARIANT)
  end)
  it("keeps the configuration from one tile over a wave on, and without SMALL", function()
    assert.equal(pp, gemm.resolve({ M = 288, N = 288, K = 288, batch = 32 }, pp, ctx)) -- 288 tiles
    local plain = { VARIANT = "pp", BN = 128, STAGES = 4 }
    assert.equal(plain, gemm.resolve({ M = 32, N = 32, K = 32, batch = 1 }, plain, ctx))
  end)
  it("counts tiles against the device's SMs", function()
    local p = { M = 1536, N = 1408, K = 64, batch = 1 } -- 12 x 11 = 132 tiles
    assert.equal("wgmma", gemm.resolve(p, pp, ctx).VARIANT)
    assert.equal("pp", gemm.resolve(p, pp, { props = { sm_count = 100 } }).VARIANT)
  end)
end)
