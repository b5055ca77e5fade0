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
      {function(t) t.memory_ceiling_gbs = 0 end, "memory_ceiling_gbs must be a positive number, got integer 0"},
      {function(t) t.bandwidth_mixes = {reed = 1} end, 'unknown key "reed" in bandwidth_mixes %(did you mean "read"%?%)'},
      {function(t) t.bandwidth_mixes = {copy = -3} end, "bandwidth_mixes.copy must be a positive number"},
      {function(t) t.bandwidth_mixes = {1, 2} end, "bandwidth_mixes must be an object"},
      {function(t) t.bandwidth_by_size = {bytes = 1} end, "bandwidth_by_size must be a list of {bytes, gbs}"},
      {function(t) t.bandwidth_by_size = {{bytes = 2, gbs = 1}, {bytes = 1, gbs = 1}} end,
        "bandwidth_by_size must ascend in bytes %(entry 2%)"},
      {function(t) t.bandwidth_by_size = {{bytes = 2}} end, "bandwidth_by_size%[1%]%.gbs must be a positive number"},
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

local util_null = require("tilebench.util").null

describe("peaks.ceiling", function()
  local p = peaks.load("TESTGPU", {dir = DIR})

  it("uses the dtype's matrix rate for MatMul/Attn (fp32 runs as TF32)", function()
    assert.are.same({800, "matrix_tflops.fp16"}, {peaks.ceiling(p, "fp16", "MatMul/Attn")})
    assert.are.same({800, "matrix_tflops.bf16"}, {peaks.ceiling(p, "bf16", "MatMul/Attn")})
    assert.are.same({400, "matrix_tflops.tf32"}, {peaks.ceiling(p, "fp32", "MatMul/Attn")})
    assert.are.same({1200, "matrix_tflops.fp8_e4m3"}, {peaks.ceiling(p, "fp8_e4m3fn", "MatMul/Attn")})
    assert.are.same({1400, "matrix_tflops.int8"}, {peaks.ceiling(p, "int8", "MatMul/Attn")})
  end)

  it("takes the better of fp16 and bf16, one tensor pipe at one peak", function()
    local q = {gpu = "TESTGPU", fp32_tflops = 50, matrix_tflops = {fp16 = 757, bf16 = 805, tf32 = 400}}
    assert.are.same({805, "matrix_tflops.bf16"}, {peaks.ceiling(q, "fp16", "MatMul/Attn")})
    assert.are.same({805, "matrix_tflops.bf16"}, {peaks.ceiling(q, "bf16", "matrix")})
    q.matrix_tflops.bf16 = nil
    assert.are.same({757, "matrix_tflops.fp16"}, {peaks.ceiling(q, "bf16", "MatMul/Attn")})
    q.matrix_tflops.fp16 = util_null
    assert.has_error(function() peaks.ceiling(q, "fp16", "MatMul/Attn") end)
    assert.are.same({400, "matrix_tflops.tf32"}, {peaks.ceiling(q, "fp32", "MatMul/Attn")})
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

describe("peaks: the memory ceiling (issue 19)", function()
  it("reads a file of the older format: one ceiling, the copy kernel's", function()
    local p = {gpu = "OLD", bandwidth_gbs = 3898.5, fp32_tflops = 60.8, matrix_tflops = {fp16 = 786},
               device = {l2_bytes = 62914560}}
    assert.are.equal(p.bandwidth_gbs, peaks.memory_ceiling(p))
    local bw, info = peaks.case_bandwidth(p, 2 ^ 30)
    assert.are.equal(p.bandwidth_gbs, bw)
    assert.are.equal("dram", info.source)
    assert.is_false(info.l2_near)
    local _, near = peaks.case_bandwidth(p, 100 * 2 ^ 20) -- rmsnorm fp32 K = 6144's working set
    assert.is_true(near.l2_near)
  end)

  it("reads the committed H200 file: the best mix is the DRAM ceiling, the size curve near the L2", function()
    local p = peaks.load("H200", {dir = (TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or ".") .. "/peaks"})
    local best = 0
    for _, k in ipairs(peaks.mix_keys) do
      local v = p.bandwidth_mixes[k]
      if type(v) == "number" and v > best then best = v end
    end
    assert.are.equal(best, peaks.memory_ceiling(p))
    assert.is_true(peaks.memory_ceiling(p) >= p.bandwidth_gbs)
    local bw, info = peaks.case_bandwidth(p, 2 ^ 30)
    assert.are.equal(best, bw)
    assert.are.equal("dram", info.source)
    assert.is_true(#p.bandwidth_by_size > 0)
    local _, near = peaks.case_bandwidth(p, 100 * 2 ^ 20)
    assert.is_true(near.l2_near)
  end)

  it("takes the new file's memory ceiling, with nulls for mixes not measured", function()
    local t = valid()
    t.memory_ceiling_gbs, t.bandwidth_mixes = 1200, {read = 1200, copy = 1000, driver_copy = util.null}
    local p = peaks.validate(t, "x")
    assert.are.equal(1200, peaks.memory_ceiling(p))
    assert.are.equal(1000, peaks.bandwidth(p))
    assert.are.equal(1200e9, peaks.ceilings(p).bandwidth) -- the report's roof is rho's
  end)

  it("interpolates the size ladder in log(size), clamped at its ends", function()
    local p = {bandwidth_by_size = {{bytes = 1e6, gbs = 100}, {bytes = 4e6, gbs = 300}}}
    assert.are.equal(100, peaks.size_bandwidth(p, 1))
    assert.are.equal(300, peaks.size_bandwidth(p, 1e9))
    assert.is_true(math.abs(peaks.size_bandwidth(p, 2e6) - 200) < 1e-9)
    assert.is_nil(peaks.size_bandwidth({}, 2e6))
  end)

  it("passes the case's bandwidth to the roofline", function()
    local p = peaks.validate(valid(), "x")
    local r = peaks.roofline(p, nil, 1e9, 1e-3, "fp32", "Point-wise", 2000)
    assert.are.equal(0.5, r.rho)
    assert.are.equal(2000, r.bandwidth_gbs)
    assert.are.equal(1.0, peaks.roofline(p, nil, 1e9, 1e-3, "fp32", "Point-wise").rho)
  end)
end)
