-- tilebench.worker: work items through `tilebench worker` processes running
-- tests/fixtures/fake_runner.lua (no GPU needed): crashes, hangs, sticky faults, per-implementation
-- limits.
local worker = require("tilebench.worker")

describe("execution through worker processes", function()
  local function item(op, case_index, impls)
    return { operator = op, mode = "default", dtype = "fp32", case_index = case_index, case_id = "n=" .. case_index,
             impls = impls, protocol = {}, _case = { params = { n = case_index } } }
  end

  it("re-runs implementations skipped after a sticky fault in a fresh worker", function()
    local events = {}
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner", limit = function() return 10 end,
      on_event = function(t) events[#events + 1] = t end })
    assert.equal("Fake GPU", pool:hello().device.name)
    local rows = pool:run(item("broken_oob_write", 1, { "broken", "good" }))
    assert.equal(2, #rows)
    assert.equal("broken", rows[1].impl)
    assert.equal("failed", rows[1].status)
    assert.matches("CUDA_ERROR_ILLEGAL_ADDRESS", rows[1].reason)
    assert.equal("good", rows[2].impl)
    assert.equal("ok", rows[2].status)
    assert.equal(2, pool.started)
    assert.matches("GPU context lost", events[1])
  end)

  it("turns a crash and a hang into failed and timeout; neighbours keep their results", function()
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner", limit = function() return 1 end })
    local rows = pool:run(item("broken_oob_write", 2, { "good", "broken" }))
    assert.equal("ok", rows[1].status)
    assert.equal("failed", rows[2].status)
    assert.matches("worker killed by SIGSEGV; last stderr: fake_runner: segfaulting on purpose", rows[2].reason)
    rows = pool:run(item("broken_endless_loop", 1, { "broken" }))
    assert.equal("timeout", rows[1].status)
    assert.matches("time limit %(1 s%)", rows[1].reason)
    rows = pool:run(item("broken_wrong_result", 3, { "good", "broken" }))
    assert.same({ "ok", "wrong" }, { rows[1].status, rows[2].status })
  end)

  it("charges a hang to the implementation in flight; the ones before keep their rows, the ones after run on", function()
    local events = {}
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner", limit = function() return 1 end,
      on_event = function(t) events[#events + 1] = t end })
    local impls = { "good", "a1", "broken", "z1", "z2" }
    local rows = pool:run(item("broken_hang_one", 1, impls))
    local st = {}
    for i, r in ipairs(rows) do assert.equal(impls[i], r.impl); st[i] = r.status end
    assert.same({ "ok", "ok", "timeout", "ok", "ok" }, st)
    assert.equal(2, pool.started) -- one kill, one fresh worker for z1 and z2 together
    assert.equal(1, #events)
    assert.matches("#1 broken: no result within 1 s", events[1])
  end)
  it("interleaved: charges a hang in one implementation's check to it, not to the verified ones waiting", function()
    local events = {}
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner", limit = function() return 1 end,
      on_event = function(t) events[#events + 1] = t end })
    local impls = { "good", "a1", "broken", "z1", "z2" }
    local it_ = item("broken_hang_one", 1, impls)
    it_.protocol = { conditions = "interleave" }
    local rows = pool:run(it_)
    local st = {}
    for i, r in ipairs(rows) do assert.equal(impls[i], r.impl); st[i] = r.status end
    assert.same({ "ok", "ok", "timeout", "ok", "ok" }, st)
    assert.equal(2, pool.started) -- one kill; the four others together in a fresh worker
    assert.equal(1, #events)
    assert.matches("#1 broken: no result within 1 s", events[1])
  end)

  it("interleaved: a hang in the rounds runs each implementation alone, and charges the one that hangs alone", function()
    local events = {}
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner", limit = function() return 1 end,
      env = { TB_FAKE_HANG_MEASURE = "a1" }, on_event = function(t) events[#events + 1] = t end })
    local impls = { "good", "a1", "z1" }
    local it_ = item("broken_wrong_result", 1, impls)
    it_.protocol = { conditions = "interleave" }
    local rows = pool:run(it_)
    local st = {}
    for i, r in ipairs(rows) do assert.equal(impls[i], r.impl); st[i] = r.status end
    assert.same({ "ok", "timeout", "ok" }, st)
    assert.matches("time limit %(1 s%)", rows[2].reason)
    assert.equal(2, #events)
    assert.matches("no result from the interleaved rounds of 3 implementations within 3 s", events[1])
    assert.matches("#1 a1: no result within 1 s", events[2])
    assert.equal(3, pool.started) -- the rounds' worker, the one a1 hung alone in, the one z1 ran in
  end)

  it("charges a hang in the inputs or the reference to the whole group once", function()
    local events = {}
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner", limit = function() return 1 end,
      env = { TB_FAKE_HANG_REFERENCE = "broken_hang_one" }, on_event = function(t) events[#events + 1] = t end })
    local impls = { "good", "a1", "z1" }
    local rows = pool:run(item("broken_hang_one", 1, impls))
    for i, r in ipairs(rows) do
      assert.equal(impls[i], r.impl)
      assert.equal("timeout", r.status)
      assert.matches("^inputs/reference: no result within the time limit %(1 s%)", r.reason)
    end
    assert.equal(1, pool.started) -- one worker, killed once: nothing re-run
    assert.equal(1, #events)
  end)
end)
