-- tilebench.recompute: journal entries' derived columns derived again from the measured times with
-- the operators' current formulas and the given peaks; cases whose operator or case is gone kept.
local recompute = require("tilebench.recompute")

local function loader(ops)
  local names = {}
  for n in pairs(ops) do names[#names + 1] = n end
  table.sort(names)
  return {
    list = function() return names end,
    load = function(n) return ops[n] or error("unknown operator '" .. n .. "'", 0) end,
    cases_of = require("tilebench.operator").cases_of,
  }
end

-- An operator whose config.yaml states n reads and n writes (4 bytes each), essential bytes
-- only when given.
local function op(essential_expr)
  local metrics = { flops_expr = "n", bytes_expr = "n * dtype_size * 3", essential_bytes_expr = essential_expr }
  return { name = "pw", category = "Point-wise", baseline = "lib", impls = { "lib", "cuda" },
           config = { path = "pw/config.yaml", metrics = metrics },
           cases = { { dtype = "fp32", id = "n=1000", params = { n = 1000 } },
                     { dtype = "fp32", id = "n=2000", params = { n = 2000 } } } }
end

local peaks = require("tilebench.peaks").validate({ gpu = "N", device = { name = "n", l2_bytes = 1e3 },
  bandwidth_gbs = 4000, memory_ceiling_gbs = 5000, fp32_tflops = 50, matrix_tflops = {} }, "n")

local function entry(impl, case_index, ms, fields)
  local r = { operator = "pw", mode = "default", dtype = "fp32", case_index = case_index,
              case_id = "n=" .. (case_index * 1000), impl = impl, status = "ok", ms = ms }
  for k, v in pairs(fields or {}) do r[k] = v end
  return r
end

describe("recompute.rows", function()
  it("replaces stale rho, speedup and E_lib with the current formula's and fills the new columns", function()
    local rows = { entry("lib", 1, 2.0, { rho = 99, speedup = 7 }),
                   entry("cuda", 1, 1.0, { rho = 99, extra = { sm_clock_mhz = 1980 } }) }
    local rep = recompute.rows(rows, nil, peaks, { loader = loader({ pw = op("n * dtype_size * 2") }) })
    assert.same({ entries = 2, cases = 1, kept = {} }, rep)
    local cuda = rows[2]
    assert.near(8000 / (1e-3 * 5000e9), cuda.rho, 1e-15)           -- the essential bytes, DRAM ceiling
    assert.near(12000 / (1e-3 * 4000e9), cuda.extra.rho_tilebench, 1e-15)
    assert.equal(5000, cuda.extra.ceiling_gbs)
    assert.near(8, cuda.extra.l2_ratio, 1e-12)
    assert.equal(0, cuda.extra.l2_near)
    assert.equal(1980, cuda.extra.sm_clock_mhz)                      -- measured, kept
    assert.equal(2, cuda.speedup)                                    -- against the case's lib row
    assert.equal(2, cuda.elib)
    assert.equal(1, rows[1].speedup)
    assert.equal(8000, cuda.essential_bytes)
  end)

  it("takes the baseline and gate of the stored item, and gates again from ok", function()
    local items = { { operator = "pw", mode = "default", dtype = "fp32", case_index = 1, case_id = "n=1000",
                      impls = { "torch", "lib", "cuda" }, gate = { rho = 1e-6 } } }
    local o = op(nil)
    o.known_impls = { "torch", "lib", "cuda" }
    local rows = { entry("torch", 1, 4.0), entry("lib", 1, 2.0),
                   entry("cuda", 1, 1.0, { status = "slow", reason = "rho 1e-06 < gate 1" }),
                   entry("lib", 2, 1e6, { status = "ok" }) }
    recompute.rows(rows, items, peaks, { loader = loader({ pw = o }), gate = { rho = 1 } })
    assert.equal(4, rows[3].speedup)                                 -- torch ran: it is the baseline
    assert.equal("ok", rows[3].status)                               -- rho 2.4e-6 >= the item's 1e-6
    assert.is_nil(rows[3].reason)
    -- case 2 has no stored item: the run's gate applies (rho 1 makes its row slow)
    assert.equal("slow", rows[4].status)
    assert.matches("^rho .* < gate 1$", rows[4].reason)
  end)

  it("keeps the metrics of a vanished operator or case, saying why", function()
    local rows = { entry("cuda", 1, 1.0, { rho = 0.5, extra = { l2_near = 1 } }),
                   entry("cuda", 2, 1.0, { rho = 0.25 }),
                   { operator = "gone", mode = "default", dtype = "fp32", case_index = 1, case_id = "n=1",
                     impl = "cuda", status = "ok", ms = 1.0, rho = 0.125 } }
    local o = op(nil)
    o.cases = { o.cases[2] }                                        -- n=1000 left the grid
    local rep = recompute.rows(rows, nil, peaks, { loader = loader({ pw = o }) })
    assert.equal(1, rep.entries)
    assert.equal(2, #rep.kept)
    assert.equal(0.5, rows[1].rho)
    assert.equal(1, rows[1].extra.l2_near)
    assert.equal("case 'n=1000' is no longer in its fp32 grid", rep.kept[1].why)
    assert.equal(0.125, rows[3].rho)
    assert.equal("operator gone no longer exists (not on the operator search path)", rep.kept[2].why)
    assert.near(24000 / (1e-3 * 5000e9), rows[2].rho, 1e-15)       -- no essential formula: the bytes
  end)

  it("keeps an operator that no longer loads, and applies the campaign's metrics again", function()
    local bad = loader({ pw = op(nil) })
    local names = bad.list()
    bad.list = function() return { "pw", "broken" } end
    local load = bad.load
    bad.load = function(n) if n == "broken" then error("broken/config.yaml: line 3: bad", 0) end return load(n) end
    local rows = { entry("cuda", 2, 1.0, { extra = { twice_rho = 5, twice_rho_error = "old" } }),
                   { operator = "broken", mode = "default", dtype = "fp32", case_index = 1, impl = "cuda", ms = 1, rho = 3 } }
    local rep = recompute.rows(rows, nil, peaks, { loader = bad,
      metrics = { twice_rho = function(r) return 2 * r.rho end } })
    assert.same({ "pw" }, names)
    assert.near(2 * rows[1].rho, rows[1].extra.twice_rho, 1e-15)
    assert.is_nil(rows[1].extra.twice_rho_error)
    assert.equal(3, rows[2].rho)
    assert.equal("operator broken does not load now: broken/config.yaml: line 3: bad", rep.kept[1].why)
  end)
end)
