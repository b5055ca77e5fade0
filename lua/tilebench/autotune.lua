-- autotune.lua: the campaign side of the autotune search (the search itself is search.lua, run by
-- the runner in the worker). It decides, in the parent, what each item's search starts from:
-- the seeds (the winner of the neighbouring case of the same operator, dtype and implementation
-- in this run, then the winner of the same or nearest case of an earlier run, --autotune-from)
-- and the kernels the precompile phase failed to compile. Both travel in the item's `autotune`
-- field: {search = "halving"|"exhaustive", finalists, full_n, budget, seeds = {impl -> {config strings}}, compile_failed =
-- {impl -> {config string -> first lines of the log}}}.
local journal = require("tilebench.journal")
local rundir = require("tilebench.rundir")
local util = require("tilebench.util")

local M = {}

local MAX_CONFIG = 512 -- a config string read from disk longer than this is not one of ours

local function gkey(op, dtype, impl) return op .. "|" .. dtype .. "|" .. impl end

-- A winner a row records: its configuration, when it is an ok autotune row with one.
local function winner_of(r)
  if r.mode == "autotune" and r.status == "ok" and type(r.config) == "string" and r.config ~= ""
     and #r.config <= MAX_CONFIG and type(r.impl) == "string" and math.type(r.case_index) == "integer" then
    return r.config
  end
end

-- The winners of an earlier run (--autotune-from RUN): run is a run id (held to the --gpu name
-- rule, found under root like --resume) or the path of a run directory. Returns a table
-- {operator|dtype|impl -> {{case_index, config}, ...}} or nil and a message.
function M.read_winners(root, run, label)
  if type(run) ~= "string" or run == "" then return nil, "no run given" end
  local dir
  if run:find("/", 1, true) then
    dir = run:gsub("/+$", "")
    local id = util.basename(dir)
    if not rundir.valid_run_id(id) then
      return nil, string.format("'%s' is not a run directory (its name is not a run id)", run)
    end
    if require("lfs").attributes(dir .. "/journal.jsonl", "mode") ~= "file" then
      return nil, string.format("'%s' is not a run directory (no journal.jsonl)", run)
    end
  else
    if not rundir.valid_run_id(run) then
      return nil, string.format("'%s' is not a run id (one path component of [A-Za-z0-9._+-])", run)
    end
    local found, why = rundir.find_run(root, run, label)
    if not found then return nil, why end
    dir = found
  end
  local _, rows, problems = journal.read(dir .. "/journal.jsonl")
  if not rows then return nil, problems[1] end
  local out, n = {}, 0
  for _, r in ipairs(journal.latest(rows)) do
    local cfg = winner_of(r)
    if cfg then
      local k = gkey(r.operator, r.dtype, r.impl)
      out[k] = out[k] or {}
      table.insert(out[k], { case_index = r.case_index, config = cfg })
      n = n + 1
    end
  end
  if n == 0 then return nil, string.format("run %s has no verified autotune result to start from", dir) end
  return out, nil, n
end

local Seeds = {}
Seeds.__index = Seeds

-- from: read_winners' table or nil; search: the search mode every item gets; finalists, budget:
-- the halving search's (search.DEFAULTS when nil).
function M.new(opts)
  opts = opts or {}
  return setmetatable({ from = opts.from or {}, search = opts.search, finalists = opts.finalists, full_n = opts.full_n,
                        budget = opts.budget, last = {}, failed = {} }, Seeds)
end

-- The seeds of impl at item: this run's latest winner of the same operator, dtype and
-- implementation (the neighbouring case: items run in case order), then the earlier run's
-- winner at the same case, else at the nearest case.
function Seeds:seeds_for(it, impl)
  local k = gkey(it.operator, it.dtype, impl)
  local out, seen = {}, {}
  local function add(c) if c and not seen[c] then seen[c] = true; out[#out + 1] = c end end
  add(self.last[k])
  local best, dist
  for _, w in ipairs(self.from[k] or {}) do
    local d = math.abs(w.case_index - it.case_index)
    if not dist or d < dist then best, dist = w.config, d end
  end
  add(best)
  return out
end

-- Records the kernels the precompile phase could not compile: units (precompile.units), the
-- phase's failures {unit index -> error} and their classes. Only NVRTC's refusals (class
-- compile) count: a plan that raised in the compile-only context (H200 figures, stand-in
-- tensors) is left to the worker, which plans it for real.
function Seeds:compile_failures(units, failures, classes, first_lines)
  for i, err in pairs(failures or {}) do
    local u = units[i]
    if u and u.impl and classes[i] == "compile" then
      local k = string.format("%s|%s|%s", u.op.name, u.dtype, tostring(u.case_index))
      self.failed[k] = self.failed[k] or {}
      self.failed[k][u.impl] = self.failed[k][u.impl] or {}
      self.failed[k][u.impl][require("tilebench.runner").config_string(u.cfg)] = first_lines(err)
    end
  end
end

-- Fills item.autotune before the item runs.
function Seeds:prepare(it)
  local at = {}
  local failed = self.failed[string.format("%s|%s|%s", it.operator, it.dtype, tostring(it.case_index))]
  if failed then at.compile_failed = failed end
  if it.mode == "autotune" then
    at.search, at.finalists, at.full_n, at.budget = self.search, self.finalists, self.full_n, self.budget
    at.seeds = {}
    for _, impl in ipairs(it.impls or {}) do
      local s = self:seeds_for(it, impl)
      if #s > 0 then at.seeds[impl] = s end
    end
  end
  it.autotune = next(at) and at or nil
end

-- Learns the winners of a finished item's rows (the next case's seeds).
function Seeds:record(it, rows)
  for _, r in ipairs(rows) do
    local cfg = winner_of(r)
    if cfg then self.last[gkey(it.operator, it.dtype, r.impl)] = cfg end
  end
end

return M
