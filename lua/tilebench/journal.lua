-- journal.lua: the run's journal, runs/<run-id>/journal.jsonl: one JSON line per finished
-- (operator, mode, dtype, case, implementation), flushed and fsynced before the next case
-- starts, so a run killed at any moment loses at most the case in flight. encode/decode are the
-- one JSON codec (tilebench.json), re-exported for the worker protocol and the run's files.
local json = require("tilebench.json")
local sys = require("tb.sys")

local M = {}

-- The JSON codec (tilebench.json: NaN and infinities as the strings "NaN", "Infinity",
-- "-Infinity", read back as numbers; integral numbers read back as integers; null as nil).
M.encode = json.encode
-- Decodes one JSON text; returns value or nil, message.
M.decode = json.decode

-- The identity of a journal entry.
function M.key(row)
  return string.format("%s|%s|%s|%s|%s", row.operator, row.mode or "default", row.dtype,
    tostring(row.case_index), row.impl)
end

local Journal = {}
Journal.__index = Journal

-- Opens path for appending (creating it). A header table, when given and the file is new,
-- becomes the first line ({journal = 1, ...}).
-- A journal that does not end in a newline was cut mid-entry (a kill, a full disk): the next
-- entry starts on a fresh line, so the cut entry alone is lost (read skips it and resume
-- re-runs its item) instead of gluing the next one to it.
function M.open(path, header)
  local exists = io.open(path, "rb")
  local fresh, cut = exists == nil, false
  if exists then
    local size = exists:seek("end")
    if size and size > 0 then
      exists:seek("set", size - 1)
      cut = exists:read(1) ~= "\n"
    end
    exists:close()
  end
  local fh, err = io.open(path, "ab")
  if not fh then error(string.format("journal: cannot open %s: %s", path, err), 0) end
  local j = setmetatable({ path = path, fh = fh }, Journal)
  if cut then
    j:_write_line("")
    j:sync()
  end
  if fresh and header then
    local h = {}
    for k, v in pairs(header) do h[k] = v end
    h.journal = 1
    j:_write_line(M.encode(h))
    j:sync()
  end
  return j
end

function Journal:_write_line(s)
  local ok, err = self.fh:write(s, "\n")
  if not ok then error(string.format("journal: write %s: %s", self.path, err), 0) end
end

-- Appends rows and makes them durable (flush + fsync) before returning.
function Journal:append(rows)
  for _, r in ipairs(rows) do self:_write_line(M.encode(r)) end
  self:sync()
end

function Journal:sync()
  local ok, err = sys.fsync(self.fh)
  if not ok then error(string.format("journal: %s", err), 0) end
end

function Journal:close()
  if self.fh then self.fh:close() end
  self.fh = nil
end
Journal.__close = Journal.close

-- What the outputs expect of a journal entry's fields (NaN and infinities are written as strings).
local NONFINITE_TEXT = { NaN = true, Infinity = true, ["-Infinity"] = true }
local function is_number(v) return type(v) == "number" or NONFINITE_TEXT[v] == true end
local ENTRY_TYPES = {
  ["a string"] = function(v) return type(v) == "string" end,
  ["a number"] = is_number,
  ["an object"] = function(v) return type(v) == "table" and #v == 0 end,
  ["a list of numbers"] = function(v)
    if type(v) ~= "table" or (next(v) ~= nil and #v == 0) then return false end
    for _, x in ipairs(v) do if not is_number(x) then return false end end
    return true
  end,
}
local ENTRY_FIELDS = {
  status = "a string", reason = "a string", config = "a string", case_id = "a string", category = "a string",
  note = "a string",
  params = "an object", stats = "an object", samples = "a list of numbers",
  ms = "a number", latency_ms = "a number", gbs = "a number", tflops = "a number", bytes = "a number",
  flops = "a number", intensity = "a number", rho = "a number", speedup = "a number", elib = "a number",
  essential_bytes = "a number", essential_flops = "a number", rho_tilebench = "a number", ceiling_gbs = "a number", l2_ratio = "a number",
  l2_near = "a number",
}

-- Why a journal entry cannot be used, or nil. Its operator and mode name output files
-- (csv/<operator>_<mode>.csv, raw/<operator>.json), so they must pass util.is_name, the rule
-- --gpu is held to: an edited journal cannot make resume or merge write outside results/.
function M.entry_problem(r)
  local util = require("tilebench.util")
  for _, field in ipairs({ "operator", "mode" }) do
    local v = r[field]
    if not (field == "mode" and v == nil) and not util.is_name(v) then
      return string.format("%s %s is not %s", field, util.describe(v), util.NAME_RULE)
    end
  end
  if r.case_index ~= nil and math.type(r.case_index) ~= "integer" then
    return string.format("case_index %s is not an integer", util.describe(r.case_index))
  end
  -- The other fields the outputs read, by type (an entry of the wrong shape is skipped and its
  -- item re-run, never passed on to the CSV writer). A case entry names its dtype and impl.
  if r.case_index ~= nil then
    for _, field in ipairs({ "dtype", "impl" }) do
      if type(r[field]) ~= "string" then
        return string.format("%s %s is not a string", field, util.describe(r[field]))
      end
    end
  end
  for field, want in pairs(ENTRY_FIELDS) do
    local v = r[field]
    if v ~= nil and not ENTRY_TYPES[want](v) then
      return string.format("%s %s is not %s", field, util.describe(v), want)
    end
  end
  return nil
end

-- Reads a journal: header (or nil), rows in order, and a list of problems (a line cut short by
-- a kill is expected only at the end; it is reported and skipped, never guessed at; so is an
-- entry whose names M.entry_problem refuses).
function M.read(path)
  local fh, err = io.open(path, "rb")
  if not fh then return nil, nil, { string.format("cannot open %s: %s", path, err) } end
  local header, rows, problems = nil, {}, {}
  local n = 0
  for line in fh:lines() do
    n = n + 1
    if line ~= "" then
      local v, derr = M.decode(line)
      if type(v) ~= "table" then
        problems[#problems + 1] = string.format("%s:%d: unreadable line skipped (%s)", path, n,
          derr or "not an object")
      elseif v.journal then
        header = header or v
      else
        local why = M.entry_problem(v)
        if why then
          problems[#problems + 1] = string.format("%s:%d: entry skipped: %s", path, n, why)
        else
          rows[#rows + 1] = v
        end
      end
    end
  end
  fh:close()
  return header, rows, problems
end

-- The last entry per key, in first-seen order.
function M.latest(rows)
  local pos, out = {}, {}
  for _, r in ipairs(rows) do
    local k = M.key(r)
    if pos[k] then out[pos[k]] = r else out[#out + 1] = r; pos[k] = #out end
  end
  return out
end

-- Joins the journals of several runs (the shards of one campaign): sources = {{name = text,
-- rows = rows}, ...}. Each source keeps its latest entry per key (as its own outputs do); the
-- result holds every entry once, sources in the order given. A key in two sources is a
-- conflict: returns nil, {{key = k, first = name, second = name}, ...} (all of them).
function M.join(sources)
  local owner, out, conflicts = {}, {}, {}
  for _, src in ipairs(sources) do
    for _, r in ipairs(M.latest(src.rows or {})) do
      local k = M.key(r)
      if owner[k] then
        conflicts[#conflicts + 1] = { key = k, first = owner[k], second = src.name }
      else
        owner[k] = src.name
        out[#out + 1] = r
      end
    end
  end
  if #conflicts > 0 then return nil, conflicts end
  return out
end

-- Set of keys the rows hold.
function M.done_set(rows)
  local s = {}
  for _, r in ipairs(rows) do s[M.key(r)] = true end
  return s
end

return M
