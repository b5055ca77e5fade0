-- runner: error classification, autotune candidates, and the throttled-load fallback of
-- runner.measure (with a stand-in tb.timer, so no GPU is needed).
local runner = require("tilebench.runner")
local context = require("tilebench.context")
local errors = require("tb.error")

describe("runner.classify_error", function()
  -- Every class the backend can give (host/gpu/error.c) maps to the status a row records.
  local expected = {
    fault = { "failed", true }, timeout = { "timeout", true }, oom = { "oom", false },
    launch = { "failed", false }, compile = { "failed", false }, no_driver = { "failed", false },
    no_library = { "failed", false }, busy = { "failed", false }, other = { "failed", false },
  }
  it("maps every GPU error class to its row status", function()
    for class in pairs(errors.classes) do
      assert.is_not_nil(expected[class], "a new class needs a status here: " .. class)
    end
    for class, want in pairs(expected) do
      local e = errors.new(class, "cuX: SOME_ERROR (text)", "cuX")
      local status, reason, fatal = runner.classify_error(e)
      assert.equal(want[1], status, class)
      assert.equal(want[2], fatal, class)
      assert.equal("cuX: SOME_ERROR (text)", reason)
    end
  end)
  it("reads the class, not the message text", function()
    -- the text of a sticky fault, raised as a plain string: not classified as one
    local status, _, fatal = runner.classify_error("cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (...)")
    assert.equal("failed", status)
    assert.is_false(fatal)
    status = runner.classify_error(errors.new("timeout", "timeout: waiting for the plan's runs: ..."))
    assert.equal("timeout", status)
    status = runner.classify_error(errors.new("fault", "timeout: ... CUDA_ERROR_LAUNCH_TIMEOUT"))
    assert.equal("failed", status)
  end)
  it("records out of memory as oom, without losing the worker", function()
    local ok, e = pcall(context.oom_error, "out of memory: 1e15 bytes")
    assert.is_false(ok)
    local status, reason, fatal = runner.classify_error(e)
    assert.equal("oom", status)
    assert.equal("out of memory: 1e15 bytes", reason)
    assert.is_false(fatal)
  end)
  it("leaves ordinary errors non-fatal", function()
    local status, _, fatal = runner.classify_error("operator.lua:3: attempt to index a nil value")
    assert.equal("failed", status)
    assert.is_false(fatal)
  end)
end)

describe("runner.candidates", function()
  it("is the cartesian product of the space in sorted key order, defaults filling the rest", function()
    local c = runner.candidates({ default = { A = 1, B = 2, C = 9 }, space = { B = { 1, 2 }, A = { 3, 4 } } })
    assert.equal(4, #c)
    assert.same({ A = 3, B = 1, C = 9 }, c[1])
    assert.same({ A = 4, B = 2, C = 9 }, c[4])
    assert.equal("A=3,B=1,C=9", runner.config_string(c[1]))
  end)
end)

describe("runner.measure", function()
  local real
  before_each(function() real = package.loaded["tb.timer"] end)
  after_each(function() package.loaded["tb.timer"] = real end)

  it("re-measures a load that runs under the throttle threshold on every sample, and says so", function()
    local calls = {}
    package.loaded["tb.timer"] = { measure = function(plan, opts)
      calls.n = (calls.n or 0) + 1
      calls[calls.n] = opts.throttle_threshold
      if opts.throttle_threshold == nil then return nil, "all 10 samples ran under 90%", "throttled" end
      return { median = 1.5, sm_clock_mhz = 1710 }
    end }
    local row = {}
    local res = runner.measure("plan", { mode = "fixed" }, row)
    assert.equal(1.5, res.median)
    assert.is_nil(calls[1])      -- first with the caller's options
    assert.equal(0, calls[2])    -- then with the filter off
    assert.equal(2, calls.n)
    assert.matches("1710 MHz", row.clock_note)
  end)

  it("notes a load the timer found to sustain a clock under the threshold", function()
    package.loaded["tb.timer"] = { measure = function()
      return { median = 2.0, n = 40, under_threshold = 31, sm_clock_mhz = 1755, throttle_filter = "sustained" }
    end }
    local row = {}
    assert.equal(2.0, runner.measure("plan", {}, row).median)
    assert.matches("31 of 40 samples", row.clock_note)
    assert.matches("1755 MHz", row.clock_note)
    row = {}
    package.loaded["tb.timer"] = { measure = function() return { median = 1, throttle_filter = "on" } end }
    runner.measure("plan", {}, row)
    assert.is_nil(row.clock_note)
  end)

  it("raises other failures, oom as an oom error", function()
    package.loaded["tb.timer"] = { measure = function() return nil, "no memory for the eviction buffer", "oom" end }
    local ok, e = pcall(runner.measure, "plan", {})
    assert.is_false(ok)
    assert.equal("oom", (runner.classify_error(e)))
    package.loaded["tb.timer"] = { measure = function() return nil, "no sample kept within 15 s", "timeout" end }
    ok, e = pcall(runner.measure, "plan", {})
    assert.is_false(ok)
    assert.matches("no sample kept", tostring(e))
  end)
end)

describe("runner.case_of", function()
  local op = { name = "op", cases = {
    { dtype = "fp16", id = "n=1", params = { n = 1 } }, { dtype = "fp16", id = "n=2", params = { n = 2 } },
    { dtype = "fp32", id = "n=1", params = { n = 1 } }, { dtype = "fp32", id = "n=2", params = { n = 2 } } } }
  it("finds a planned item's case by its id, not its position", function()
    assert.equal(op.cases[4], runner.case_of(op, { dtype = "fp32", case_index = 1, case_id = "n=2" }))
    assert.equal(op.cases[2], runner.case_of(op, { dtype = "fp16", case_index = 2 })) -- no id: by index
  end)
  it("refuses an id the grid no longer has (operators changed since planning)", function()
    local ok, err = pcall(runner.case_of, op, { dtype = "fp32", case_index = 3, case_id = "n=1048576" })
    assert.is_false(ok)
    assert.matches("no case 'n=1048576' for dtype fp32: the operator's grid changed since the run was planned", err)
    ok, err = pcall(runner.case_of, op, { dtype = "fp32", case_index = 7 })
    assert.matches("no case 7 for dtype fp32 %(2 cases%)", err)
  end)
end)

describe("runner.search_candidates", function()
  local spec = { default = { A = 1, B = 1 }, space = { A = { 1, 2, 3 }, B = { 1, 2 } },
                 valid = function(_, cfg) return not (cfg.A == 3 and cfg.B == 2) end }
  local function attempt(log)
    return function(cand, topts)
      log[#log + 1] = { key = cand.key, mode = topts.mode, ["repeat"] = topts["repeat"], conditions = topts.conditions,
                        reading = topts.reading }
      return { median = cand.cfg.A * 10 + cand.cfg.B }
    end
  end
  it("excludes invalid candidates and the precompile phase's failures before any attempt", function()
    local log = {}
    local item = { autotune = { compile_failed = { cuda = { ["A=1,B=1"] = "x.cu(3): error: nope" } } } }
    local best, tried, rec = runner.search_candidates({}, spec, "cuda", item, { mode = "adaptive" }, attempt(log))
    assert.equal("A=1,B=2", best.key)
    local by = {}
    for _, t in ipairs(tried) do by[t.config] = t end
    assert.equal("skipped", by["A=3,B=2"].status)
    assert.equal("failed", by["A=1,B=1"].status)
    assert.equal("compile: x.cu(3): error: nope", by["A=1,B=1"].reason)
    for _, l in ipairs(log) do
      assert.is_true(l.key ~= "A=3,B=2" and l.key ~= "A=1,B=1", "attempted " .. l.key)
    end
    assert.equal(4, rec.screened)
    -- screens are short fixed measurements, the finalists get the case's protocol
    assert.equal("fixed", log[1].mode)
    assert.equal(runner.SCREEN.warmup, 2)
    assert.equal("sequential", log[1].conditions) -- no cool-down per screened candidate
    assert.equal("sustained", log[1].reading)
    assert.equal("adaptive", log[#log].mode)
  end)
  it("tries the item's seed first", function()
    local log = {}
    local item = { autotune = { seeds = { cuda = { "A=3,B=1" } } } }
    local _, tried = runner.search_candidates({}, spec, "cuda", item, {}, attempt(log))
    assert.equal("A=3,B=1", log[1].key)
    local first
    for _, t in ipairs(tried) do if t.status ~= "skipped" then first = first or t end end
    assert.is_true(first.seed)
  end)
  it("screens one of each set of candidates that launch alike (launch_key), a seed standing for its set", function()
    -- A = 1 and A = 2 run the same kernel (key by B alone when A < 3)
    local s2 = { default = spec.default, space = spec.space, valid = spec.valid,
                 launch_key = function(_, cfg) return cfg.A < 3 and ("k" .. cfg.B) or ("a3b" .. cfg.B) end }
    local log = {}
    local _, tried, rec = runner.search_candidates({}, s2, "cuda", {}, {}, attempt(log))
    local by = {}
    for _, t in ipairs(tried) do by[t.config] = t end
    assert.equal("skipped", by["A=2,B=1"].status)
    assert.equal("A=1,B=1", by["A=2,B=1"].same_as)
    assert.equal("A=1,B=2", by["A=2,B=2"].same_as)
    for _, l in ipairs(log) do assert.is_true(l.key:sub(1, 3) ~= "A=2", "attempted " .. l.key) end
    local distinct = {}
    for _, l in ipairs(log) do distinct[l.key] = true end
    assert.same({ ["A=1,B=1"] = true, ["A=1,B=2"] = true, ["A=3,B=1"] = true }, distinct)
    assert.equal(3, #rec.finalists) -- three candidates left: no screen, all timed fully
    -- the seed A=2,B=1 is kept in place of A=1,B=1, and tried first
    log = {}
    _, tried = runner.search_candidates({}, s2, "cuda", { autotune = { seeds = { cuda = { "A=2,B=1" } } } }, {}, attempt(log))
    by = {}
    for _, t in ipairs(tried) do by[t.config] = t end
    assert.equal("A=2,B=1", log[1].key)
    assert.equal("A=2,B=1", by["A=1,B=1"].same_as)
    -- a seed that is left out as a twin is tried as its representative
    log = {}
    runner.search_candidates({}, s2, "cuda", { autotune = { seeds = { cuda = { "A=2,B=2" } } } }, {},
      attempt(log))
    assert.equal("A=2,B=2", log[1].key)
  end)
  it("a default configuration the precompile phase failed is named by compile_failure", function()
    local item = { autotune = { compile_failed = { cuda = { ["A=1,B=1"] = "log" } } } }
    assert.equal("log", runner.compile_failure(item, "cuda", { B = 1, A = 1 }))
    assert.is_nil(runner.compile_failure(item, "cuda", { A = 2, B = 1 }))
    assert.is_nil(runner.compile_failure({}, "cuda", { A = 1, B = 1 }))
  end)
end)

-- conditions = "interleave": the verified plans of a case measured together (tb.timer.measure_group),
-- with a stand-in timer.
describe("runner.measure_interleaved", function()
  local real
  before_each(function() real = require("tb.timer") end)
  after_each(function() package.loaded["tb.timer"] = real end)
  local function pending(names)
    local p, ordered = {}, {}
    for i, n in ipairs(names) do
      p[i] = { row = { impl = n }, plan = "plan_" .. n }
      ordered[i] = p[i].row
    end
    return p, ordered
  end

  it("measures the plans in one group, in order, and fills each row with its clock and cap columns", function()
    local got
    package.loaded["tb.timer"] = { options = real.options, measure_group = function(plans, opts)
      got = { plans = plans, opts = opts }
      return { { median = 1.0, sm_clock_mhz = 1430, cap_fraction = 0.75, samples = { 1.0 } },
               { median = 2.0, sm_clock_mhz = 1980 } }
    end, measure = function() error("no sequential measure expected") end }
    local p, ordered = pending({ "lib", "cuda" })
    local reported = {}
    runner.measure_interleaved(p, { conditions = "interleave" }, ordered, function(r) reported[#reported + 1] = r.impl end)
    assert.same({ "plan_lib", "plan_cuda" }, got.plans)
    assert.equal("ok", ordered[1].status)
    assert.equal(1.0, ordered[1].ms)
    assert.same({ sm_clock_mhz = 1430, cap_fraction = 0.75 }, ordered[1].extra)
    assert.is_nil(ordered[2].extra.cap_fraction) -- no power reading: an empty cell, not a guess
    assert.same({ "lib", "cuda" }, reported)
  end)

  it("re-measures alone a plan whose group result says throttled, and fails only the plan that faulted", function()
    local seq = {}
    package.loaded["tb.timer"] = { options = real.options, measure_group = function()
      return { { code = "throttled", message = "all 10 samples under 90%" }, { median = 3.0 } }
    end, measure = function(plan, opts)
      seq[#seq + 1] = plan
      return { median = 5.0, sm_clock_mhz = 1500 }
    end }
    local p, ordered = pending({ "lib", "cuda" })
    runner.measure_interleaved(p, {}, ordered)
    assert.same({ "plan_lib" }, seq) -- with the filter off (runner.measure's fallback)
    assert.equal(5.0, ordered[1].ms)
    assert.matches("1500 MHz", ordered[1].clock_note)
    assert.equal(3.0, ordered[2].ms)

    -- a launch failure in the second plan: that row fails, the first is measured alone
    seq = {}
    package.loaded["tb.timer"] = { options = real.options, measure_group = function()
      return nil, errors.new("launch", "plan step 1: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE", "cuLaunchKernel"), 2
    end, measure = function(plan) seq[#seq + 1] = plan; return { median = 1.0 } end }
    p, ordered = pending({ "lib", "cuda" })
    runner.measure_interleaved(p, {}, ordered)
    assert.equal("ok", ordered[1].status)
    assert.equal("failed", ordered[2].status)
    assert.same({ "plan_lib" }, seq)

    -- a lost context: the faulting row is fatal, the others skipped, nothing measured again
    seq = {}
    package.loaded["tb.timer"] = { options = real.options, measure_group = function()
      return nil, errors.new("fault", "CUDA_ERROR_ILLEGAL_ADDRESS", "cuStreamSynchronize"), 1
    end, measure = function(plan) seq[#seq + 1] = plan; return { median = 1.0 } end }
    p, ordered = pending({ "lib", "cuda", "triton" })
    runner.measure_interleaved(p, {}, ordered)
    assert.equal("failed", ordered[1].status)
    assert.is_true(ordered[1].fatal)
    assert.equal("skipped", ordered[2].status)
    assert.matches("GPU context lost after lib", ordered[3].reason)
    assert.same({}, seq)
  end)

  it("measures a single plan with the ordinary timer", function()
    package.loaded["tb.timer"] = { options = real.options, measure_group = function() error("no group of one") end,
      measure = function() return { median = 4.0, cap_fraction = 0 } end }
    local p, ordered = pending({ "cuda" })
    runner.measure_interleaved(p, {}, ordered)
    assert.equal(4.0, ordered[1].ms)
    assert.equal(0, ordered[1].extra.cap_fraction)
  end)
end)

describe("runner.plan_note", function()
  it("reads a plan's note, the text the row carries as note (CSV note_<impl>)", function()
    assert.equal("cuDNN engine 3", runner.plan_note({ note = "cuDNN engine 3" }))
  end)

  it("is nil for a plan without one, an empty one, one not a string, or a plan that cannot be indexed", function()
    assert.is_nil(runner.plan_note({}))
    assert.is_nil(runner.plan_note({ note = "" }))
    assert.is_nil(runner.plan_note({ note = 3 }))
    assert.is_nil(runner.plan_note(io.stdout))
    assert.is_nil(runner.plan_note(setmetatable({}, { __index = function() error("no fields") end })))
  end)
end)
