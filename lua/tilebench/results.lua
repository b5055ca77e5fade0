-- results.lua: result rows -> results/<gpu>/csv/<op>_<mode>.csv in DESIGN.md's layout, one
-- line per (dtype, case) in grid order; the columns and the writing are csv.lua's. The params
-- cell is the case id, which has TileBench's format ("cols=512, rows=512"), so our CSVs line up
-- with the published ones case by case.
local csv = require("tilebench.csv")

local M = {}

function M.params_string(params)
  return require("tilebench.grid").case_id(params)
end

-- rows: result rows of one operator and mode (any order); impls: implementation names in column
-- order; dtype_order: dtype -> rank. Returns the cases list csv.write_results takes.
function M.cases(rows, impls, dtype_order)
  local by_case, list = {}, {}
  for _, r in ipairs(rows) do
    local key = r.dtype .. "\0" .. tostring(r.case_index)
    local c = by_case[key]
    if not c then
      c = { id = r.case_id or M.params_string(r.params), dtype = r.dtype, results = {},
            rank = dtype_order and dtype_order[r.dtype] or 0, index = r.case_index or 0 }
      by_case[key] = c
      list[#list + 1] = c
    end
    local reason = r.reason and r.reason:gsub("[\r\n]+", " ")
    if reason and #reason > 300 then reason = reason:sub(1, 297) .. "..." end
    local extra = r.extra
    if type(r.note) == "string" then -- the plan's note (runner.plan_note): column note_<impl>
      extra = {}
      for k, v in pairs(r.extra or {}) do extra[k] = v end
      extra.note = r.note:gsub("[\r\n]+", " ")
    end
    c.results[r.impl] = { ms = r.ms, speedup = r.speedup, rho = r.rho, elib = r.elib,
                          status = r.status, reason = reason, extra = extra }
  end
  table.sort(list, function(a, b)
    if a.rank ~= b.rank then return a.rank < b.rank end
    if a.dtype ~= b.dtype then return a.dtype < b.dtype end
    return a.index < b.index
  end)
  return list
end

-- The metrics a campaign registered that rows hold (row.extra; a metric's error, <name>_error,
-- stays in the journal and raw JSON), and `note` where a row has a plan's note, sorted: the CSV's
-- extra columns.
function M.extra_names(rows)
  local seen, names = {}, {}
  for _, r in ipairs(rows) do
    if type(r.note) == "string" and not seen.note then
      seen.note = true
      names[#names + 1] = "note"
    end
    for k, v in pairs(type(r.extra) == "table" and r.extra or {}) do
      if type(k) == "string" and not k:match("_error$") and type(v) ~= "table" and not seen[k] then
        seen[k] = true
        names[#names + 1] = k
      end
    end
  end
  table.sort(names)
  return names
end

-- Writes <dir>/<op>_<mode>.csv atomically, creating dir. Returns the path.
function M.write_csv(dir, opname, mode, rows, impls, dtype_order)
  require("tilebench.util").mkdir_p(dir)
  local path = string.format("%s/%s_%s.csv", dir, opname, mode)
  csv.write_results(path, M.cases(rows, impls, dtype_order), impls, { extra = M.extra_names(rows) })
  return path
end

return M
