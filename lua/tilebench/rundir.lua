-- rundir.lua: the run directory, results/<gpu>/runs/<run-id>/ (layout, run.json, journal,
-- resume, outputs). run.json holds the resolved work items, so resume and merge use them as
-- planned instead of expanding grids and parsing argv again; journal.jsonl the finished entries
-- (tilebench.journal); csv/ and raw/ are regenerated from the journal alone.
local journal = require("tilebench.journal")
local util = require("tilebench.util")
local sys = require("tb.sys")

local M = {}

-- A run id: UTC time plus a short random part, sortable and unique enough for one machine.
function M.new_run_id()
  return os.date("!%Y%m%dT%H%M%SZ") .. "-" .. sys.random_hex(3)
end

M.valid_run_id = util.is_name

M.mkdirs = util.mkdir_p

-- ---- layout -----------------------------------------------------------------------------------
function M.run_path(root, label, id) return string.format("%s/%s/runs/%s", root, label, id) end
function M.csv_dir(root, label) return string.format("%s/%s/csv", root, label) end

-- The directory of run id under root (under root/<label> when label is given, else the first
-- results/<gpu>/runs/<id> found): dir, label; or nil, message.
function M.find_run(root, id, label)
  local lfs = require("lfs")
  if label then
    local d = M.run_path(root, label, id)
    if lfs.attributes(d, "mode") == "directory" then return d, label end
    return nil, string.format("no run '%s' under %s/%s/runs", id, root, label)
  end
  if lfs.attributes(root, "mode") == "directory" then
    for gpu in lfs.dir(root) do
      local d = M.run_path(root, gpu, id)
      if gpu:sub(1, 1) ~= "." and lfs.attributes(d, "mode") == "directory" then return d, gpu end
    end
  end
  return nil, string.format("no run '%s' under %s/*/runs", id, root)
end

-- ---- run.json ---------------------------------------------------------------------------------
-- {format = 2, run_id, label, args, created, shard = "k/n" | nil, items = the campaign's
-- resolved work items (all shards', in plan order; wire form), broken = {{operator, error}},
-- merged_from}. Format 1 (no format field, no items) is still read: its items are re-planned
-- from args by the caller.
M.RUN_FORMAT = 2

function M.write_run_json(dir, rec)
  local r = {}
  for k, v in pairs(rec) do r[k] = v end
  r.format = M.RUN_FORMAT
  if r.items then
    local wire = {}
    for i, it in ipairs(r.items) do wire[i] = M.stored_item(it) end
    r.items = wire
  end
  local ok, err = sys.write_atomic(dir .. "/run.json", journal.encode(r) .. "\n")
  if not ok then error(err, 0) end
end

-- The stored form of an item: no private fields, no per-run additions.
function M.stored_item(it)
  local w = {}
  for k, v in pairs(it) do if type(k) ~= "string" or k:sub(1, 1) ~= "_" then w[k] = v end end
  return w
end

-- Why a stored item cannot be used, or nil: its names and case must be what a planned item has.
local function item_problem(it)
  if type(it) ~= "table" then return "not an object" end
  for _, field in ipairs({ "operator", "mode" }) do
    if not util.is_name(it[field]) then
      return string.format("%s %s is not %s", field, util.describe(it[field]), util.NAME_RULE)
    end
  end
  if type(it.dtype) ~= "string" or math.type(it.case_index) ~= "integer" then return "no dtype and case" end
  if type(it.impls) ~= "table" or #it.impls == 0 then return "no implementations" end
  -- a candidate file is `tilebench eval`'s, never a run's: a stored one would compile any file
  if it.candidate ~= nil then return "a candidate implementation (tilebench eval's, not a run's)" end
  for _, impl in ipairs(it.impls) do
    if type(impl) ~= "string" then return "an implementation name that is not a string" end
  end
  return nil
end

-- Reads dir/run.json: rec, or nil and a message naming the file and what is wrong. Every name
-- in it is held to util.is_name (the --gpu rule) and every item to a planned item's shape, so
-- an edited run.json cannot move where outputs go.
function M.read_run_json(dir)
  local path = dir .. "/run.json"
  local fh = io.open(path, "rb")
  if not fh then return nil, string.format("%s is missing", path) end
  local rec, err = journal.decode(fh:read("a"))
  fh:close()
  if type(rec) ~= "table" or type(rec.args) ~= "table" then
    return nil, string.format("%s is unreadable (%s)", path, err or "not a run record")
  end
  for _, field in ipairs({ "run_id", "label" }) do
    if rec[field] ~= nil and not util.is_name(rec[field]) then
      return nil, string.format("%s: %s %s is not %s", path, field, util.describe(rec[field]), util.NAME_RULE)
    end
  end
  if rec.items ~= nil then
    if type(rec.items) ~= "table" then return nil, string.format("%s: items is not a list", path) end
    for i, it in ipairs(rec.items) do
      local why = item_problem(it)
      if why then return nil, string.format("%s: item %d: %s", path, i, why) end
    end
  end
  for i, b in ipairs(rec.broken or {}) do
    if type(b) ~= "table" or not util.is_name(b.operator) then
      return nil, string.format("%s: broken operator %d is not %s", path, i, util.NAME_RULE)
    end
  end
  return rec
end

-- The per-operator facts the outputs need, from items alone: {operator -> {impls, dtypes (plan
-- order), cases = {dtype -> {case_index -> {id, params}}}, category, count}}, and the
-- operators in order.
function M.plan_of(items)
  local plan, order = {}, {}
  for _, it in ipairs(items) do
    local p = plan[it.operator]
    if not p then
      p = { impls = it.impls, dtypes = {}, cases = {}, category = it.category, count = 0 }
      plan[it.operator] = p
      order[#order + 1] = it.operator
    end
    if not p.cases[it.dtype] then p.cases[it.dtype] = {}; p.dtypes[#p.dtypes + 1] = it.dtype end
    p.cases[it.dtype][it.case_index] = { id = it.case_id, params = it._case and it._case.params or it.params }
    p.count = p.count + 1
  end
  return plan, order
end

-- ---- resume --------------------------------------------------------------------------------------
-- The items of items the journal rows do not finish: each with only its implementations that
-- have no entry (an entry lost to a cut line runs again).
function M.todo(items, rows)
  local done = journal.done_set(rows or {})
  local out = {}
  for _, it in ipairs(items) do
    local rest = {}
    for _, impl in ipairs(it.impls) do
      if not done[journal.key({ operator = it.operator, mode = it.mode, dtype = it.dtype,
                                case_index = it.case_index, impl = impl })] then rest[#rest + 1] = impl end
    end
    if #rest > 0 then
      local copy = {}
      for k, v in pairs(it) do copy[k] = v end
      copy.impls = rest
      out[#out + 1] = copy
    end
  end
  return out
end

-- ---- journal keys and outputs ---------------------------------------------------------------------
-- An entry about a whole operator rather than one of its cases.
function M.is_operator_row(r) return r.case_index == nil end

-- The journal keys of items, in execution order (item order, then each item's implementations).
function M.item_keys(items)
  local keys = {}
  for _, it in ipairs(items) do
    for _, impl in ipairs(it.impls) do
      keys[#keys + 1] = journal.key({ operator = it.operator, mode = it.mode, dtype = it.dtype,
                                      case_index = it.case_index, impl = impl })
    end
  end
  return keys
end

-- The journal keys of items that rows do not hold (in execution order).
function M.unaccounted(items, rows)
  local done = journal.done_set(rows)
  local out = {}
  for _, k in ipairs(M.item_keys(items)) do if not done[k] then out[#out + 1] = k end end
  return out
end

-- Rows in the order an unsharded run of items would journal them (a stable sort); rows of no
-- item keep their relative order after the others.
function M.sort_rows(rows, items)
  local pos = {}
  for i, k in ipairs(M.item_keys(items)) do pos[k] = pos[k] or i end
  local tagged = {}
  for i, r in ipairs(rows) do tagged[i] = { r = r, p = pos[journal.key(r)] or math.huge, i = i } end
  table.sort(tagged, function(a, b)
    if a.p ~= b.p then return a.p < b.p end
    return a.i < b.i
  end)
  local out = {}
  for i, t in ipairs(tagged) do out[i] = t.r end
  return out
end

-- Regenerates every output of a run from its journal: results CSVs (one per operator and
-- mode, atomically) and raw/<op>.json. Same journal, same files: resumed runs end with the
-- CSVs of an uninterrupted one. plan: {operator -> {impls, dtypes, cases = {dtype -> cases}}}.
function M.write_outputs(run_dir, csv_dir, rows, plan, run_id)
  local results = require("tilebench.results")
  rows = journal.latest(rows)
  local by_op, op_order = {}, {}
  for _, r in ipairs(rows) do
    local p = plan[r.operator]
    if p then
      local c = p.cases[r.dtype] and p.cases[r.dtype][r.case_index]
      if c then r.params = c.params end
    end
    -- The names become file names: the last guard against rows that did not come through
    -- journal.read's check (util.is_name, as for --gpu).
    local bad = journal.entry_problem(r)
    if bad then error(string.format("run outputs: %s in an entry of %s", bad, run_dir), 0) end
    if not by_op[r.operator] then by_op[r.operator] = {}; op_order[#op_order + 1] = r.operator end
    local t = by_op[r.operator]
    t[#t + 1] = r
  end
  M.mkdirs(csv_dir)
  M.mkdirs(run_dir .. "/raw")
  local written = {}
  for _, opname in ipairs(op_order) do
    local oprows, cases_rows = by_op[opname], {}
    for _, r in ipairs(oprows) do if not M.is_operator_row(r) then cases_rows[#cases_rows + 1] = r end end
    -- An operator that failed to load has no cases to tabulate: its entry goes to raw/ only,
    -- and once it loads and runs (resume after a fix) its cases replace the entry.
    if #cases_rows > 0 then oprows = cases_rows end
    local p = plan[opname] or {}
    local rank = {}
    for i, d in ipairs(p.dtypes or {}) do rank[d] = i end
    local by_mode, modes = {}, {}
    for _, r in ipairs(cases_rows) do
      local m = r.mode or "default"
      if not by_mode[m] then by_mode[m] = {}; modes[#modes + 1] = m end
      by_mode[m][#by_mode[m] + 1] = r
    end
    table.sort(modes)
    for _, m in ipairs(modes) do
      local impls = p.impls
      if not impls then
        local seen = {}
        impls = {}
        for _, r in ipairs(by_mode[m]) do
          if not seen[r.impl] then seen[r.impl] = true; impls[#impls + 1] = r.impl end
        end
      end
      written[#written + 1] = results.write_csv(csv_dir, opname, m, by_mode[m], impls, rank)
    end
    local raw = journal.encode({ operator = opname, run_id = run_id, rows = oprows })
    local ok, err = sys.write_atomic(run_dir .. "/raw/" .. opname .. ".json", raw .. "\n")
    if not ok then error(err, 0) end
  end
  return written
end

return M
