-- results.lua: result rows to the CSV layout; a plan's note (runner.plan_note, row.note) becomes
-- the column note_<impl> beside the extra metrics, only where some row has one.
local results = require("tilebench.results")

local function row(impl, extra)
  local r = { operator = "op", mode = "default", dtype = "fp16", case_index = 1, case_id = "n=1", params = { n = 1 },
              impl = impl, status = "ok", ms = 1.5 }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

describe("results", function()
  it("adds note to the extra columns when a row has one, one line, the row's extra untouched", function()
    local extra = { sm_clock_mhz = 1980 }
    local rows = { row("cuda", { extra = { sm_clock_mhz = 1900 } }),
                   row("lib", { note = "cuDNN engine 3,\nknobs {}", extra = extra }) }
    assert.same({ "note", "sm_clock_mhz" }, results.extra_names(rows))
    local cases = results.cases(rows, { "cuda", "lib" })
    assert.equal("cuDNN engine 3, knobs {}", cases[1].results.lib.extra.note)
    assert.equal(1980, cases[1].results.lib.extra.sm_clock_mhz)
    assert.is_nil(extra.note)
    assert.is_nil(cases[1].results.cuda.extra.note)
    local header, out = require("tilebench.csv").results_table(cases, { "cuda", "lib" }, results.extra_names(rows))
    assert.truthy(table.concat(header, ","):find("note_cuda,note_lib,sm_clock_mhz_cuda,sm_clock_mhz_lib", 1, true))
    assert.equal("cuDNN engine 3, knobs {}", out[1].note_lib)
  end)

  it("leaves the columns as they were when no row has a note", function()
    assert.same({ "sm_clock_mhz" }, results.extra_names({ row("cuda", { extra = { sm_clock_mhz = 1 } }) }))
    assert.same({}, results.extra_names({ row("cuda") }))
  end)
end)
