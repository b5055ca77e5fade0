-- tb.blas without a GPU: the module loads, reports whether libcublasLt is there, and rejects
-- malformed matmul requests with messages that name the field (before any GPU is touched).
local blas = require("tb.blas")

describe("tb.blas", function()
  it("exposes matmul, available and version", function()
    assert.is_function(blas.matmul)
    assert.is_function(blas.available)
    assert.is_function(blas.version)
  end)

  it("says whether cuBLASLt can be used, naming it when not", function()
    local ok, msg = blas.available()
    assert.is_boolean(ok)
    if not ok then assert.matches("cublasLt", msg) end -- library absent, or no device for cublasLtCreate
  end)

  it("rejects a non-table argument", function()
    assert.has_error(function() blas.matmul("a") end)
    local ok, err = pcall(blas.matmul, 42)
    assert.is_false(ok)
    assert.matches("table expected", err)
  end)

  it("names the missing tensor field", function()
    local ok, err = pcall(blas.matmul, { m = 1, n = 1, k = 1 })
    assert.is_false(ok)
    assert.matches("field 'a' must be a tensor %(got nil%)", err)
  end)

  it("rejects a non-tensor operand", function()
    local ok, err = pcall(blas.matmul, { a = {}, b = {}, c = {}, m = 1, n = 1, k = 1 })
    assert.is_false(ok)
    assert.matches("field 'a' must be a tensor %(got table%)", err)
  end)
end)
