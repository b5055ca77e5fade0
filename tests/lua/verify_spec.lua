-- verify_spec.lua: tb.verify's argument checking (no GPU needed), and where its tolerances come
-- from: config.tolerance holds the defaults by dtype; tb.verify holds none. The comparison itself
-- runs on the device (tests/gpu/verify.lua) and on the fake backend (tests/c/test_seam.c).
local verify = require("tb.verify")
local config = require("tilebench.config")

describe("tb.verify", function()
  it("takes DESIGN.md's default tolerances per dtype from config.tolerance, not its own", function()
    local want = {
      fp32 = { 1e-5, 1.3e-6 }, fp16 = { 1e-3, 1e-3 }, bf16 = { 1e-2, 1.6e-2 }, fp8_e4m3 = { 1.0, 0.1 },
      int8 = { 0, 0 }, uint8 = { 0, 0 }, int32 = { 0, 0 }, int64 = { 0, 0 },
      float16 = { 1e-3, 1e-3 }, fp8_e4m3fn = { 1.0, 0.1 },
    }
    for dtype, t in pairs(want) do
      local atol, rtol = config.tolerance(nil, dtype)
      assert.equals(t[1], atol)
      assert.equals(t[2], rtol)
    end
    assert.is_nil(verify.defaults)
  end)

  it("wants tensors", function()
    local ok, err = pcall(verify.compare, 1, 2)
    assert.is_false(ok)
    assert.matches("bad argument #1 to '[%w%.]-compare' %(tb.tensor expected, got number%)", err)
    ok, err = pcall(verify.poison, {})
    assert.is_false(ok)
    assert.matches("bad argument #1 to '[%w%.]-poison' %(tb.tensor expected, got table%)", err)
  end)
end)
