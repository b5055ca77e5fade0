-- tilebench.execute: items through an executor into the journal, the derived columns and the
-- gate computed in the parent, the campaign's metrics.
local execute = require("tilebench.execute")
local journal = require("tilebench.journal")
local worker = require("tilebench.worker")

describe("execute", function()
  local function item(op, case_index, impls)
    return { operator = op, mode = "default", dtype = "fp32", case_index = case_index, case_id = "n=" .. case_index,
             impls = impls, protocol = {}, _case = { params = { n = case_index } } }
  end

  it("journals every item before the next starts and stops when interrupted", function()
    local path = os.tmpname()
    os.remove(path)
    local jnl = journal.open(path, { run_id = "t" })
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner" })
    local items = { item("alpha", 1, { "cuda" }), item("alpha", 2, { "cuda" }), item("alpha", 3, { "cuda" }) }
    local journalled = {}
    local calls = 0
    local summary = execute.execute(items, pool, jnl, {
      metrics = { double_ms = function(r) return r.ms and 2 * r.ms end },
      on_rows = function()
        local _, rows = journal.read(path)
        journalled[#journalled + 1] = #rows
      end,
      interrupted = function() calls = calls + 1; return calls > 2 and "SIGINT" or nil end,
    })
    jnl:close()
    assert.same({ 1, 2 }, journalled)
    assert.equal(2, summary.done)
    assert.equal("SIGINT", summary.interrupted)
    local _, rows = journal.read(path)
    assert.equal(2 * rows[1].ms, rows[1].extra.double_ms)
    assert.same({ n = 1 }, rows[1].params) -- grid values, not the runner's
    os.remove(path)
  end)

  it("an interrupt while on_item_start waits stops before that item runs", function()
    local path = os.tmpname()
    os.remove(path)
    local jnl = journal.open(path, { run_id = "t" })
    local pool <close> = worker.isolated({ runner = "tests.fixtures.fake_runner" })
    local items = { item("alpha", 1, { "cuda" }), item("alpha", 2, { "cuda" }) }
    local stop, started = nil, 0
    local summary = execute.execute(items, pool, jnl, {
      on_item_start = function(it) started = started + 1; if it.case_index == 2 then stop = "SIGINT" end end,
      interrupted = function() return stop end,
    })
    jnl:close()
    assert.equal(2, started)
    assert.equal(1, summary.done)
    assert.equal("SIGINT", summary.interrupted)
    local _, rows = journal.read(path)
    assert.equal(1, #rows)
    os.remove(path)
  end)

  it("derives each case's columns in the parent from the item's work and the case's baseline", function()
    local it = { operator = "alpha", mode = "default", dtype = "fp32", case_index = 1, impls = { "good", "fast", "bad" },
                 flops = 2e9, bytes = 4e9, baseline = "good", category = "Point-wise", gate = { elib = 0.5 } }
    local rows = { { impl = "good", status = "ok", ms = 2.0, dtype = "fp32" },
                   { impl = "fast", status = "ok", ms = 1.0, dtype = "fp32" },
                   { impl = "bad", status = "wrong", dtype = "fp32" } }
    execute.case_metrics(it, rows, nil) -- no peaks: rho stays empty, the rest is computed
    assert.equal(2e9, rows[3].flops)          -- every row gets the work
    assert.equal(4e9, rows[3].bytes)
    assert.is_nil(rows[3].speedup)            -- no time, no ratio
    assert.equal(2.0, rows[2].speedup)        -- against the baseline of the same case
    assert.equal(1.0, rows[1].speedup)
    assert.near(4e9 / 1e-3 / 1e9, rows[2].gbs, 1e-6)
    assert.is_nil(rows[2].rho)
    assert.is_nil(rows[2].metrics_error)
    local it2 = { operator = "alpha", dtype = "fp32", impls = { "good" }, work_error = "config.yaml: bytes_expr: bad" }
    local r2 = { { impl = "good", status = "ok", ms = 1.0 } }
    execute.case_metrics(it2, r2, nil)
    assert.equal("config.yaml: bytes_expr: bad", r2[1].metrics_error)
    assert.is_nil(r2[1].gbs)
  end)

  it("computes rho on the essential bytes and puts TileBench's rho and the L2 columns in extra", function()
    local peaks = require("tilebench.peaks").validate({ gpu = "N", device = { name = "n", l2_bytes = 50e6 },
      bandwidth_gbs = 4000, memory_ceiling_gbs = 4400, fp32_tflops = 50, matrix_tflops = {} }, "n")
    local it = { operator = "rmsnorm", mode = "default", dtype = "fp32", case_index = 1, impls = { "cuda" },
                 flops = 1e6, bytes = 3e9, essential_bytes = 2e9, category = "Reduction/Norm", gate = { rho = 0.5 } }
    local rows = { { impl = "cuda", status = "ok", ms = 1.0, dtype = "fp32" } }
    execute.case_metrics(it, rows, peaks)
    local r = rows[1]
    assert.near(2e9 / (1e-3 * 4400e9), r.rho, 1e-12)
    assert.near(3e9 / (1e-3 * 4000e9), r.extra.rho_tilebench, 1e-12)
    assert.equal(4400, r.extra.ceiling_gbs)
    assert.near(40, r.extra.l2_ratio, 1e-12)
    assert.equal(0, r.extra.l2_near)
    -- the gate reads the essential rho (0.45): slow, where TileBench's count (0.75) would pass
    assert.equal("slow", r.status)
    assert.equal("rho 0.455 < gate 0.5", r.reason)
  end)
end)
