-- tilebench.pools: one worker pool per GPU fed from one queue, through real `tilebench worker`
-- processes running tests/fixtures/fake_runner.lua (no GPU): the device list, every device's
-- hello, items spread over the devices, a hang on one GPU while the others go on.
local pools = require("tilebench.pools")

describe("pools.parse", function()
  it("reads ordinals and refuses what is not one", function()
    assert.same({ 0, 1, 3 }, pools.parse("0,1,3"))
    assert.same({ 2 }, pools.parse("2"))
    assert.is_nil(pools.parse("0,0"))
    assert.is_nil(pools.parse("0,,1"))
    assert.is_nil(pools.parse("a"))
    assert.is_nil(pools.parse("-1"))
    assert.is_nil(pools.parse(""))
  end)
end)

describe("one worker pool per device", function()
  local function item(op, case_index, impls)
    return { operator = op, mode = "default", dtype = "fp32", case_index = case_index, case_id = "n=" .. case_index,
             impls = impls, protocol = {}, _case = { params = { n = case_index } } }
  end

  it("starts every device's worker and lists the devices", function()
    local m <close> = pools.new({ 0, 2 }, { runner = "tests.fixtures.fake_runner", limit = function() return 10 end })
    local info = m:hello()
    assert.equal("Fake GPU", info.device.name)
    assert.equal(2, #info.devices)
    assert.equal(0, info.devices[1].ordinal)
    assert.equal(2, info.devices[2].ordinal)
    assert.equal(2, info.devices[2].device.ordinal) -- the worker was started with --device 2
  end)

  it("keeps the other GPU busy while one worker hangs; every item ends once", function()
    local m <close> = pools.new({ 0, 1 }, { runner = "tests.fixtures.fake_runner", limit = function() return 2 end })
    m:hello()
    local items = { item("broken_endless_loop", 1, { "broken", "good" }) }
    for i = 1, 3 do items[#items + 1] = item("broken_unwritten", i, { "good", "broken" }) end
    local ended, started = {}, 0
    local res = m:run_queue(items, {
      start = function() started = started + 1 end,
      done = function(it, rows, device)
        ended[#ended + 1] = { op = it.operator, rows = rows, device = device }
      end,
    })
    assert.is_nil(res.interrupted)
    assert.equal(4, started)
    assert.equal(4, #ended)
    -- the hung item went to device 0 (first free) and ended last: device 1 ran the other three
    assert.equal("broken_endless_loop", ended[4].op)
    assert.equal(0, ended[4].device)
    assert.equal("timeout", ended[4].rows[1].status)
    assert.equal("ok", ended[4].rows[2].status)
    for i = 1, 3 do
      assert.equal(1, ended[i].device)
      assert.equal("ok", ended[i].rows[1].status)
      assert.equal("wrong", ended[i].rows[2].status)
      assert.equal(1, ended[i].rows[1].extra.device) -- two devices: each row names its GPU
    end
  end)

  it("with one device, rows are a plain run's (no device field)", function()
    local m <close> = pools.new({ 0 }, { runner = "tests.fixtures.fake_runner", limit = function() return 10 end })
    local rows
    m:run_queue({ item("broken_unwritten", 1, { "good" }) }, { done = function(_, r) rows = r end })
    assert.equal("ok", rows[1].status)
    assert.is_true(rows[1].extra == nil or rows[1].extra.device == nil)
  end)

  it("hands out nothing more once interrupted", function()
    local m <close> = pools.new({ 0 }, { runner = "tests.fixtures.fake_runner", limit = function() return 10 end })
    local n = 0
    local res = m:run_queue({ item("broken_unwritten", 1, { "good" }), item("broken_unwritten", 2, { "good" }) },
      { done = function() n = n + 1 end, interrupted = function() return n >= 1 and "SIGINT" or nil end })
    assert.equal("SIGINT", res.interrupted)
    assert.equal(1, n)
  end)
end)
