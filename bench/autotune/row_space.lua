-- row_space.lua: checks the row family's search cuts (operators/_shared/oplib.lua, row_worth)
-- against an autotune run's journal in which every candidate was screened: for every case of
-- the row operators, whether the run's winner is still a candidate, and how close the best
-- candidate the cuts leave out came to the winner (its screen over the winner's; a screen of
-- 5-45 samples, the halving's rungs: a candidate dropped early has its first, shortest one).
--
--   build/tilebench script bench/autotune/row_space.lua JOURNAL.jsonl
--
-- Prints one line per case whose best cut candidate came within 3 % (or whose winner is cut),
-- then per cut (RPG, stream block, threads a row) the closest it came over all cases.
-- Exit status 1 if a winner is cut.
local json = require("tilebench.json")
local opmod = require("tilebench.operator")
local oplib = require("oplib")
local path = assert(arg[1], "usage: row_space.lua JOURNAL.jsonl")
local ROWS = { softmax = true, layernorm = true, rmsnorm = true, argmax = true, mean_reduction = true, l2_norm = true }

local function parse(s)
  local t = {}
  for k, v in tostring(s):gmatch("(%w+)=(%-?%d+)") do t[k] = tonumber(v) end
  return t
end

-- which cut leaves cfg out at this row (nil: none)
local function cut_of(cols, dtype, cfg)
  if oplib.row_worth(cols, dtype, cfg) then return nil end
  local bytes = cols * (16 // oplib.ROW_VEC[dtype])
  if (cfg.STAGES or 0) > 0 then return "stream BLOCK=" .. (oplib.stream_layout(cols, dtype, cfg)) end
  if oplib.row_rpg(cfg) > 1 and bytes >= oplib.ROW_RPG_MAX_BYTES then return "RPG 2 from 12 KiB" end
  return "TPR=" .. (oplib.row_layout(cols, dtype, cfg))
end

local cases, cut_winners, closest = 0, 0, {}
for line in io.lines(path) do
  local opname = line:match('"operator":"([%w_]+)"')
  if opname and ROWS[opname] and line:find('"impl":"cuda"', 1, true) and line:find('"mode":"autotune"', 1, true) then
    local r = json.decode(line)
    local op = opmod.load(opname)
    local spec = op.module.implementations.cuda
    local case
    for _, c in ipairs(opmod.cases_of(op, r.dtype)) do if c.id == r.case_id then case = c end end
    if case and r.status == "ok" and type(r.autotune) == "table" then
      cases = cases + 1
      local fits = oplib.row_fits[spec]
      local cols = case.params.n_cols or case.params.N or case.params.K or case.params.cols
      local win
      for _, c in ipairs(r.autotune) do if c.config == r.config then win = c.screen_ms end end
      local wcfg = parse(r.config)
      if not spec.valid(case, wcfg) then
        cut_winners = cut_winners + 1
        print(string.format("WINNER CUT %s %s %s {%s}", opname, r.dtype, r.case_id, r.config))
      end
      local best, best_cfg = {}, {}
      for _, c in ipairs(r.autotune) do
        local cfg = parse(c.config)
        if c.screen_ms and win and fits(case, cfg) and not spec.valid(case, cfg) then
          local why = cut_of(cols, case.dtype, cfg) or "?"
          local ratio = c.screen_ms / win
          if not best[why] or ratio < best[why] then best[why], best_cfg[why] = ratio, c.config end
        end
      end
      for why, ratio in pairs(best) do
        local cl = closest[why]
        if not cl or ratio < cl.ratio then
          closest[why] = { ratio = ratio, where = string.format("%s %s %s {%s}", opname, r.dtype, r.case_id, best_cfg[why]) }
        end
        if ratio < 1.03 then print(string.format("%-22s %.3f  %s %s %s {%s}", why, ratio, opname, r.dtype, r.case_id, best_cfg[why])) end
      end
    end
  end
end
print(string.format("%d cases, %d winners cut", cases, cut_winners))
local ks = {}
for k in pairs(closest) do ks[#ks + 1] = k end
table.sort(ks)
for _, k in ipairs(ks) do print(string.format("closest %-22s %.3f  %s", k, closest[k].ratio, closest[k].where)) end
os.exit(cut_winners == 0 and 0 or 1)
