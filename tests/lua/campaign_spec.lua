-- tilebench.campaign: campaign scripts, overrides, resolved work items, broken operators, shards
-- (and the journal order shards sort back into, rundir.sort_rows).
local campaign = require("tilebench.campaign")
local rundir = require("tilebench.rundir")
local journal = require("tilebench.journal")

-- A loader with two small operators, in the shape tilebench.operator gives.
local function fake_loader()
  local function op(name, category, dtypes, ncases, impls, benchmark)
    local cases = {}
    for _, d in ipairs(dtypes) do
      for i = 1, ncases do cases[#cases + 1] = { dtype = d, id = "n=" .. i, params = { n = i * 1024 } } end
    end
    return { name = name, category = category, cases = cases, impls = impls, config = { benchmark = benchmark } }
  end
  local ops = {
    alpha = op("alpha", "Point-wise", { "fp16", "fp32" }, 4, { "lib", "cuda" }, { use_cuda_graph = true, warmup = 5, ["repeat"] = 7 }),
    beta = op("beta", "Data Layout", { "fp32" }, 3, { "cuda" }, {}),
  }
  return {
    list = function() return { "alpha", "beta" } end,
    load = function(n)
      return ops[n] or error("unknown operator '" .. n .. "'", 0)
    end,
  }
end

describe("campaign scripts", function()
  it("validates fields with messages naming the file and field", function()
    assert.has_error(function() campaign.validate({ operaters = "all" }, "c.lua") end)
    local ok, err = pcall(campaign.validate, { operaters = "all" }, "c.lua")
    assert.matches("c.lua: unknown field 'operaters'", err)
    ok, err = pcall(campaign.validate, { modes = { "fast" } }, "c.lua")
    assert.matches("unknown mode 'fast'", err)
    ok, err = pcall(campaign.validate, { protocol = { warmup = "ten" } }, "c.lua")
    assert.matches("protocol.warmup' must be a number", err)
    ok, err = pcall(campaign.validate, { gate = { speed = 1 } }, "c.lua")
    assert.matches("gate", err)
    ok, err = pcall(campaign.validate, { case_timeout = -1 }, "c.lua")
    assert.matches("case_timeout' must be > 0", err)
    -- a metric may not take the columns every measured row has (the clock and power state)
    ok, err = pcall(campaign.validate, { metrics = { cap_fraction = function() return 1 end } }, "c.lua")
    assert.matches("'cap_fraction' cannot name CSV columns", err)
    -- the protocol's power options are checked against tb.timer.options like the others
    ok, err = pcall(campaign.validate, { protocol = { conditions = "alternate" } }, "c.lua")
    assert.is_false(ok)
    assert.matches("conditions", err)
    assert.is_true((pcall(campaign.validate, { protocol = { conditions = "cooldown", reading = "cold" } }, "c.lua")))
  end)

  it("loads the shipped campaigns", function()
    for _, name in ipairs({ "smoke", "suite", "tilebench-protocol" }) do
      local c = campaign.load(TILEBENCH_HOME .. "/campaigns/" .. name .. ".lua")
      assert.equal(name, c.name)
      assert.equal("all", c.operators)
    end
    local tp = campaign.load(TILEBENCH_HOME .. "/campaigns/tilebench-protocol.lua")
    assert.same({ mode = "fixed", warmup = 1, ["repeat"] = 3, graph = true, flush = true, clock = "cupti",
                  conditions = "sequential" }, tp.protocol)
  end)

  it("lets command-line overrides replace campaign fields", function()
    local s = campaign.settings({ operators = "all", modes = { "default", "autotune" }, protocol = { warmup = 1, graph = true },
      gate = { rho = 0.5 }, case_timeout = 30 },
      { operators = { "beta" }, modes = { "autotune" }, protocol = { warmup = 9 }, gate = { elib = 0.8 }, case_timeout = 5 })
    assert.same({ "beta" }, s.operators)
    assert.same({ "autotune" }, s.modes)
    assert.equal(9, s.protocol.warmup)
    assert.is_true(s.protocol.graph)
    assert.same({ rho = 0.5, elib = 0.8 }, s.gate)
    assert.equal(5, s.case_timeout)
    assert.equal(60, campaign.settings({ operators = "all" }).case_timeout)
    assert.has_error(function() campaign.settings({}, {}) end, "no operators: give a campaign file or --operator")
  end)
end)

describe("case subsets", function()
  local function pick(spec, n)
    local f = assert(campaign.case_filter(spec))
    local out = {}
    for i = 1, n do if f(i, n) then out[#out + 1] = i end end
    return out
  end
  it("understands lists, ranges and names", function()
    assert.same({ 1, 2, 3, 7 }, pick("1-3,7", 10))
    assert.same({ 1 }, pick("first", 10))
    assert.same({ 10 }, pick("last", 10))
    assert.same({ 1, 10 }, pick("ends", 10))
    assert.same({ 5 }, pick("middle", 10))
    assert.same({ 1, 2, 3 }, pick("all", 3))
    assert.same({ 1, 2, 3 }, pick(nil, 3))
    local f, err = campaign.case_filter("1-x")
    assert.is_nil(f)
    assert.matches("bad case list '1%-x'", err)
  end)
end)

describe("work items", function()
  it("expands operators, modes, dtypes and cases in a fixed order", function()
    local s = campaign.settings({ operators = "all", modes = { "default", "autotune" }, cases = "ends" })
    local items = campaign.plan_items(s, fake_loader())
    local ids = {}
    for _, it in ipairs(items) do ids[#ids + 1] = table.concat({ it.operator, it.mode, it.dtype, it.case_index }, "/") end
    assert.same({
      "alpha/default/fp16/1", "alpha/default/fp16/4", "alpha/default/fp32/1", "alpha/default/fp32/4",
      "alpha/autotune/fp16/1", "alpha/autotune/fp16/4", "alpha/autotune/fp32/1", "alpha/autotune/fp32/4",
      "beta/default/fp32/1", "beta/default/fp32/3", "beta/autotune/fp32/1", "beta/autotune/fp32/3",
    }, ids)
    assert.same({ "lib", "cuda" }, items[1].impls)
    -- the operator's benchmark block under the campaign's protocol
    assert.is_true(items[1].protocol.graph)
    assert.is_nil(items[1].protocol.mode)
  end)

  it("selects categories, dtypes, implementations and per-operator cases", function()
    local s = campaign.settings({ operators = { "Data Layout" }, cases = { default = "first", beta = "2-3" } })
    local items = campaign.plan_items(s, fake_loader())
    assert.equal(2, #items)
    assert.equal(2, items[1].case_index)
    s = campaign.settings({ operators = "all", exclude = { "beta" }, dtypes = { "fp32" }, impls = { "cuda" }, cases = "first" })
    items = campaign.plan_items(s, fake_loader())
    assert.equal(1, #items)
    assert.same({ "cuda" }, items[1].impls)
    assert.equal("fp32", items[1].dtype)
  end)

  it("marks every item for the honesty checks when the campaign or --checks asks", function()
    local items = campaign.plan_items(campaign.settings({ operators = "all", cases = "first" }), fake_loader())
    assert.is_nil(items[1].checks)
    items = campaign.plan_items(campaign.settings({ operators = "all", cases = "first", checks = true }), fake_loader())
    for _, it in ipairs(items) do assert.is_true(it.checks) end
    items = campaign.plan_items(campaign.settings({ operators = "all", cases = "first" }, { checks = true }), fake_loader())
    assert.is_true(items[1].checks)
    assert.has_error(function() campaign.validate({ checks = "yes" }, "c.lua") end, "c.lua: field 'checks' must be a boolean, got string")
  end)

  it("plans around an operator that does not load; an unknown name stays an error", function()
    local L = fake_loader()
    local list, load = L.list, L.load
    L.list = function() local t = list(); t[#t + 1] = "broken"; return t end
    L.load = function(n)
      if n == "broken" then error("/ops/broken/config.yaml:3:6: did not find expected ']'", 0) end
      return load(n)
    end
    local items, broken = campaign.plan_items(campaign.settings({ operators = "all" }), L)
    assert.equal(11, #items) -- alpha's 8 and beta's 3
    assert.same({ { operator = "broken", error = "/ops/broken/config.yaml:3:6: did not find expected ']'" } }, broken)
    -- selected by category, it might belong: reported, not dropped
    items, broken = campaign.plan_items(campaign.settings({ operators = { "Data Layout" } }), L)
    assert.equal(3, #items)
    assert.equal("broken", broken[1].operator)
    assert.has_error(function() campaign.plan_items(campaign.settings({ operators = { "gamma", "alpha" } }), L) end,
      "unknown operator 'gamma'")
    local row = campaign.operator_failed_row("broken", "default", "why")
    assert.is_true(rundir.is_operator_row(row))
    assert.is_nil(journal.entry_problem(row))
  end)

  it("names what is wrong", function()
    local L = fake_loader()
    assert.has_error(function() campaign.plan_items(campaign.settings({ operators = { "gamma" } }), L) end,
      "unknown operator 'gamma'")
    local ok, err = pcall(campaign.plan_items, campaign.settings({ operators = "all", impls = { "triton" } }), L)
    assert.matches("no selected operator has implementation 'triton'", err)
    ok, err = pcall(campaign.plan_items, campaign.settings({ operators = "all", dtypes = { "int4" } }), L)
    assert.matches("no work: none of the selected operators has dtype int4", err)
  end)

  it("fixed protocol fills warm-up and repeat from the operator", function()
    local s = campaign.settings({ operators = { "alpha" }, protocol = { mode = "fixed" } })
    local p = campaign.plan_items(s, fake_loader())[1].protocol
    assert.same({ mode = "fixed", warmup = 5, ["repeat"] = 7, graph = true }, p)
    s = campaign.settings({ operators = { "beta" }, protocol = { ["repeat"] = 3 } })
    p = campaign.plan_items(s, fake_loader())[1].protocol
    assert.same({ mode = "fixed", warmup = 20, ["repeat"] = 3 }, p)
  end)

  it("shards partition the items deterministically", function()
    local items = campaign.plan_items(campaign.settings({ operators = "all", modes = { "default", "autotune" } }), fake_loader())
    local seen, total = {}, 0
    for k = 1, 3 do
      for _, it in ipairs(campaign.shard(items, k, 3)) do
        local key = journal.key({ operator = it.operator, mode = it.mode, dtype = it.dtype, case_index = it.case_index, impl = "x" })
        assert.is_nil(seen[key])
        seen[key] = k
        total = total + 1
      end
    end
    assert.equal(#items, total)
    assert.same(campaign.shard(items, 2, 3), campaign.shard(items, 2, 3))
    assert.same({ nil, "expected k/n with 1 <= k <= n, got '4/3'" }, { campaign.parse_shard("4/3") })
    assert.same({ 2, 5 }, { campaign.parse_shard("2/5") })
  end)

  it("joined shards sort back into the unsharded run's journal order", function()
    local items = campaign.plan_items(campaign.settings({ operators = "all", modes = { "default", "autotune" } }), fake_loader())
    local keys = rundir.item_keys(items)
    assert.equal("alpha|default|fp16|1|lib", keys[1])
    assert.equal("alpha|default|fp16|1|cuda", keys[2])
    local function rows_of(list)
      local rows = {}
      for _, it in ipairs(list) do
        for _, impl in ipairs(it.impls) do
          rows[#rows + 1] = { operator = it.operator, mode = it.mode, dtype = it.dtype, case_index = it.case_index, impl = impl }
        end
      end
      return rows
    end
    local joined = {}
    for k = 3, 1, -1 do -- shards in any order
      for _, r in ipairs(rows_of(campaign.shard(items, k, 3))) do joined[#joined + 1] = r end
    end
    local stray = { operator = "gamma", mode = "default", dtype = "fp32", case_index = 1, impl = "cuda" }
    table.insert(joined, 2, stray)
    local sorted = rundir.sort_rows(joined, items)
    local got = {}
    for i, r in ipairs(sorted) do got[i] = journal.key(r) end
    local want = {}
    for i, k in ipairs(keys) do want[i] = k end
    want[#want + 1] = journal.key(stray) -- rows of no item last
    assert.same(want, got)
    assert.same({ 1, 1 }, { campaign.shard_of(nil) })
    assert.same({ 3, 4 }, { campaign.shard_of("3/4") })
    assert.is_nil((campaign.shard_of("0/4")))
  end)
end)
