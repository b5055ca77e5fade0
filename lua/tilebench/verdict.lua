-- verdict.lua: `tilebench eval`'s answer, a JSON document a program can act on (issue 20), made
-- from the compile phase's outcome and the rows the worker returned (no GPU in here: its spec
-- builds verdicts from synthetic rows).
--
--   verdict.STATUSES       the statuses, worst first, with each one's exit status
--   verdict.new(fields)    -> {format = 1, status = "ok", cases = {}, ...fields}
--   verdict.case(it, rows, cand) -> one case's entry from an item and its rows (the candidate's
--                          row and the torch row when there is one)
--   verdict.finish(v)      -> v with status, reason and summary from its cases; exit code
--   verdict.log_lines(text [, n]) -> the first n (default 40) non-empty lines of a compile log
local json = require("tilebench.json")

local M = {}

-- Worst first: the verdict's status is its worst case's. Exit statuses: 0 ok, 3 wrong, 4
-- compile_error, 5 refused, 6 failed (a runtime error, a time limit, out of memory, not
-- supported on this device); 2 is a usage error or no GPU (no_device), as for every command.
M.STATUSES = {
  { "compile_error", 4 }, { "refused", 5 }, { "wrong", 3 }, { "failed", 6 }, { "no_device", 2 }, { "ok", 0 },
}
local RANK, EXIT = {}, {}
for i, s in ipairs(M.STATUSES) do RANK[s[1]], EXIT[s[1]] = i, s[2] end
M.EXIT = EXIT

-- A row's status as the verdict's: a kernel that did not compile (error class compile) is
-- compile_error; timeout, oom, unsupported, skipped are failed.
function M.status_of(row)
  local s = row and row.status
  if s == "ok" or s == "wrong" or s == "refused" then return s end
  if row and row.error_class == "compile" then return "compile_error" end
  return "failed"
end

function M.log_lines(text, n)
  local out = json.array({})
  for l in tostring(text or ""):gmatch("[^\n]+") do
    if l:match("%S") then out[#out + 1] = l end
    if #out >= (n or 40) then break end
  end
  return out
end

function M.new(fields)
  local v = { format = 1, status = "ok", cases = json.array({}) }
  for k, val in pairs(fields or {}) do v[k] = val end
  return v
end

local function mismatches(report)
  local out = json.array({})
  if type(report) ~= "table" then return out end
  local names = {}
  for k in pairs(report) do names[#names + 1] = k end
  table.sort(names)
  for _, name in ipairs(names) do
    local r = report[name]
    if type(r) == "table" and not r.ok then
      for _, f in ipairs(r.first or {}) do
        out[#out + 1] = { output = name, index = f.index, got = f.got, expected = f.expected }
      end
    end
  end
  return out
end

function M.case(it, rows, cand)
  local row, torch
  for _, r in ipairs(rows) do
    if r.impl == cand then row = r elseif r.impl == "torch" then torch = r end
  end
  row = row or { status = "failed", reason = "no row for the candidate" }
  local c = { dtype = it.dtype, case_id = it.case_id, params = it.params, status = M.status_of(row),
              row_status = row.status, reason = row.reason, ms = row.ms, rho = row.rho, gbs = row.gbs,
              tflops = row.tflops, bound = row.bound, clock = row.clock, clock_note = row.clock_note,
              checks = row.checks, mismatches = mismatches(row.verify) }
  if c.status == "compile_error" then c.compile_log = M.log_lines(row.reason) end
  if torch then
    c.torch_ms, c.torch_status = torch.ms, torch.status
    if torch.status ~= "ok" then c.torch_reason = torch.reason end
    if row.status == "ok" then c.speedup = row.speedup end
  end
  return c
end

function M.finish(v)
  local worst
  for _, c in ipairs(v.cases) do
    if not worst or RANK[c.status] < RANK[worst.status] then worst = c end
  end
  if worst and (v.status == "ok" or RANK[worst.status] < RANK[v.status]) then
    v.status = worst.status
    if worst.status ~= "ok" then v.reason = string.format("%s %s: %s", worst.dtype, worst.case_id, tostring(worst.reason)) end
  end
  local n, ok, logsum, nsp, minrho = #v.cases, 0, 0, 0, nil
  for _, c in ipairs(v.cases) do
    if c.status == "ok" then
      ok = ok + 1
      if type(c.speedup) == "number" and c.speedup > 0 then logsum, nsp = logsum + math.log(c.speedup), nsp + 1 end
      if type(c.rho) == "number" then minrho = minrho and math.min(minrho, c.rho) or c.rho end
    end
  end
  v.summary = { cases = n, ok = ok, geomean_speedup = nsp > 0 and math.exp(logsum / nsp) or nil, min_rho = minrho }
  v.exit = EXIT[v.status] or 1
  return v, v.exit
end

return M
