-- bench/autotune/compare.lua RUNS_DIR RUNS_TXT: the agreement table of bench/autotune/agreement.sh.
-- RUNS_TXT has one line per run, "<operator> <exhaustive|halving> <run id> rc=N <seconds>s" (the
-- last line of an operator and search wins). For each autotuned row (one with a search record)
-- present in both runs of an operator: the exhaustive winner and its time, the halving choice and
-- its time, A = halving time / exhaustive time (two runs: includes run-to-run noise), and B = the
-- exhaustive run's full-protocol time of the halving choice / the exhaustive winner's (same run).
-- Prints markdown: the table, then the counts within 2 % and the runs' wall times.
local journal = require("tilebench.journal")
local util = require("tilebench.util")

local runs_dir, runs_txt = arg[1], arg[2]
if not runs_dir or not runs_txt then
  io.stderr:write("usage: compare.lua RUNS_DIR RUNS_TXT\n")
  os.exit(2)
end

local runs, order, secs = {}, {}, {}
for line in io.lines(runs_txt) do
  local op, search, id, s = line:match("^(%S+) (%S+) (%S*) rc=%-?%d+ (%d+)s")
  if op and (search == "exhaustive" or search == "halving") then
    if not runs[op] then runs[op] = {}; order[#order + 1] = op end
    if id ~= "" and util.is_name(id) then runs[op][search] = id end
    secs[search] = (secs[search] or 0) + tonumber(s)
  end
end

local function rows_of(id)
  local _, rows, problems = journal.read(runs_dir .. "/" .. id .. "/journal.jsonl")
  if not rows then io.stderr:write(problems[1], "\n"); return {} end
  local out = {}
  for _, r in ipairs(journal.latest(rows)) do
    if r.mode == "autotune" and type(r.search) == "table" then
      out[string.format("%s|%s|%s", r.dtype, tostring(r.case_index), r.impl)] = r
    end
  end
  return out
end

local function fmt(v) return v and string.format("%.4f", v) or "-" end

print("| operator | dtype | case | impl | exhaustive choice | ms | halving choice | ms | A halving/exh | B exh(halving choice)/exh best | screened | finalists |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
local n, within_a, within_b, worst_b, missing = 0, 0, 0, 1, 0
for _, op in ipairs(order) do
  local ex_id, ha_id = runs[op].exhaustive, runs[op].halving
  if not (ex_id and ha_id) then
    missing = missing + 1
  else
    local ex, ha = rows_of(ex_id), rows_of(ha_id)
    local keys = {}
    for k in pairs(ex) do if ha[k] then keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local e, h = ex[k], ha[k]
      local a = (e.ms and h.ms) and h.ms / e.ms or nil
      local b
      if e.ms then
        for _, t in ipairs(e.autotune or {}) do
          if t.config == h.config and t.ms then b = t.ms / e.ms end
        end
      end
      n = n + 1
      if a and a <= 1.02 then within_a = within_a + 1 end
      if b and b <= 1.02 then within_b = within_b + 1 end
      if b and b > worst_b then worst_b = b end
      print(string.format("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |", op, e.dtype,
        tostring(e.case_id or e.case_index), e.impl, e.config or e.status, fmt(e.ms), h.config or h.status, fmt(h.ms),
        fmt(a), fmt(b), tostring(h.search.screened), #(h.search.finalists or {})))
    end
  end
end
print()
print(string.format("%d cases; halving within 2 %% of exhaustive: %d by A (two runs), %d by B (same run); worst B %.4f",
  n, within_a, within_b, worst_b))
print(string.format("wall time: exhaustive %d s, halving %d s%s", secs.exhaustive or 0, secs.halving or 0,
  missing > 0 and string.format(" (%d operator%s without both runs)", missing, missing == 1 and "" or "s") or ""))
