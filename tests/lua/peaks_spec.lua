-- tilebench.peaks: loading and checking peaks/<label>.json, and the choice of compute ceiling.
local peaks = require("tilebench.peaks")
local util = require("tilebench.util")
local lfs = require("lfs")

local DIR = (TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or ".") .. "/tests/fixtures/peaks"

local function valid()
  return {gpu = "X", device = {name = "x"}, bandwidth_gbs = 1000, fp32_tflops = 10,
          matrix_tflops = {fp16 = 100}}
end

describe("peaks.load", function()
  it("loads and validates a peaks file", function()
    local p = peaks.load("TESTGPU", {dir = DIR})
    assert.are.equal("TESTGPU", p.gpu)
    assert.are.equal(4000, peaks.bandwidth(p))
    assert.are.equal(800, p.matrix_tflops.bf16)
  end)

  it("says how to measure a GPU with no peaks file", function()
    local ok, err = pcall(peaks.load, "H999", {dir = DIR})
    assert.is_false(ok)
    assert.are.equal("no peaks for GPU label 'H999': run `tilebench peaks --gpu H999` (looked for " ..
      DIR .. "/H999.json)", err)
  end)

  it("rejects a label that is not one path component", function()
    for _, bad in ipairs({"../etc", "a/b", "", "..", "a b"}) do
      local ok, err = pcall(peaks.load, bad, {dir = DIR})
      assert.is_false(ok, bad)
      assert.matches("invalid GPU label", err)
    end
  end)

  it("checks the schema, naming the file and the field", function()
    local cases = {
      {function(t) t.bandwidth_gbs = "fast" end, 'bandwidth_gbs must be a positive number, got string "fast"'},
      {function(t) t.fp32_tflops = -1 end, "fp32_tflops must be a positive number, got integer %-1"},
      {function(t) t.matrix_tflops.fp61 = 3 end, 'unknown key "fp61" in matrix_tflops %(did you mean "fp16"%?%)'},
      {function(t) t.matrix_tflops.bf16 = 0 end, "matrix_tflops.bf16 must be a positive number"},
      {function(t) t.device = nil end, "device must be an object with a name"},
      {function(t) t.gpu = "Y" end, 'gpu is "Y", expected "X"'},
      {function(t) t.provenance = 3 end, "provenance must be an object"},
    }
    for _, c in ipairs(cases) do
      local t = valid()
      c[1](t)
      local ok, err = pcall(peaks.validate, t, "peaks/X.json", "X")
      assert.is_false(ok, c[2])
      assert.matches("^peaks/X%.json: " .. c[2], err)
    end
  end)

  it("rejects a file that is not JSON", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "wb")); f:write("{gpu: "); f:close()
    local ok, err = pcall(peaks.load_file, path)
    os.remove(path)
    assert.is_false(ok)
    assert.matches("invalid JSON", err)
  end)

  it("saves atomically with sorted keys and loads back the same", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(lfs.mkdir(dir))
    local t = valid()
    t.provenance = {b = 1, a = 2}
    local path = peaks.save("X", t, {dir = dir})
    local text = util.read_file(path)
    assert.is_truthy(text:find('"a": 2,\n', 1, true))
    assert.is_true(text:find('"bandwidth_gbs"', 1, true) < text:find('"device"', 1, true))
    local back = peaks.load("X", {dir = dir})
    assert.are.equal(1000, back.bandwidth_gbs)
    os.remove(path)
    lfs.rmdir(dir)
  end)
end)

describe("peaks.ceiling", function()
  local p = peaks.load("TESTGPU", {dir = DIR})

  it("uses the dtype's matrix rate for MatMul/Attn (fp32 runs as TF32)", function()
    assert.are.same({800, "matrix_tflops.fp16"}, {peaks.ceiling(p, "fp16", "MatMul/Attn")})
    assert.are.same({800, "matrix_tflops.bf16"}, {peaks.ceiling(p, "bf16", "MatMul/Attn")})
    assert.are.same({400, "matrix_tflops.tf32"}, {peaks.ceiling(p, "fp32", "MatMul/Attn")})
    assert.are.same({1200, "matrix_tflops.fp8_e4m3"}, {peaks.ceiling(p, "fp8_e4m3fn", "MatMul/Attn")})
    assert.are.same({1400, "matrix_tflops.int8"}, {peaks.ceiling(p, "int8", "MatMul/Attn")})
  end)

  it("uses the fp32 vector rate for every other category", function()
    assert.are.same({50, "fp32_tflops"}, {peaks.ceiling(p, "fp16", "Point-wise")})
    assert.are.same({50, "fp32_tflops"}, {peaks.ceiling(p, "bf16", "Reduction/Norm")})
    assert.are.same({50, "fp32_tflops"}, {peaks.ceiling(p, "fp16", "Stencil/Conv")})
    assert.are.same({50, "fp32_tflops"}, {peaks.ceiling(p, "int32", "MatMul/Attn")})
  end)

  it("says which rate is missing when a case needs it", function()
    local q = peaks.load("NOFP8", {dir = DIR})
    local ok, err = pcall(peaks.ceiling, q, "fp8_e4m3", "MatMul/Attn")
    assert.is_false(ok)
    assert.matches("NOFP8%.json has no matrix_tflops%.fp8_e4m3", err)
    ok, err = pcall(peaks.ceiling, q, "int8", "MatMul/Attn") -- measured as unavailable: null
    assert.is_false(ok)
    assert.matches("NOFP8%.json has no matrix_tflops%.int8 %(the ceiling of int8 MatMul/Attn cases%)", err)
    assert.are.same({300, "matrix_tflops.fp16"}, {peaks.ceiling(q, "fp16", "MatMul/Attn")})
  end)
end)
