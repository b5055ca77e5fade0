-- tilebench.metrics: roofline numbers, registered metrics and the gate.
local metrics = require("tilebench.metrics")
local peaks = require("tilebench.peaks")

local DIR = (TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or ".") .. "/tests/fixtures/peaks"
local P = peaks.load("TESTGPU", {dir = DIR}) -- 4000 GB/s, fp32 50, fp16 matrix 800 TFLOP/s

local function near(want, got, rel)
  assert.is_true(type(got) == "number" and math.abs(got - want) <= (rel or 1e-12) * math.abs(want),
    string.format("expected %.17g, got %s", want, tostring(got)))
end

describe("metrics.compute", function()
  it("computes latency, GB/s, TFLOP/s and intensity", function()
    -- vector_add fp32, n = 2^20: 12 MiB in 3.5 us
    local m = metrics.compute({ms = 0.0035, flops = 1048576, bytes = 12582912, dtype = "fp32"},
      {peaks = P, category = "Point-wise"})
    assert.are.equal(0.0035, m.latency_ms)
    near(12582912 / 3.5e-6 / 1e9, m.gbs)
    near(1048576 / 3.5e-6 / 1e12, m.tflops)
    near(1 / 12, m.intensity)
  end)

  it("measures a memory-bound case against bandwidth", function()
    -- 4e9 bytes in 1 s at 4000 GB/s: rho 1e-3... use 4 MB in 1 ms -> 4 GB/s / 4000
    local m = metrics.compute({ms = 1.0, flops = 1e6, bytes = 4e6, dtype = "fp16"},
      {peaks = P, category = "Point-wise"})
    assert.are.equal("memory", m.bound)
    near(4e6 / (1e-3 * 4000e9), m.rho)
    assert.are.equal("fp32_tflops", m.ceiling)
  end)

  it("measures a compute-bound matmul against the dtype's matrix rate", function()
    -- fp16 4096^3: 2*4096^3 flops, 3*4096^2*2 bytes; intensity 1365 > ridge 800e12/4000e9 = 200
    local flops, bytes = 2 * 4096 ^ 3, 3 * 4096 * 4096 * 2
    local m = metrics.compute({ms = 0.25, flops = flops, bytes = bytes, dtype = "fp16", category = "MatMul/Attn"},
      {peaks = P})
    assert.are.equal("compute", m.bound)
    assert.are.equal("matrix_tflops.fp16", m.ceiling)
    near(flops / (0.25e-3 * 800e12), m.rho)
  end)

  it("measures an operator that declares the matrix ceiling against it, whatever its category", function()
    local flops, bytes = 2 * 4096 ^ 3, 3 * 4096 * 4096 * 2
    local row = {ms = 0.25, flops = flops, bytes = bytes, dtype = "fp16"}
    local m = metrics.compute(row, {peaks = P, category = "Stencil/Conv", ceiling = "matrix"})
    assert.are.equal("matrix_tflops.fp16", m.ceiling)
    near(flops / (0.25e-3 * 800e12), m.rho)
    assert.are.equal("fp32_tflops", metrics.compute(row, {peaks = P, category = "Stencil/Conv"}).ceiling)
    assert.are.equal("fp32_tflops", metrics.compute(row, {peaks = P, category = "MatMul/Attn", ceiling = "vector"}).ceiling)
  end)

  it("picks the bound by the ridge point of the dtype's ceiling", function()
    -- intensity 100: under fp16's matrix ridge (200), over the fp32 vector ridge (12.5)
    local row = {ms = 1.0, flops = 1e9, bytes = 1e7, dtype = "fp16"}
    assert.are.equal("memory", metrics.compute(row, {peaks = P, category = "MatMul/Attn"}).bound)
    assert.are.equal("compute", metrics.compute(row, {peaks = P, category = "Reduction/Norm"}).bound)
    near(1e9 / (1e-3 * 50e12), metrics.compute(row, {peaks = P, category = "Reduction/Norm"}).rho)
  end)

  it("treats zero flops as memory-bound and leaves what it cannot compute nil", function()
    local m = metrics.compute({ms = 1.0, flops = 0, bytes = 8e6, dtype = "fp32"}, {peaks = P, category = "Data Layout"})
    assert.are.equal("memory", m.bound)
    assert.is_nil(m.intensity)
    local no_peaks = metrics.compute({ms = 1.0, flops = 1, bytes = 1})
    assert.is_nil(no_peaks.rho)
    assert.is_not_nil(no_peaks.gbs)
    local no_time = metrics.compute({status = "failed", flops = 1, bytes = 1}, {peaks = P})
    assert.is_nil(no_time.latency_ms)
    assert.is_nil(no_time.rho)
  end)

  it("computes speedup over the baseline and E_lib against the library", function()
    local m = metrics.compute({ms = 0.5, baseline_ms = 1.0, lib_ms = 0.4})
    assert.are.equal(2.0, m.speedup)
    assert.are.equal(0.8, m.elib)
    local m2 = metrics.compute({ms = 0.5, t_baseline = 0.25, t_lib = 0.5})
    assert.are.equal(0.5, m2.speedup)
    assert.are.equal(1.0, m2.elib)
  end)
end)

describe("metrics.compute: essential work and the memory ceiling (issue 19)", function()
  -- A file of the new format: the copy kernel 4000 GB/s (TileBench's ceiling), the best mix
  -- 4400, L2 50 MB and a size ladder that peaks at 2 x L2 (write-back L2).
  local function new_peaks(extra)
    local t = {gpu = "N", device = {name = "n", l2_bytes = 50e6}, bandwidth_gbs = 4000, fp32_tflops = 50,
               matrix_tflops = {fp16 = 800}, memory_ceiling_gbs = 4400,
               bandwidth_mixes = {read = 4400, read2_write1 = 4300, copy = 4000, driver_copy = 3900},
               bandwidth_by_size = {{bytes = 25e6, gbs = 3000}, {bytes = 50e6, gbs = 5000},
                                    {bytes = 100e6, gbs = 6000}, {bytes = 200e6, gbs = 4500}}}
    for k, v in pairs(extra or {}) do t[k] = v end
    return peaks.validate(t, "new")
  end

  it("computes rho on the essential bytes and rho_tilebench on TileBench's against the copy rate", function()
    -- rmsnorm-like: TileBench counts 3e9 bytes, 2e9 are essential; far past the L2
    local m = metrics.compute({ms = 1.0, flops = 1e6, bytes = 3e9, essential_bytes = 2e9, dtype = "fp32"},
      {peaks = new_peaks(), category = "Reduction/Norm"})
    near(2e9 / (1e-3 * 4400e9), m.rho)
    near(3e9 / (1e-3 * 4000e9), m.rho_tilebench)
    assert.are.equal(4400, m.ceiling_gbs)
    near(40, m.l2_ratio)
    assert.are.equal(0, m.l2_near)
    near(3e9 / 1e-3 / 1e9, m.gbs) -- the bandwidth column keeps TileBench's bytes
    near(1e6 / 2e9, m.intensity)
  end)

  it("without an essential formula both rhos use the same bytes; an old file has one ceiling", function()
    local m = metrics.compute({ms = 1.0, flops = 1e6, bytes = 4e6, dtype = "fp16"}, {peaks = P, category = "Point-wise"})
    near(4e6 / (1e-3 * 4000e9), m.rho)
    near(m.rho, m.rho_tilebench)
    assert.is_nil(m.l2_ratio) -- the fixture names no L2
  end)

  it("measures a case near the L2 against the rate at its working set where that is higher", function()
    local p = new_peaks()
    local at = function(ws) return metrics.compute({ms = 1.0, bytes = ws, dtype = "fp32"}, {peaks = p, category = "Point-wise"}) end
    local m = at(100e6)                       -- 2 x L2: the ladder's 6000
    assert.are.equal(1, m.l2_near)
    assert.are.equal(6000, m.ceiling_gbs)
    near(100e6 / (1e-3 * 6000e9), m.rho)
    near(100e6 / (1e-3 * 4000e9), m.rho_tilebench)
    local f = math.log(1.5) / math.log(2)     -- 150 MB: between 100 MB (6000) and 200 MB (4500)
    near(6000 + f * (4500 - 6000), at(150e6).ceiling_gbs, 1e-9)
    assert.are.equal(4400, at(10e6).ceiling_gbs) -- the ladder is under the DRAM ceiling there
    assert.are.equal(1, at(10e6).l2_near)
    local far = at(400e6)                     -- 8 x L2: not near, the DRAM ceiling
    assert.are.equal(0, far.l2_near)
    assert.are.equal(4400, far.ceiling_gbs)
  end)

  it("marks a case near the L2 and keeps the DRAM ceiling when the file has no ladder", function()
    local p = peaks.validate({gpu = "O", device = {name = "o", l2_bytes = 50e6}, bandwidth_gbs = 4000,
                              fp32_tflops = 50, matrix_tflops = {}}, "old")
    local m = metrics.compute({ms = 1.0, bytes = 100e6, dtype = "fp32"}, {peaks = p, category = "Point-wise"})
    assert.are.equal(1, m.l2_near)
    near(2, m.l2_ratio)
    assert.are.equal(4000, m.ceiling_gbs)
    near(100e6 / (1e-3 * 4000e9), m.rho)
  end)

  it("leaves ceiling_gbs out for a compute-bound case; its two rhos agree", function()
    local flops, bytes = 2 * 4096 ^ 3, 3 * 4096 * 4096 * 2
    local m = metrics.compute({ms = 0.25, flops = flops, bytes = bytes, dtype = "fp16", category = "MatMul/Attn"},
      {peaks = new_peaks()})
    assert.are.equal("compute", m.bound)
    assert.is_nil(m.ceiling_gbs)
    near(m.rho, m.rho_tilebench)
  end)

  it("measures a compute-bound case on its essential flops; rho_tilebench on TileBench's", function()
    -- causal attention: TileBench counts 4e12 flops, the unmasked half is 2e12; 10 ms at 800 TFLOP/s
    local m = metrics.compute({ms = 10, flops = 4e12, essential_flops = 2e12, bytes = 1e8, dtype = "fp16",
                               category = "MatMul/Attn"}, {peaks = new_peaks()})
    assert.are.equal("compute", m.bound)
    near(2e12 / (10e-3 * 800e12), m.rho)
    near(4e12 / (10e-3 * 800e12), m.rho_tilebench)
    near(2e12 / 1e8, m.intensity)
    near(4e12 / 10e-3 / 1e12, m.tflops) -- the TFLOP/s column keeps TileBench's count
  end)

  it("refuses to register a metric under a built-in column's name", function()
    assert.has_error(function() metrics.register("rho_tilebench", function() end) end,
      'metrics.register: "rho_tilebench" is a built-in metric')
  end)
end)

describe("metrics.register", function()
  after_each(function() metrics.unregister("per_sm_gbs"); metrics.unregister("boom") end)

  it("adds a metric computed from the row, the context and the built-in metrics", function()
    metrics.register("per_sm_gbs", function(row, ctx, m) return m.gbs and m.gbs / ctx.sms end)
    local m = metrics.compute({ms = 1.0, bytes = 132e6}, {sms = 132})
    near(1.0, m.per_sm_gbs)
    assert.are.same({"per_sm_gbs"}, metrics.registered())
    metrics.unregister("per_sm_gbs")
    assert.is_nil(metrics.compute({ms = 1.0, bytes = 132e6}, {sms = 132}).per_sm_gbs)
  end)

  it("refuses built-in names and non-functions, and names a failing metric", function()
    assert.has_error(function() metrics.register("rho", function() end) end)
    assert.has_error(function() metrics.register("x", 3) end)
    assert.has_error(function() metrics.register("bad name", function() end) end)
    metrics.register("boom", function() error("no such field") end)
    local ok, err = pcall(metrics.compute, {ms = 1})
    assert.is_false(ok)
    assert.matches('^metric "boom": .*no such field', err)
  end)
end)

describe("metrics.gate", function()
  it("marks a verified case under a gate slow, with the reason", function()
    local row = {status = "ok", rho = 0.42, elib = 0.95}
    assert.are.same({"slow", "rho 0.42 < gate 0.8"}, {metrics.gate(row, {rho = 0.8, elib = 0.9})})
    assert.are.equal("slow", row.status)
    assert.are.equal("rho 0.42 < gate 0.8", row.reason)
    local both = {status = "ok", rho = 0.5, elib = 0.6}
    assert.are.same({"slow", "rho 0.5 < gate 0.8; elib 0.6 < gate 0.7"}, {metrics.gate(both, {rho = 0.8, elib = 0.7})})
  end)

  it("leaves passing, unverified and unmeasurable rows unchanged", function()
    assert.are.same({"ok"}, {metrics.gate({status = "ok", rho = 0.9}, {rho = 0.8})})
    assert.are.same({"wrong", "3 mismatches"},
      {metrics.gate({status = "wrong", reason = "3 mismatches", rho = 0.1}, {rho = 0.8})})
    assert.are.same({"ok"}, {metrics.gate({status = "ok"}, {rho = 0.8, elib = 0.7})})
    assert.are.same({"ok"}, {metrics.gate({status = "ok", rho = 0.1}, nil)})
  end)
end)
