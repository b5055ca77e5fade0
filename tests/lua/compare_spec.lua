-- compare_spec.lua: FAST/SLOW/SAME per case: the Mann-Whitney rule on raw samples, the noise
-- rule otherwise, N/A without a time, and the summary counts and geomean ratio.
local compare = require("tilebench.compare")
local resultset = require("tilebench.resultset")

local FIX = TILEBENCH_HOME .. "/tests/fixtures/resultsets"

local function shifted(base, factor)
  local out = {}
  for i, x in ipairs(base) do out[i] = x * factor end
  return out
end
local BASE = {1.00, 1.01, 0.99, 1.005, 0.995, 1.002, 0.998, 1.007, 0.993, 1.0}

describe("compare.decide", function()
  it("Mann-Whitney: a clear shift beyond 2 % is FAST or SLOW", function()
    local a = {ms = 1.0, samples = BASE}
    local v, d = compare.decide(a, {ms = 0.9, samples = shifted(BASE, 0.9)})
    assert.equals("FAST", v)
    assert.equals("mann-whitney", d.method)
    assert.truthy(d.p < 0.05)
    assert.equals("SLOW", (compare.decide(a, {ms = 1.1, samples = shifted(BASE, 1.1)})))
  end)
  it("Mann-Whitney: significant but under 2 % is SAME", function()
    local v, d = compare.decide({ms = 1.0, samples = BASE}, {ms = 1.015, samples = shifted(BASE, 1.015)})
    assert.equals("SAME", v)
    assert.truthy(d.p < 0.05)
  end)
  it("Mann-Whitney: a big but noisy difference is SAME", function()
    local noisy_a = {1, 2, 3, 4, 5, 6}
    local noisy_b = {1.5, 2.5, 3.5, 4.5, 5.5, 0.5}
    local v, d = compare.decide({ms = 3.5, samples = noisy_a}, {ms = 3.0, samples = noisy_b})
    assert.equals("SAME", v)
    assert.truthy(d.p >= 0.05)
  end)
  it("too few samples fall back to the noise rule", function()
    local v, d = compare.decide({ms = 1, samples = {1, 1, 1}, noise = 0.01}, {ms = 1.04, samples = {1.04, 1.04, 1.04}, noise = 0.01})
    assert.equals("noise", d.method)
    assert.equals("SAME", v)                          -- 4 % < max(2 * 1.4 %, 5 %)
  end)
  it("noise rule: |ratio - 1| > max(2 * noise, 5 %), each side's noise with the run-to-run noise added", function()
    assert.equals("FAST", (compare.decide({ms = 1}, {ms = 0.94})))
    assert.equals("SAME", (compare.decide({ms = 1}, {ms = 0.96})))
    -- 5 % noise on each side, no run-to-run noise: threshold 2 * sqrt(2) * 5 % = 14.1 %
    local v, d = compare.decide({ms = 1, noise = 0.05}, {ms = 1.12, noise = 0.05}, {run_noise = 0})
    assert.equals("SAME", v)
    assert.truthy(math.abs(d.threshold - 2 * math.sqrt(2) * 0.05) < 1e-12)
    assert.equals("SLOW", (compare.decide({ms = 1, noise = 0.05}, {ms = 1.15, noise = 0.05})))
    -- the default run-to-run noise (1 %) is added to each side
    local _, d2 = compare.decide({ms = 1, noise = 0.05}, {ms = 1.12, noise = 0.05})
    assert.truthy(math.abs(d2.threshold - 2 * math.sqrt(2 * (0.05 ^ 2 + 0.01 ^ 2))) < 1e-12)
  end)

  it("the minimum effect comes from the run-to-run noise: K times the noise of log(ratio)", function()
    -- a significant 3 % shift (U test p ~ 1e-4) is SAME under the default 1 % run-to-run noise
    -- (min effect 4 * sqrt(2) * 1 % = 5.7 %) and SLOW where A/A runs measured 0.3 %
    local a, b = {ms = 1.0, samples = BASE}, {ms = 1.03, samples = shifted(BASE, 1.03)}
    local v, d = compare.decide(a, b)
    assert.equals("SAME", v)
    assert.truthy(d.p < 1e-3)
    assert.truthy(d.threshold > 0.056 and d.threshold < 0.058)
    local v2, d2 = compare.decide(a, b, {run_noise = 0.003})
    assert.equals("SLOW", v2)
    assert.truthy(d2.threshold < 0.03)
    assert.equals(0.003, d2.run_noise)
  end)

  it("reports the effect with a 95 % interval around the ratio", function()
    local _, d = compare.decide({ms = 1.0, samples = BASE}, {ms = 1.05, samples = shifted(BASE, 1.05)}, {run_noise = 0.005})
    assert.truthy(d.ci_low < 1.05 and d.ci_high > 1.05)
    assert.truthy(math.abs(math.log(d.ci_high / 1.05) - 1.959964 * d.sd) < 1e-9)
    assert.truthy(d.ci_low > 1)                       -- the interval excludes no change
    assert.equals("+5.0 % [95 % CI +3.5, +6.5]", compare.format_effect({ratio = 1.05, ci_low = 1.035, ci_high = 1.065}))
  end)
  it("noise rule uses a rounded CSV's resolution when it is larger", function()
    local _, d = compare.decide({ms = 0.0041, resolution = 0.0122}, {ms = 0.0040, resolution = 0.0125})
    assert.truthy(d.threshold == 0.05)
    local _, d2 = compare.decide({ms = 0.0005, resolution = 0.1}, {ms = 0.0004, resolution = 0.125})
    assert.truthy(d2.threshold > 0.3)
  end)
end)

describe("compare.compare on the fixture runs", function()
  local a = resultset.load(FIX .. "/H200-test/runs/run-a")
  local b = resultset.load(FIX .. "/H200-test/runs/run-b")
  local res = compare.compare(a, b)
  it("matches tables by operator and mode", function()
    assert.equals(1, res.tables_matched)
    assert.same({"softmax_default", "vector_add_autotune"}, res.only_a)
  end)
  it("finds the planted changes and nothing else", function()
    local c = res.by_impl.cuda
    assert.equals(1, c.FAST)     -- fp16 n=4194304: 10 % faster
    assert.equals(1, c.SLOW)     -- fp32 n=1048576: 12 % slower
    assert.equals(5, c.SAME)     -- 0 %, 0.5 %, -1 % shifts
    assert.equals(1, c["N/A"])   -- failed in both
    assert.equals(0, res.by_impl.lib.FAST + res.by_impl.lib.SLOW)
    assert.equals(2, res.by_impl.tile["N/A"])
    for _, r in ipairs(res.rows) do
      if r.verdict ~= "N/A" then assert.equals("mann-whitney", r.method) end
    end
  end)
  it("summarises counts and the geomean ratio", function()
    assert.equals(1, res.totals.FAST)
    assert.equals(1, res.totals.SLOW)
    assert.equals(19, res.totals.SAME)
    assert.truthy(math.abs(res.geomean - 1) < 0.01)
    local text = compare.format(res)
    assert.truthy(text:find("FAST  vector_add", 1, true))
    assert.truthy(text:find("SLOW  vector_add", 1, true))
    assert.falsy(text:find("SAME  vector_add", 1, true))   -- only changes unless --all
  end)
end)

describe("compare with TileBench's CSVs", function()
  it("matches a CRLF/float32 CSV case by case with the published one", function()
    local path = "/work/shared/anchors/tilebench-GH200/vector_add_default.csv"
    if not io.open(path) then pending("anchors absent") return end
    local res = compare.compare(resultset.load(FIX .. "/tilebench-style"), resultset.load(path))
    assert.equals(16, #res.rows)                 -- 4 cases x 4 implementations
    assert.equals(76, res.cases_only_b)
    assert.equals(0, res.totals["N/A"])
  end)
  it("pairs differently named implementations with map", function()
    local ours = resultset.load(FIX .. "/H200-test/csv/vector_add_default.csv")
    local theirs = resultset.load(FIX .. "/tilebench-style")
    local res = compare.compare(ours, theirs, {map = {lib = "torch"}})
    assert.same({"lib/torch"}, res.impl_order)
    assert.equals(4, #res.rows)                 -- the 4 cases both have
  end)
end)

describe("compare: the run-to-run noise file", function()
  local function rows(ratios, op)
    local out = {}
    for i, r in ipairs(ratios) do
      out[i] = {operator = op or "softmax", mode = "default", dtype = "fp16", impl = "cuda", ratio = r}
    end
    return {rows = out}
  end

  it("measures r from an A/A pair: the root mean square of log(ratio) over sqrt(2), per group and over all", function()
    local res = rows({1.01, 0.99, 1.01, 0.99, 1.01})
    for _, row in ipairs(rows({1.002, 0.998, 1.002, 0.998, 1.002}, "argmax").rows) do res.rows[#res.rows + 1] = row end
    res.rows[#res.rows + 1] = {operator = "x", mode = "default", dtype = "fp16", impl = "cuda"} -- N/A: no ratio
    local n = compare.noise_from_pair(res, {gpu = "H200"})
    assert.equals("H200", n.gpu)
    assert.equals(10, n.cases)
    local g = n.groups["softmax/default/fp16/cuda"]
    assert.equals(5, g.cases)
    assert.truthy(math.abs(g.sigma - math.abs(math.log(1.01)) / math.sqrt(2)) < 2e-4)
    assert.truthy(n.groups["argmax/default/fp16/cuda"].sigma < 0.002)
    assert.truthy(n.sigma > n.groups["argmax/default/fp16/cuda"].sigma and n.sigma < g.sigma)
    assert.truthy(math.abs(n.max_abs_log_ratio + math.log(0.99)) < 1e-12)
    assert.has_error(function() compare.noise_from_pair({rows = {}}) end,
      "noise: the two runs have no case timed on both sides")
  end)

  it("takes a case's group, else the file's figure (a group needs MIN_GROUP cases)", function()
    local noise = {sigma = 0.004, groups = {["softmax/default/fp16/cuda"] = {sigma = 0.002, cases = 20},
                                            ["argmax/default/fp16/cuda"] = {sigma = 0.0001, cases = 2}}}
    assert.equals(0.002, compare.run_noise(noise, "softmax", "default", "fp16", "cuda"))
    assert.equals(0.004, compare.run_noise(noise, "argmax", "default", "fp16", "cuda"))
    assert.equals(0.004, compare.run_noise(noise, "relu", "default", "fp16", "cuda"))
    assert.is_nil(compare.run_noise(nil, "relu", "default", "fp16", "cuda"))
  end)

  it("checks a noise file, naming the file and the field", function()
    assert.has_error(function() compare.check_noise({sigma = "low"}, "n.json") end,
      "n.json: sigma must be a number in [0, 1], got low")
    assert.has_error(function() compare.check_noise({sigma = 0.01, groups = {x = {sigma = 2}}}, "n.json") end,
      "n.json: groups[x].sigma must be a number in [0, 1]")
    assert.has_error(function() compare.load_noise("/nonexistent/n.json") end,
      "no noise file /nonexistent/n.json (bench/compare/aa.sh writes it)")
  end)

  it("an A/A pair within its measured noise is SAME everywhere; a planted 5 % slowdown SLOW everywhere", function()
    -- 40 cases, each run's median off by up to +-0.6 % (r = 0.4 % recorded): A/A quiet, A/planted caught
    local quiet, caught = 0, 0
    for i = 1, 40 do
      local jitter = 1 + 0.006 * math.sin(i * 1.7)
      local a = {ms = 1.0, samples = BASE}
      local b = {ms = jitter, samples = shifted(BASE, jitter)}
      local c = {ms = 1.05 * jitter, samples = shifted(BASE, 1.05 * jitter)}
      if compare.decide(a, b, {run_noise = 0.004}) == "SAME" then quiet = quiet + 1 end
      if compare.decide(a, c, {run_noise = 0.004}) == "SLOW" then caught = caught + 1 end
    end
    assert.equals(40, quiet)
    assert.equals(40, caught)
  end)
end)
