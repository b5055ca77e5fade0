-- tensor_spec.lua: tb.tensor's argument checking, which happens before any GPU call, and the clear
-- error every allocating call gives where there is no driver. Device behaviour: tests/gpu/tensor.lua.
local tensor = require("tb.tensor")
local device = require("tb.device")
local available, why = device.available()

-- Lua names the function by where it found it ('empty' or 'tb.tensor.empty').
local function bad_argument(n, fname, text)
  return "bad argument #" .. n .. " to '[%w%.]-" .. fname .. "' %(" .. text:gsub("[%(%)%.%[%]%-%+%*%?%^%$]", "%%%0") .. "%)"
end

describe("tb.tensor arguments", function()
  it("rejects an unknown dtype with the standard message", function()
    local ok, err = pcall(tensor.empty, { 4, 8 }, "fp12")
    assert.is_false(ok)
    assert.matches(bad_argument(2, "empty", "invalid dtype 'fp12'"), err)
    ok, err = pcall(tensor.randn, 16, "float64", 1)
    assert.is_false(ok)
    assert.matches(bad_argument(2, "randn", "invalid dtype 'float64'"), err)
  end)

  it("rejects negative, non-integer and absurd shapes", function()
    local ok, err = pcall(tensor.empty, { 4, -8 }, "fp16")
    assert.is_false(ok)
    assert.matches(bad_argument(1, "empty", "shape dimension 2 is negative (-8)"), err)
    ok, err = pcall(tensor.empty, -1, "fp32")
    assert.is_false(ok)
    assert.matches("shape dimension 1 is negative", err)
    ok, err = pcall(tensor.empty, { 4, 2.5 }, "fp32")
    assert.is_false(ok)
    assert.matches("shape dimension 2 is not an integer", err)
    ok, err = pcall(tensor.empty, { 1 << 40, 1 << 40 }, "fp16")
    assert.is_false(ok)
    assert.matches("more than 2%^63 elements", err)
    ok, err = pcall(tensor.empty, { 1 << 31, 1 << 31 }, "int64")
    assert.is_false(ok)
    assert.matches("shape {2147483648, 2147483648} of int64 needs more than 2%^62 bytes", err)
    ok, err = pcall(tensor.empty, { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, "fp16")
    assert.is_false(ok)
    assert.matches("shape has 9 dimensions %(at most 8%)", err)
    ok, err = pcall(tensor.empty, "4x8", "fp16")
    assert.is_false(ok)
    assert.matches("shape %(integer or table of integers%) expected, got string", err)
  end)

  it("keeps rand and randn to float dtypes and checks their parameters", function()
    local ok, err = pcall(tensor.rand, 16, "int8", 1)
    assert.is_false(ok)
    assert.matches(bad_argument(2, "rand", "rand needs a float dtype, got int8 (use randint)"), err)
    ok, err = pcall(tensor.randn, 16, "int32", 1)
    assert.is_false(ok)
    assert.matches("randn needs a float dtype, got int32", err)
    ok, err = pcall(tensor.rand, 16, "fp32", 1, 2.0, 1.0)
    assert.is_false(ok)
    assert.matches("need finite lo < hi", err)
    ok, err = pcall(tensor.rand, 16, "fp32", 1, 0, math.huge)
    assert.is_false(ok)
    assert.matches("need finite lo < hi", err)
    ok, err = pcall(tensor.randn, 16, "fp32", 1, 0, -1)
    assert.is_false(ok)
    assert.matches("std must be finite and >= 0", err)
    ok, err = pcall(tensor.rand, 16, "fp32", 1.5)
    assert.is_false(ok)
    assert.matches("number has no integer representation", err)
    ok, err = pcall(tensor.rand, 16, "fp32")
    assert.is_false(ok)
    assert.matches(bad_argument(3, "rand", "number expected, got no value"), err)
  end)

  it("checks randint ranges against the dtype", function()
    local ok, err = pcall(tensor.randint, 16, "int8", 1, -32, -32)
    assert.is_false(ok)
    assert.matches("empty range %[%-32, %-32%)", err)
    ok, err = pcall(tensor.randint, 16, "int8", 1, -129, 0)
    assert.is_false(ok)
    assert.matches("%[%-129, 0%) does not fit int8", err)
    ok, err = pcall(tensor.randint, 16, "uint8", 1, 0, 257)
    assert.is_false(ok)
    assert.matches("%[0, 257%) does not fit uint8", err)
    ok, err = pcall(tensor.randint, 16, "int32", 1, 0, (1 << 31) + 1)
    assert.is_false(ok)
    assert.matches("does not fit int32", err)
  end)

  it("checks values for integer dtypes before allocating", function()
    local ok, err = pcall(tensor.full, 4, "int8", 300)
    assert.is_false(ok)
    assert.matches("full: 300 is out of range for int8", err)
    ok, err = pcall(tensor.full, 4, "uint8", -1)
    assert.is_false(ok)
    assert.matches("out of range for uint8", err)
    ok, err = pcall(tensor.full, 4, "int32", 1.5)
    assert.is_false(ok)
    assert.matches("full: 1.5 has no int32 representation", err)
    ok, err = pcall(tensor.from_table, { 1, 2, 3 }, "int8", { 2, 2 })
    assert.is_false(ok)
    assert.matches("shape has 4 elements but values has 3", err)
    ok, err = pcall(tensor.from_table, { 1, 2, 3 }, "int8", { 2, -1 })
    assert.is_false(ok)
    assert.matches("cannot infer dimension 2: 3 elements do not divide into 2", err)
    ok, err = pcall(tensor.from_table, { 1, "x" }, "int8")
    assert.is_false(ok)
    assert.matches("from_table: value 2: expected an integer, got string", err)
  end)

  it("tells tensors from other values", function()
    assert.is_false(tensor.is_tensor(nil))
    assert.is_false(tensor.is_tensor({}))
    assert.is_false(tensor.is_tensor(io.stdout))
  end)
end)

describe("tb.tensor without a GPU", function()
  if available then
    pending("a GPU is present: tests/gpu/tensor.lua covers the device")
    return
  end
  it("says why every allocating call cannot work", function()
    for _, call in ipairs({
      function() return tensor.empty({ 4, 8 }, "fp16") end,
      function() return tensor.full(4, "fp32", 1.0) end,
      function() return tensor.rand(4, "bf16", 7) end,
      function() return tensor.randn(4, "fp8_e4m3", 7) end,
      function() return tensor.randint(4, "int8", 7, -32, 33) end,
      function() return tensor.from_table({ 1, 2 }, "int32") end,
    }) do
      local ok, err = pcall(call)
      assert.is_false(ok)
      assert.equals("no_driver", require("tb.error").class(err))
      assert.is_truthy(tostring(err):find(why, 1, true), tostring(err)) -- the driver's own reason
    end
  end)
end)
