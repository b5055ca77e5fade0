-- tb.dnn without a GPU: the module loads, reports whether cuDNN is there, and rejects malformed
-- batch-norm requests with messages that name the field (before any GPU is touched).
local dnn = require("tb.dnn")

describe("tb.dnn", function()
  it("exposes batchnorm, sdpa, conv, maxpool, available and version", function()
    assert.is_function(dnn.batchnorm)
    assert.is_function(dnn.sdpa)
    assert.is_function(dnn.conv)
    assert.is_function(dnn.maxpool)
    assert.is_function(dnn.available)
    assert.is_function(dnn.version)
  end)

  it("says whether cuDNN can be opened, naming it when not", function()
    local ok, msg = dnn.available()
    assert.is_boolean(ok)
    if not ok then assert.matches("cuDNN", msg) end
  end)

  it("rejects a non-table argument", function()
    local ok, err = pcall(dnn.batchnorm, 42)
    assert.is_false(ok)
    assert.matches("table expected", err)
  end)

  it("requires eps", function()
    local ok, err = pcall(dnn.batchnorm, { n = 4, c = 8, dtype = "fp16", param_dtype = "fp32" })
    assert.is_false(ok)
    assert.matches("field 'eps' %(a number%) is required", err)
  end)

  it("names a probe's missing or bad fields", function()
    local base = function(over)
      local t = { n = 4, c = 8, dtype = "fp16", param_dtype = "fp32", eps = 1e-5 }
      for k, v in pairs(over) do t[k] = v end
      return t
    end
    local cases = {
      { { n = 1.5 }, "field 'n' must be an integer %(got number%)" },
      { { c = "x" }, "field 'c' must be an integer %(got string%)" },
      { { dtype = false }, "field 'dtype' must be a dtype name %(got boolean%)" },
      { { param_dtype = "fp99" }, "field 'param_dtype': unknown dtype 'fp99'" },
      { { dtype = "int8" }, "'dtype' has dtype int8; batch norm takes fp32, fp16 or bf16" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(dnn.batchnorm, base(c[1]))
      assert.is_false(ok)
      assert.matches(c[2], tostring(err))
    end
  end)

  it("names a buffer that is not a tensor", function()
    local ok, err = pcall(dnn.batchnorm, { x = 3, eps = 1e-5 })
    assert.is_false(ok)
    assert.matches("field 'x' must be a tensor %(got number%)", err)
  end)

  it("names an attention probe's missing or bad fields", function()
    local base = function(over)
      local t = { b = 2, h = 3, s = 64, d = 16, dtype = "fp16", scale = 0.25, causal = true }
      for k, v in pairs(over) do t[k] = v end
      return t
    end
    local cases = {
      { { scale = "x" }, "tb.dnn.sdpa: field 'scale' %(a number%) is required" },
      { { causal = 1 }, "tb.dnn.sdpa: field 'causal' %(a boolean%) is required %(got number%)" },
      { { s = 1.5 }, "tb.dnn.sdpa: field 's' must be an integer %(got number%)" },
      { { dtype = "fp32" }, "tb.dnn.sdpa: 'dtype' has dtype fp32; attention takes fp16 or bf16" },
      { { dtype = "fp99" }, "tb.dnn.sdpa: field 'dtype': unknown dtype 'fp99'" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(dnn.sdpa, base(c[1]))
      assert.is_false(ok)
      assert.matches(c[2], tostring(err))
    end
  end)

  it("names an attention buffer that is not a tensor", function()
    local ok, err = pcall(dnn.sdpa, { q = {}, scale = 0.25, causal = true })
    assert.is_false(ok)
    assert.matches("tb.dnn.sdpa: field 'q' must be a tensor %(got table%)", err)
  end)

  it("names a convolution probe's missing or bad fields", function()
    local base = function(over)
      local t = { n = 1, c = 8, k = 8, input = { 16, 16 }, window = { 3, 3 }, stride = 1, padding = 1, dtype = "fp16" }
      for k, v in pairs(over) do t[k] = v end
      return t
    end
    local cases = {
      { { input = 16 }, "tb.dnn.conv: field 'input' %(a table of 1 to 3 spatial sizes%) is required %(got number%)" },
      { { input = { 1, 2, 3, 4 } }, "tb.dnn.conv: field 'input' lists 4 sizes %(1, 2 or 3%)" },
      { { window = { 3 } }, "tb.dnn.conv: field 'window' must list 2 integers %(got 1%)" },
      { { stride = "two" }, "tb.dnn.conv: field 'stride' must be an integer or a table of 2 %(got string%)" },
      { { padding = { 1, 0.5 } }, "tb.dnn.conv: field 'padding'%[2%] must be an integer" },
      { { groups = 1.5 }, "tb.dnn.conv: field 'groups' must be an integer %(got number%)" },
      { { k = false }, "tb.dnn.conv: field 'k' must be an integer %(got boolean%)" },
      { { dtype = "int8" }, "tb.dnn.conv: 'dtype' has dtype int8; convolution takes fp32, fp16 or bf16" },
      { { x = 1 }, "tb.dnn.conv: field 'x' must be a tensor %(got number%)" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(dnn.conv, base(c[1]))
      assert.is_false(ok)
      assert.matches(c[2], tostring(err))
    end
  end)

  it("names a max-pooling probe's missing or bad fields", function()
    local base = function(over)
      local t = { n = 4, c = 128, h = 32, w = 32, window = 3, stride = 2, padding = 1, dtype = "bf16" }
      for k, v in pairs(over) do t[k] = v end
      return t
    end
    local cases = {
      { { h = "x" }, "tb.dnn.maxpool: field 'h' must be an integer %(got string%)" },
      { { window = 0 }, "tb.dnn.maxpool: window 0, stride 2 and padding 1 out of range" },
      { { dtype = "int32" }, "tb.dnn.maxpool: 'dtype' has dtype int32; pooling takes fp32, fp16 or bf16" },
      { { y = 2 }, "tb.dnn.maxpool: field 'x' must be a tensor %(got nil%)" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(dnn.maxpool, base(c[1]))
      assert.is_false(ok)
      assert.matches(c[2], tostring(err))
    end
  end)
end)
