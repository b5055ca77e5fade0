-- tb.python without a GPU: the embedded interpreter starts from python3 on PATH, the bridge calls
-- a function with a tensor description and returns its result; a raising function comes back as
-- data with its file in the traceback. (A missing interpreter: tests/cli/python_missing.sh, since
-- the interpreter starts once per process.)
local py = require("tb.python")
local json = require("tilebench.json")
local home = os.getenv("TILEBENCH_HOME")
local fixture = home .. "/tests/fixtures/python/describe_torch.py"

local function call(fn, inputs, params)
  local out = py.call("call", json.encode({ file = fixture, ["function"] = fn, inputs = inputs,
                                            params = params or {} }))
  return json.decode(out)
end

describe("tb.python", function()
  it("starts the interpreter and says which one", function()
    local ok, why = py.available()
    assert.is_true(ok, why)
    local info = py.info()
    assert.matches("^3%.%d+%.%d+", info.version)
    assert.matches("libpython3", info.library)
  end)

  it("hands a function a tensor description as __cuda_array_interface__ and returns its result", function()
    local r = call("forward", { { name = "x", ptr = 4096, shape = { 2, 3 }, strides = { 3, 1 }, dtype = "bf16" } },
                   { n = 6, dtype = "bf16" })
    assert.is_nil(r.error)
    local got = r.result
    assert.same({ 2, 3 }, got.shape)
    assert.equal("<i2", got.typestr)   -- bf16 travels as 16-bit words, viewed as bfloat16 by torch
    assert.equal(4096, got.ptr)
    assert.same({ 6, 2 }, got.strides) -- bytes
    assert.equal(2, got.version)       -- no stream field: the consumer adds no synchronisation
    assert.equal(6, got.n)
    assert.equal("bf16", got.dtype)
  end)

  it("maps every device dtype", function()
    local want = { fp32 = "<f4", fp16 = "<f2", fp8_e4m3 = "|u1", int8 = "|i1", int32 = "<i4", int64 = "<i8" }
    for dtype, typestr in pairs(want) do
      local r = call("forward", { { name = "x", ptr = 256, shape = { 4 }, strides = { 1 }, dtype = dtype } })
      assert.equal(typestr, r.result.typestr, dtype)
    end
  end)

  it("returns a raised exception as data, with the operator file in the traceback", function()
    local r = call("broken", { { name = "x", ptr = 256, shape = { 4 }, strides = { 1 }, dtype = "fp32" } })
    assert.is_nil(r.result)
    assert.matches("describe_torch.py", r.error, 1, true)
    assert.matches("ValueError: broken on purpose", r.error, 1, true)
  end)

  it("names a missing function and a missing file", function()
    local r = call("nope", {})
    assert.matches("has no attribute 'nope'", r.error, 1, true)
    local out = json.decode(py.call("call", json.encode({ file = home .. "/no/such_torch.py", ["function"] = "forward",
                                                        inputs = {} })))
    assert.matches("no/such_torch.py", out.error, 1, true)
  end)

  it("refuses step ids that are not positive and reports closed steps", function()
    assert.has_error(function() py.step(0) end)
    local s = py.step(12345, "x_torch.py")
    assert.is_false(s:is_closed())
    s:close()
    assert.is_true(s:is_closed())
    s:close() -- twice is fine
    local ok, err = pcall(s.run, s)
    assert.is_false(ok)
    assert.matches("torch step is closed", err)
  end)
end)
