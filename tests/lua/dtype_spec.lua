-- tb.dtype: the one dtype table (host/tb_dtype.c) and the Lua lookups built on it (util.lua,
-- context.lua, gemm.lua), which must agree with what tb.tensor accepts.
local dtype = require("tb.dtype")
local util = require("tilebench.util")

describe("tb.dtype", function()
  it("lists each dtype with its C type, size and kind", function()
    assert.are.same({"fp32", "fp16", "bf16", "fp8_e4m3", "int8", "uint8", "int32", "int64", "fp8_e5m2", "int16"},
                    dtype.names)
    assert.are.same({name = "fp16", c_type = "__half", size = 2, is_float = true, tensor = true, max_finite = 65504},
                    dtype.info.fp16)
    assert.are.equal(448, dtype.info.fp8_e4m3.max_finite)
    assert.are.equal(3.3895313892515355e38, dtype.info.bf16.max_finite)
    assert.are.equal(3.4028234663852886e38, dtype.info.fp32.max_finite)
    assert.are.equal(57344, dtype.info.fp8_e5m2.max_finite)
    assert.are.same({name = "int64", c_type = "int64_t", size = 8, is_float = false, tensor = true}, dtype.info.int64)
    assert.are.equal("__nv_fp8_e4m3", dtype.info.fp8_e4m3.c_type)
    assert.is_false(dtype.info.fp8_e5m2.tensor)
    assert.is_false(dtype.info.int16.tensor)
    for _, name in ipairs(dtype.names) do assert.are.equal(name, dtype.info[name].name) end
  end)

  it("maps TileBench's and PyTorch's aliases, in any letter case", function()
    assert.are.equal("fp8_e4m3", dtype.aliases.float8_e4m3fn)
    assert.are.equal("fp16", dtype.normalize("half"))
    assert.are.equal("fp16", dtype.normalize("Float16"))
    assert.are.equal("bf16", dtype.normalize("BF16"))
    assert.are.equal("fp8_e5m2", dtype.normalize("float8_e5m2"))
    assert.is_nil(dtype.normalize("fp12"))
    assert.is_nil(dtype.normalize(16))
    assert.is_nil(dtype.normalize(string.rep("x", 100)))
  end)

  it("is what util reads", function()
    for _, name in ipairs(dtype.names) do
      assert.are.equal(dtype.info[name].size, util.dtype_size(name))
      assert.are.equal(not dtype.info[name].is_float, util.is_int_dtype(name))
    end
    for alias, name in pairs(dtype.aliases) do assert.are.equal(name, util.normalize_dtype(alias)) end
    assert.are.equal(4, util.dtype_size("fp12"))
  end)

  it("names the dtypes tb.tensor accepts, and only those", function()
    local tensor = require("tb.tensor")
    for _, name in ipairs(dtype.names) do
      -- a shape-less check: an empty tensor of 0 elements needs no device for a refused dtype
      local ok, err = pcall(tensor.empty, {0}, name)
      if not dtype.info[name].tensor then
        assert.is_false(ok)
        assert.matches("invalid dtype '" .. name .. "'", err, 1, true)
      elseif not ok then
        assert.is_nil(tostring(err):find("invalid dtype", 1, true))
      end
    end
  end)
end)
