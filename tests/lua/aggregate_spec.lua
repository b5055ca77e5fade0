-- aggregate_spec.lua: reading result tables (ours, TileBench's, raw JSON) and the aggregate:
-- matched geomeans, speedups, suite, categories, wins, rho share, slow/failed list. Expected
-- numbers were computed independently from the fixture CSVs.
local resultset = require("tilebench.resultset")
local aggregate = require("tilebench.aggregate")
local lfs = require("lfs")

local FIX = TILEBENCH_HOME .. "/tests/fixtures/resultsets"
local ANCHORS = "/work/shared/anchors/tilebench-GH200"

local function close(a, b, tol) return a ~= nil and math.abs(a - b) <= (tol or 1e-6) * math.abs(b) end
local function find(list, fields)
  for _, x in ipairs(list) do
    local ok = true
    for k, v in pairs(fields) do if x[k] ~= v then ok = false end end
    if ok then return x end
  end
end

describe("resultset", function()
  it("normalises params and dtypes so ours and TileBench's line up", function()
    assert.equals("cols=512,rows=512", (resultset.normalize_params("cols=512, rows=512")))
    assert.equals("M=4096,N=512", (resultset.normalize_params("N=512;M=4096")))
    assert.equals("M=4096,N=512", (resultset.normalize_params({M = 4096, N = 512})))
    assert.equals("n=1048576", (resultset.normalize_params("n=1.048576e6")))
    assert.equals("fp32", resultset.normalize_dtype("float32"))
    assert.equals("bf16", resultset.normalize_dtype("bfloat16"))
  end)
  it("splits operator and mode from the file name", function()
    assert.same({"matmul_fp32_fp16_fp8", "autotune"}, {resultset.split_name("/x/matmul_fp32_fp16_fp8_autotune.csv")})
    assert.same({"vector_add", "default"}, {resultset.split_name("vector_add_default.csv")})
  end)
  it("reads our CSV: statuses, reasons, times only for ok/slow, the baseline", function()
    local t = resultset.read_csv(FIX .. "/H200-test/csv/vector_add_default.csv")
    assert.equals("vector_add", t.operator)
    assert.equals("default", t.mode)
    assert.same({"lib", "cuda", "tile"}, t.impls)
    assert.equals("lib", t.baseline)
    assert.equals(8, #t.cases)
    local c = t.index["n=2097152|fp16"]
    assert.equals("timeout", c.by_impl.tile.status)
    assert.is_nil(c.by_impl.tile.ms)
    local s = t.index["n=1048576|fp16"].by_impl.cuda
    assert.equals("slow", s.status)
    assert.truthy(s.ms > 0)
    assert.equals("12 of 8388608 elements differ, max abs err 0.5 at [17]", t.index["n=8388608|fp32"].by_impl.tile.reason)
  end)
  it("reads TileBench's CSV with a BOM, CRLF and float32: torch is the baseline, times are ok", function()
    local t = resultset.read_csv(FIX .. "/tilebench-style/vector_add_default.csv")
    assert.same({"torch", "triton", "cutile", "tilelang"}, t.impls)
    assert.equals("torch", t.baseline)
    local c = t.index["n=1048576|fp32"]
    assert.truthy(c, "float32 must read as fp32")
    assert.equals(0.0059, c.by_impl.torch.ms)
    assert.equals("ok", c.by_impl.torch.status)
    -- 4 printed decimals: +-0.00005 ms
    assert.truthy(close(c.by_impl.torch.resolution, 0.00005 / 0.0059))
  end)
  it("reads raw run JSON rows with samples, noise and work", function()
    local ts = resultset.read_raw(FIX .. "/H200-test/runs/run-a/raw/vector_add.json")
    assert.equals(2, #ts)                               -- default and autotune rows
    local t = ts[1].mode == "default" and ts[1] or ts[2]
    local e = t.index["n=4194304|fp32"].by_impl.cuda
    assert.equals(10, #e.samples)
    assert.truthy(e.noise > 0 and e.noise < 0.02)
    assert.equals(4194304 * 4 * 3, e.bytes)
    assert.equals("failed", t.index["n=2097152|fp32"].by_impl.cuda.status)
  end)
  it("loads a results dir, a run dir and rejects what holds no results", function()
    assert.equals(3, #resultset.load(FIX .. "/H200-test"))
    assert.equals(3, #resultset.load(FIX .. "/H200-test/runs/run-a"))
    assert.equals(1, #resultset.load(FIX .. "/H200-test", {mode = "autotune"}))
    assert.has_error(function() resultset.load(FIX .. "/nope") end)
    assert.has_error(function() resultset.load(TILEBENCH_HOME .. "/docs") end)
  end)
end)

describe("aggregate on the fixtures", function()
  local r = aggregate.compute(resultset.load(FIX .. "/H200-test/csv"))
  it("per operator: geomean of per-case speedups over matched cases only", function()
    local x = find(r.per_operator, {operator = "vector_add", mode = "default", impl = "cuda"})
    assert.equals(7, x.n)                               -- the failed case does not count
    assert.truthy(close(x.speedup, 1.0574768253346187, 1e-4))
    x = find(r.per_operator, {operator = "vector_add", mode = "default", impl = "tile"})
    assert.equals(6, x.n)
    assert.truthy(close(x.speedup, 0.9008364845360864, 1e-4))
    assert.equals(1, find(r.per_operator, {operator = "softmax", impl = "lib"}).speedup)
  end)
  it("per dtype: geomean times", function()
    local x = find(r.per_dtype, {operator = "vector_add", mode = "default", dtype = "fp16", impl = "cuda"})
    assert.equals(4, x.n)
    assert.truthy(close(x.geomean_ms, 0.008200140118607787, 1e-4))
  end)
  it("suite: operators weighted equally", function()
    local s = find(r.suite, {mode = "default", impl = "cuda"})
    assert.equals(2, s.operators)
    assert.truthy(close(s.speedup, 1.1212764939949011, 1e-4))
    assert.equals(14, s.wins)
    assert.equals(15, s.contested)
    assert.equals(1, s.rho_at_least)
    assert.equals(14, s.rho_cases)
  end)
  it("categories from OPERATORS.md", function()
    local c = find(r.categories, {mode = "default", category = "Reduction/Norm", impl = "cuda"})
    assert.equals(1, c.operators)
    assert.truthy(close(c.speedup, 1.188925322867157, 1e-4))
  end)
  it("lists every case that is not ok, with its reason", function()
    assert.equals(5, #r.problems)
    local p = find(r.problems, {operator = "softmax", impl = "cuda"})
    assert.equals("oom", p.status)
    assert.truthy(p.reason:find("OUT_OF_MEMORY", 1, true))
  end)
  it("markdown and CSV files", function()
    local dir = os.tmpname()
    os.remove(dir)
    local written, md = aggregate.write(r, dir, "Aggregate: test")
    assert.equals(6, #written)
    assert.truthy(md:find("## Suite, mode default", 1, true))
    assert.truthy(md:find("| cuda | 2 | 1.12x | 14 / 15 |", 1, true))
    assert.truthy(md:find("## Slow and failed cases (5)", 1, true))
    local t = require("tilebench.csv").read(dir .. "/operators.csv")
    assert.equals(7, #t.rows)
    for _, p in ipairs(written) do os.remove(p) end
    lfs.rmdir(dir)
  end)
end)

describe("aggregate on TileBench's GH200 CSVs", function()
  if not lfs.attributes(ANCHORS, "mode") then
    pending("anchors absent: " .. ANCHORS)
    return
  end
  local r = aggregate.compute(resultset.load(ANCHORS, {mode = "default"}))
  it("45 operators against torch, 2200 cases", function()
    assert.equals(45, #r.operators)
    local s = find(r.suite, {impl = "triton"})
    assert.equals(45, s.operators)
    assert.equals(2200, s.contested)
    assert.truthy(close(s.speedup, 1.5502479308836794, 1e-6))
    assert.equals(0, #r.problems)
  end)
  it("every category has its operators", function()
    local n = 0
    for _, c in ipairs(r.categories) do if c.impl == "torch" then n = n + c.operators end end
    assert.equals(45, n)
  end)
end)
