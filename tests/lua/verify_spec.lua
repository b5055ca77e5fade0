-- verify_spec.lua: tb.verify's default tolerances and argument checking (no GPU needed). The
-- comparison itself runs on the device: tests/gpu/verify.lua.
local verify = require("tb.verify")

describe("tb.verify", function()
  it("has DESIGN.md's default tolerances per dtype", function()
    local want = {
      fp32 = { 1e-5, 1.3e-6 }, fp16 = { 1e-3, 1e-3 }, bf16 = { 1e-2, 1.6e-2 }, fp8_e4m3 = { 1.0, 0.1 },
      int8 = { 0, 0 }, uint8 = { 0, 0 }, int32 = { 0, 0 }, int64 = { 0, 0 },
      float16 = { 1e-3, 1e-3 }, fp8_e4m3fn = { 1.0, 0.1 },
    }
    for dtype, t in pairs(want) do
      local atol, rtol = verify.defaults(dtype)
      assert.equals(t[1], atol)
      assert.equals(t[2], rtol)
    end
    local ok, err = pcall(verify.defaults, "fp12")
    assert.is_false(ok)
    assert.matches("invalid dtype 'fp12'", err)
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
