-- search: successive halving and the exhaustive search over synthetic timings (no GPU): the best
-- candidate survives the screens, the screening budget is respected, seeds are tried first and
-- always reach the full protocol, failures are recorded per candidate, a fatal error stops it.
local search = require("tilebench.search")

-- n candidates with true times t(i); a screen of s samples sees the time with noise that shrinks
-- as 1/s (deterministic), the full protocol sees the true time.
local function setup(n, t, noise)
  local cands, truth = {}, {}
  for i = 1, n do
    local key = "C=" .. i
    cands[i] = { key = key, cfg = { C = i } }
    truth[key] = t(i)
  end
  local calls = { screen = {}, full = {}, samples = 0 }
  local opts = {
    screen = function(c, samples)
      calls.screen[#calls.screen + 1] = c.key
      calls.samples = calls.samples + samples
      local wobble = noise and (((#c.key * 7919 + samples * 104729 + #calls.screen) % 11) - 5) / 100 / samples or 0
      return truth[c.key] * (1 + wobble)
    end,
    full = function(c)
      calls.full[#calls.full + 1] = c.key
      return truth[c.key]
    end,
  }
  return cands, opts, calls, truth
end

describe("search.run halving", function()
  it("keeps the best candidate through every screen and times only the finalists fully", function()
    -- a bumpy landscape: the minimum (C=37) is not at an end
    local cands, opts, calls = setup(100, function(i) return i == 37 and 0.5 or 2 + ((i * 37) % 101) / 100 end, true)
    local rec = search.run(cands, opts)
    assert.equal("C=37", rec.best.key)
    assert.equal(100, rec.screened)
    assert.equal(3, #rec.finalists)
    -- only the best finalist by its last screen (at least final_samples long) is timed fully
    assert.same({ "C=37" }, calls.full)
    assert.is_true(rec.rounds >= 3)
    assert.equal("ok", rec.entries["C=37"].status)
    assert.is_true(rec.entries["C=37"].finalist)
    assert.is_true(rec.entries["C=37"].full)
    local screened_only, finalists_screened = 0, 0
    for _, e in pairs(rec.entries) do
      if e.status == "screened" then screened_only = screened_only + 1 end
      if e.finalist and not e.full then
        finalists_screened = finalists_screened + 1
        assert.is_true(e.screen_samples >= search.DEFAULTS.final_samples)
      end
    end
    assert.equal(99, screened_only)
    assert.equal(2, finalists_screened)
    -- full_n = 3: the three finalists timed fully, as before the final rung existed
    cands, opts, calls = setup(100, function(i) return i == 37 and 0.5 or 2 + ((i * 37) % 101) / 100 end, true)
    opts.full_n = 3
    rec = search.run(cands, opts)
    assert.equal(3, #calls.full)
    assert.equal("C=37", rec.best.key)
  end)

  it("a final rung ranks finalists whose last screen was short; the next finalist replaces a failed one", function()
    -- 23 candidates (a GEMM space): rounds of 5 and 15 samples, then the 3 finalists get a
    -- final_samples screen, and the best of that rung the full protocol
    local cands, opts, calls = setup(23, function(i) return 10 + i end)
    local rec = search.run(cands, opts)
    assert.equal(search.DEFAULTS.final_samples, rec.final_rung)
    assert.same({ "C=1" }, calls.full)
    for _, k in ipairs(rec.finalists) do
      assert.equal(search.DEFAULTS.final_samples, rec.entries[k].screen_samples)
    end
    assert.equal(search.planned_samples(23), rec.spent)
    assert.equal(23 * 5 + 8 * 15 + 3 * 45, rec.spent)
    -- the best finalist's full protocol fails: the second is timed and wins
    cands, opts, calls = setup(23, function(i) return 10 + i end)
    local full = opts.full
    opts.full = function(c) if c.key == "C=1" then return nil, { status = "timeout", reason = "slow" } end return full(c) end
    rec = search.run(cands, opts)
    assert.same({ "C=2" }, calls.full) -- (the failing call is not logged by setup's full)
    assert.equal("C=2", rec.best.key)
    assert.equal("timeout", rec.entries["C=1"].status)
    assert.is_true(rec.entries["C=1"].full)
    assert.is_nil(rec.entries["C=3"].full)
  end)

  it("respects the screening budget", function()
    local cands, opts, calls = setup(100, function(i) return i end)
    opts.budget = 700
    local rec = search.run(cands, opts)
    assert.is_true(calls.samples <= 700, "spent " .. calls.samples)
    assert.equal(calls.samples, rec.spent)
    assert.equal(700, rec.budget)
    assert.equal("C=1", rec.best.key)
    -- a budget under one sample per candidate still screens every candidate once
    cands, opts, calls = setup(50, function(i) return i end)
    opts.budget, opts.screen_samples = 20, 5
    rec = search.run(cands, opts)
    assert.equal(50, rec.screened)
    -- one sample each, then the final rung of the 3 finalists (outside the budget)
    assert.equal(50 + 3 * search.DEFAULTS.final_samples, calls.samples)
    -- the unbounded plan is what planned_samples says
    for _, n in ipairs({ 1, 4, 10, 100, 1050 }) do
      cands, opts = setup(n, function(i) return i end)
      rec = search.run(cands, opts)
      assert.equal(search.planned_samples(n), rec.spent, "n=" .. n)
      assert.is_true(rec.spent <= search.DEFAULTS.budget)
    end
  end)

  it("tries the seed first and keeps it among the finalists", function()
    local cands, opts, calls = setup(30, function(i) return i end) -- the seed is the slowest
    opts.seeds = { "C=30", "not-a-candidate" }
    local rec = search.run(cands, opts)
    assert.equal("C=30", calls.screen[1])
    assert.equal("C=30", rec.order[1])
    assert.is_true(rec.entries["C=30"].seed)
    local finals = {}
    for _, k in ipairs(rec.finalists) do finals[k] = true end
    assert.is_true(finals["C=30"])
    assert.is_true(finals["C=1"])
    assert.equal(3, #rec.finalists) -- the seed takes a finalist's place
    assert.equal("C=1", rec.best.key)
    -- two seeds and one finalist wanted: both seeds and the best other
    cands, opts = setup(30, function(i) return i end)
    opts.seeds, opts.finalists = { "C=30", "C=29" }, 1
    rec = search.run(cands, opts)
    assert.same({ "C=1", "C=29", "C=30" }, (function() local t = {} for _, k in ipairs(rec.finalists) do t[#t + 1] = k end table.sort(t) return t end)())
  end)

  it("records failures per candidate and keeps going; a fatal one stops the search", function()
    local cands, opts = setup(10, function(i) return i end)
    local screen = opts.screen
    opts.screen = function(c, s)
      if c.key == "C=1" then return nil, { status = "wrong", reason = "off by one" } end
      return screen(c, s)
    end
    local rec = search.run(cands, opts)
    assert.equal("wrong", rec.entries["C=1"].status)
    assert.equal("off by one", rec.entries["C=1"].reason)
    assert.equal("C=2", rec.best.key)
    opts.screen = function(c, s)
      if c.key == "C=3" then return nil, { status = "failed", reason = "illegal address", fatal = true } end
      return screen(c, s)
    end
    rec = search.run(cands, opts)
    assert.is_nil(rec.best)
    assert.equal("illegal address", rec.fatal.reason)
  end)

  it("no more candidates than finalists: no screen, all get the full protocol", function()
    local cands, opts, calls = setup(3, function(i) return 4 - i end)
    local rec = search.run(cands, opts)
    assert.equal(0, #calls.screen)
    assert.equal(3, #calls.full)
    assert.equal(0, rec.screened)
    assert.equal("C=3", rec.best.key)
  end)

  it("a full-protocol failure of a finalist leaves the next best", function()
    local cands, opts = setup(10, function(i) return i end)
    local full = opts.full
    opts.full = function(c) if c.key == "C=1" then return nil, { status = "timeout", reason = "slow" } end return full(c) end
    local rec = search.run(cands, opts)
    assert.equal("C=2", rec.best.key)
    assert.equal("timeout", rec.entries["C=1"].status)
  end)
end)

describe("search.run exhaustive", function()
  it("gives every candidate the full protocol and no screen", function()
    local cands, opts, calls = setup(12, function(i) return (i - 7) ^ 2 + 1 end)
    opts.mode = "exhaustive"
    local rec = search.run(cands, opts)
    assert.equal(0, #calls.screen)
    assert.equal(12, #calls.full)
    assert.equal("C=7", rec.best.key)
    assert.equal(12, rec.screened)
    assert.equal(12, #rec.finalists)
    assert.is_nil(rec.budget)
  end)
  it("agrees with halving on the winner when the screens are exact", function()
    for _, n in ipairs({ 1, 2, 5, 66, 108 }) do
      local t = function(i) return 1 + ((i * 53) % 97) / 97 end
      local c1, o1 = setup(n, t)
      local c2, o2 = setup(n, t)
      o2.mode = "exhaustive"
      assert.equal(search.run(c2, o2).best.key, search.run(c1, o1).best.key, "n=" .. n)
    end
  end)
  it("an empty candidate list finds nothing", function()
    local rec = search.run({}, { screen = error, full = error })
    assert.is_nil(rec.best)
    assert.equal(0, rec.screened)
  end)
end)
