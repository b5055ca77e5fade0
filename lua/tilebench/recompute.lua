-- recompute.lua: a run's derived columns brought up to date without a GPU (`tilebench merge
-- --recompute-metrics`). The journal keeps what was measured (times, samples, statuses) and what
-- the parent derived from it when the case finished (rho, speedup, E_lib, the rho_tilebench and
-- L2 columns, the gate). When the formulas (config.yaml's work expressions, metrics.lua) or the
-- device's ceilings (peaks/<gpu>.json) change, the derived part goes stale; a run resumed across
-- such a change even mixes two versions in one CSV. Here each case's entries are derived again
-- exactly as a run derives them: the item re-resolved by campaign.resolve_item from the
-- operator's current config.yaml (work, category, baseline), then execute.case_metrics against
-- the peaks given and the campaign's metric functions. No formula is repeated here.
--
--   recompute.rows(rows, items, peaks, opts) -> report
--     rows: journal entries (changed in place); items: the run's stored items (run.json) or nil;
--     opts: {loader = operator module (default tilebench.operator), gate = the run's gate for
--     entries no item covers, metrics = the campaign's metric functions or nil (then the entries
--     keep the values they were run with)}
--     report: {entries = n recomputed, cases = n, kept = {{operator, mode, dtype, case_index,
--     case_id, entries, why}, ...}}: the cases whose operator or case is gone keep their metrics.
local campaign = require("tilebench.campaign")
local execute = require("tilebench.execute")
local journal = require("tilebench.journal")
local metrics = require("tilebench.metrics")

local M = {}

local function case_key(r)
  return string.format("%s|%s|%s|%s", r.operator, r.mode or "default", r.dtype, tostring(r.case_index))
end

-- What case_metrics and the gate wrote: cleared first, so a value the current formula cannot
-- give (no peaks entry, no baseline row) is absent rather than left over from before.
local function clear_derived(r)
  for k in pairs(metrics.builtin) do r[k] = nil end
  r.t_baseline, r.t_lib, r.flops, r.bytes, r.essential_bytes, r.metrics_error = nil, nil, nil, nil, nil, nil
  r.essential_flops = nil
  if r.extra then
    for name in pairs(metrics.COLUMNS) do r.extra[name] = nil end
  end
  -- A verified case under the gate became "slow" (metrics.gate: only "ok" rows do); it is
  -- verified again now and gated again by the recomputed values.
  if r.status == "slow" then r.status, r.reason = "ok", nil end
end

-- The grid case of a journal entry in the operator as it is now: by case id (the cases' order
-- may have changed), by index for an entry that names none.
local function find_case(loader, op, dtype, case_id, case_index)
  local cases = loader.cases_of(op, dtype)
  if case_id == nil then return cases[case_index] end
  for _, c in ipairs(cases) do if c.id == case_id then return c end end
  return nil
end

function M.rows(rows, items, peaks, opts)
  opts = opts or {}
  local loader = opts.loader or require("tilebench.operator")
  local item_of = {}
  for _, it in ipairs(items or {}) do item_of[case_key(it)] = it end
  local groups, order = {}, {}
  for _, r in ipairs(journal.latest(rows)) do
    if r.case_index ~= nil then -- an operator's load failure has no case to derive
      local k = case_key(r)
      if not groups[k] then groups[k] = {}; order[#order + 1] = k end
      local g = groups[k]
      g[#g + 1] = r
    end
  end
  local report = { entries = 0, cases = 0, kept = {} }
  local ops, on_path = {}, {}
  for _, n in ipairs(loader.list()) do on_path[n] = true end
  for _, k in ipairs(order) do
    local g = groups[k]
    local first, item = g[1], item_of[k]
    local case_id = first.case_id or (item and item.case_id)
    local op = ops[first.operator]
    if op == nil then
      local ok, loaded = pcall(loader.load, first.operator)
      op = ok and loaded or { error = tostring(loaded) }
      ops[first.operator] = op
    end
    local why, c
    if not on_path[first.operator] then
      why = string.format("operator %s no longer exists (not on the operator search path)", first.operator)
    elseif op.error then
      why = string.format("operator %s does not load now: %s", first.operator, (op.error:gsub("\n.*", "")))
    else
      local ok, found = pcall(find_case, loader, op, first.dtype, case_id, first.case_index)
      if not ok then why = string.format("operator %s: %s", first.operator, tostring(found):gsub("\n.*", ""))
      elseif not found then why = string.format("case '%s' is no longer in its %s grid", tostring(case_id), first.dtype)
      else c = found end
    end
    if why then
      report.kept[#report.kept + 1] = { operator = first.operator, mode = first.mode, dtype = first.dtype,
        case_index = first.case_index, case_id = case_id, entries = #g, why = why }
    else
      -- The item as planning resolves it: the implementations it was run with decide the
      -- baseline (torch when it ran), the rows' own when no stored item covers the case.
      local impls = item and item.impls
      if not impls then
        impls = {}
        for i, r in ipairs(g) do impls[i] = r.impl end
      end
      local gate = opts.gate
      if item then gate = item.gate end
      local it = campaign.resolve_item(op, first.operator, first.mode or "default", first.dtype,
        first.case_index, c, impls, item and item.protocol, gate)
      for _, r in ipairs(g) do
        clear_derived(r)
        r.category = it.category
      end
      execute.case_metrics(it, g, peaks)
      if opts.metrics then
        for _, r in ipairs(g) do
          for name in pairs(opts.metrics) do
            if r.extra then r.extra[name], r.extra[name .. "_error"] = nil, nil end
          end
          execute.apply_metrics(r, opts.metrics)
        end
      end
      report.entries = report.entries + #g
      report.cases = report.cases + 1
    end
  end
  return report
end

return M
