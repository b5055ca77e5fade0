-- report_spec.lua: the HTML report is self-contained and has every chart with its series:
-- latency and bandwidth per operator and dtype, roofline with ceilings, speedup per category,
-- and the slow/failed table.
local report = require("tilebench.report")
local resultset = require("tilebench.resultset")
local peaks = require("tilebench.peaks")
local metrics = require("tilebench.metrics")

local FIX = TILEBENCH_HOME .. "/tests/fixtures/resultsets"

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

local function raw_of(run) return resultset.load(FIX .. "/H200-test/runs/" .. run) end

describe("report.ceilings", function()
  it("is peaks.lua's reader: fp32_tflops is the vector rate, fast accumulation is left out", function()
    local p = peaks.validate({gpu = "x", device = {name = "x"}, bandwidth_gbs = 4270, fp32_tflops = 60,
      matrix_tflops = {fp16 = 780, fp8_e4m3 = 1500, fp8_e4m3_fast_accum = 1560}})
    local c = report.ceilings(p)
    assert.equals(4270e9, c.bandwidth)
    assert.equals(3, #c.compute)
    assert.equals("matrix fp8_e4m3", c.compute[1].label)
    assert.equals(1500e12, c.compute[1].rate)
    assert.equals("fp32 vector", c.compute[3].label)
    assert.equals(60e12, c.compute[3].rate)
  end)
  it("is nil without peaks", function()
    assert.is_nil(report.ceilings(nil))
  end)
end)

describe("report.load_peaks", function()
  it("loads through peaks.lua: a file off its schema is an error, not a guess", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write('{"gpu": "x", "device": {"name": "x"}, "bandwidth": {"gb_s": 4270}, "vector_tflops": {"fp32": 67}}')
    f:close()
    local ok, err = pcall(report.load_peaks, nil, path)
    os.remove(path)
    assert.is_false(ok)
    assert.matches("bandwidth_gbs must be a positive number", err, 1, true)
  end)
  it("gives no ceilings for a label without a peaks file", function()
    assert.is_nil(report.load_peaks("no-such-gpu-label"))
  end)
end)

describe("report.build on the fixtures", function()
  local fixture_peaks = report.load_peaks(nil, TILEBENCH_HOME .. "/tests/fixtures/peaks/H200-test.json")
  local html, n = report.build{tables = resultset.load(FIX .. "/H200-test/csv"), label = "H200-test",
    source = "fixtures", raw = raw_of("run-a"), peaks = fixture_peaks,
    anchors = {tables = resultset.load(FIX .. "/tilebench-style"), label = "style", source = "style"},
    generated = "now"}

  it("is one self-contained page: no scripts, no external resources", function()
    assert.truthy(html:find("^<!DOCTYPE html>"))
    assert.falsy(html:lower():find("<script", 1, true))
    assert.falsy(html:find("<link", 1, true))
    assert.falsy(html:find("@import", 1, true))
    assert.falsy(html:find("url%("))
    for url in html:gmatch('"(https?://[^"]*)"') do assert.equals("http://www.w3.org/2000/svg", url) end
  end)
  it("has a latency chart per operator, mode and dtype, with a line per implementation", function()
    -- vector_add default 2 dtypes, softmax 2, vector_add autotune 1
    assert.equals(5, count(html, '<svg [^>]-data%-chart="latency"'))
    -- vector_add default fp16: lib, cuda, tile (tile has 3 of 4 points) + 4 TileBench lines
    local chart = html:match('<svg [^>]-data%-chart="latency"[^>]-data%-dtype="fp16"[^>]-data%-mode="default"[^>]-data%-operator="vector_add".-</svg>')
    assert.truthy(chart)
    assert.equals(7, count(chart, '<path class="series"'))
    assert.equals(1, count(chart, 'data%-series="tile"[^>]*data%-source="ours"'))
    assert.equals(4, count(chart, '<path class="series"[^>]-data%-source="anchor"'))
  end)
  it("has bandwidth charts where the raw rows give the bytes, with the peak as a ceiling", function()
    assert.equals(5, count(html, '<svg [^>]-data%-chart="bandwidth"'))
    local chart = html:match('<svg [^>]-data%-chart="bandwidth"[^>]-data%-operator="softmax".-</svg>')
    assert.equals(2, count(chart, '<path class="series"'))
    assert.equals(1, count(chart, 'class="ceiling"'))
    assert.truthy(chart:find("peak 4270 GB/s", 1, true))
  end)
  it("has a roofline per mode with every timed case and the memory roof", function()
    local roof = html:match('<svg [^>]-data%-chart="roofline"[^>]-data%-mode="default".-</svg>')
    assert.truthy(roof)
    assert.equals(3, count(roof, '<g class="series"'))
    -- timed cases of mode default: vector_add 8 + 7 + 6, softmax 8 + 7
    assert.equals(36, count(roof, '<circle class="point"'))
    assert.equals(1, count(roof, 'data%-ceiling="4270 GB/s"'))
  end)
  it("puts each case on the roofline at the rho metrics.lua records for it", function()
    -- softmax fp16 M=4096,N=512, implementation lib: time from its CSV, work from raw/softmax.json
    local roof = html:match('<svg [^>]-data%-chart="roofline"[^>]-data%-mode="default".-</svg>')
    local tip = roof:match("<title>(softmax fp16 [^<]-M=4096[^<]-N=512[^<]- lib:[^<]*)</title>")
    assert.truthy(tip, "no roofline point for the case")
    local row = {ms = 0.00688361, flops = 10485760, bytes = 8388608, dtype = "fp16", category = "Reduction/Norm"}
    local rho = metrics.compute(row, {peaks = fixture_peaks}).rho
    assert.near(rho, report.roofline_fraction(fixture_peaks, row.flops, row.bytes, row.ms, "fp16", "Reduction/Norm"), 1e-12)
    assert.truthy(tip:find((", rho %.3f"):format(rho), 1, true), tip)
    -- a compute-bound case takes its dtype's matrix roof, as rho does
    local mm = {ms = 1.0, flops = 2 * 4096 ^ 3, bytes = 3 * 4096 ^ 2 * 2, dtype = "fp16", category = "MatMul/Attn"}
    local m = metrics.compute(mm, {peaks = fixture_peaks})
    local frac, r = report.roofline_fraction(fixture_peaks, mm.flops, mm.bytes, mm.ms, "fp16", "MatMul/Attn")
    assert.equals("compute", r.bound)
    assert.equals(m.rho, frac)
    assert.near(mm.flops / 1e-3 / 780e12, frac, 1e-12)
  end)
  it("has speedup bars per category without the baseline", function()
    local bars = html:match('<svg [^>]-data%-chart="speedup"[^>]-data%-mode="default".-</svg>')
    assert.truthy(bars)
    assert.equals(0, count(bars, 'data%-series="lib"'))
    assert.equals(2, count(bars, '<rect class="bar"[^>]-data%-series="cuda"'))   -- Point-wise, Reduction/Norm
    assert.equals(1, count(bars, '<rect class="bar"[^>]-data%-series="tile"'))
  end)
  it("lists the slow and failed cases with their reasons", function()
    assert.truthy(html:find("Slow and failed cases (5)", 1, true))
    assert.truthy(html:find("CUDA_ERROR_ILLEGAL_ADDRESS", 1, true))
    assert.truthy(html:find("case exceeded the 60 s limit", 1, true))
  end)
  it("counts what it drew", function()
    assert.equals(3, n.operators)
    assert.equals(2 + 2 + 5 + 5, n.charts)
  end)
end)

describe("report.build without work or peaks", function()
  it("says which operators have no work formula and has no bandwidth chart", function()
    local tables = resultset.load(FIX .. "/tilebench-style")
    tables[1].operator = "fixture_without_folder"     -- never an operator folder
    local html = report.build{tables = tables, label = "x", source = "x"}
    assert.equals(0, count(html, 'data%-chart="bandwidth"'))
    assert.truthy(html:find("Without a work formula", 1, true))
    assert.truthy(html:find("No ceilings", 1, true))
  end)
end)

describe("report.build with clock and power columns", function()
  it("shows each implementation's median SM clock and capped share apart from campaign metrics", function()
    local util = require("tilebench.util")
    local dir = os.tmpname()
    os.remove(dir)
    util.mkdir_p(dir)
    require("tilebench.csv").write_results(dir .. "/softmax_default.csv", {
      {id = "M=4096;N=512", dtype = "fp16", results = {
        lib = {ms = 0.1, status = "ok", extra = {sm_clock_mhz = 1430, cap_fraction = 0.75}},
        cuda = {ms = 0.2, status = "ok", extra = {sm_clock_mhz = 1980}}}},
    }, {"lib", "cuda"}, {extra = {"cap_fraction", "sm_clock_mhz"}})
    local html = report.build{tables = resultset.load(dir), label = "x", source = "x"}
    os.remove(dir .. "/softmax_default.csv")
    os.remove(dir)
    assert.truthy(html:find("<h4>Clock and power", 1, true))
    assert.falsy(html:find("Campaign metrics", 1, true))
    assert.truthy(html:find("1430", 1, true))
    assert.truthy(html:find("0.75", 1, true))
  end)
end)

describe("report.build with issue 19's rho columns", function()
  it("shows rho_tilebench, the ceiling and the L2 columns in their own table, not as campaign metrics", function()
    local util = require("tilebench.util")
    local dir = os.tmpname()
    os.remove(dir)
    util.mkdir_p(dir)
    require("tilebench.csv").write_results(dir .. "/rmsnorm_default.csv", {
      {id = "K=6144", dtype = "fp32", results = {
        cuda = {ms = 0.1, rho = 0.95, status = "ok",
                extra = {rho_tilebench = 1.4252, ceiling_gbs = 4400, l2_ratio = 1.6, l2_near = 1}}}},
    }, {"cuda"}, {extra = {"ceiling_gbs", "l2_near", "l2_ratio", "rho_tilebench"}})
    local html = report.build{tables = resultset.load(dir), label = "x", source = "x"}
    os.remove(dir .. "/rmsnorm_default.csv")
    os.remove(dir)
    assert.truthy(html:find("<h4>rho beside TileBench's", 1, true))
    assert.falsy(html:find("Campaign metrics", 1, true))
    assert.truthy(html:find("1.425", 1, true))
    assert.truthy(html:find("4400", 1, true))
  end)
end)
