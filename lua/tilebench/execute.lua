-- execute.lua: carrying out a campaign's work items (execution). Drives items through an
-- executor (tilebench.worker: isolated worker processes with attempts and time limits, or in
-- process), computes the derived columns and the gate in the parent from the raw rows, applies
-- the campaign's metrics, and journals each finished case before the next one starts.
local M = {}

-- The wire form of an item: no private fields (they hold parent-side tables).
function M.wire_item(it, extra)
  local w = {}
  for k, v in pairs(it) do if type(k) ~= "string" or k:sub(1, 1) ~= "_" then w[k] = v end end
  for k, v in pairs(extra or {}) do w[k] = v end
  return w
end

-- A row for an implementation the executor could not report on (crash, time limit).
function M.synthetic_row(it, impl, status, reason)
  return { operator = it.operator, mode = it.mode, dtype = it.dtype, case_index = it.case_index,
           case_id = it.case_id, params = it._case and it._case.params or it.params, impl = impl,
           category = it.category, status = status, reason = reason }
end

-- Applies the campaign's extra metrics to a row (errors become the metric's reason, not a crash).
function M.apply_metrics(row, metrics)
  if not metrics then return end
  local names = {}
  for n in pairs(metrics) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    local ok, v = pcall(metrics[n], row)
    row.extra = row.extra or {}
    if ok then row.extra[n] = v else row.extra[n .. "_error"] = tostring(v) end
  end
end

-- The clock and power state of each measured row (runner.lua's `measured`, issue 19), CSV
-- columns <name>_<impl> through row.extra like metrics.COLUMNS: the median SM clock of the kept
-- samples and their share under a power or thermal cap.
M.POWER_COLUMNS = { sm_clock_mhz = true, cap_fraction = true }

-- The derived columns of one case's rows, in the parent from the raw results: the item's flops
-- and bytes (resolved at planning), then rho, E_lib, speedup (against the baseline and the library
-- row of the same case) and the gate. The workers never see the peaks.
function M.case_metrics(it, rows, peaks)
  local metrics = require("tilebench.metrics")
  if it.work_error then
    for _, row in ipairs(rows) do row.metrics_error = it.work_error end
    return
  end
  local ok, err = pcall(function()
    local by_impl = {}
    for _, r in ipairs(rows) do by_impl[r.impl] = r end
    local baseline = it.baseline and by_impl[it.baseline]
    local lib = by_impl.lib
    for _, row in ipairs(rows) do
      row.flops, row.bytes, row.essential_bytes, row.essential_flops = it.flops, it.bytes, it.essential_bytes,
        it.essential_flops
      if row.ms then
        row.t_baseline = baseline and baseline.ms or nil
        row.t_lib = lib and lib.ms or nil
        local m = metrics.compute(row, { peaks = peaks, category = it.category, ceiling = it.ceiling, dtype = it.dtype })
        for k, v in pairs(m) do row[k] = v end
        for name in pairs(metrics.COLUMNS) do
          if m[name] ~= nil then
            row.extra = row.extra or {}
            row.extra[name] = m[name]
          end
        end
        if it.gate and row.status == "ok" then metrics.gate(row, it.gate) end
      end
    end
  end)
  if not ok then
    for _, row in ipairs(rows) do row.metrics_error = tostring(err) end
  end
end

M.BAD = { slow = true, wrong = true, failed = true, timeout = true, refused = true }

-- Runs items through executor:run(item) -> rows (always one per implementation), appending
-- each item's rows to the journal (durable) before the next item starts. hooks: on_rows(item,
-- rows), on_item_start(item), interrupted() -> truthy to stop between cases, metrics (the
-- campaign's extra metrics), peaks (the device's ceilings, for case_metrics). An executor with
-- run_queue (tilebench.pools: one worker pool per GPU) takes the items from one queue itself and
-- hands each back as it ends, in any order; each is journalled as it comes. Returns
-- {done = n, interrupted = signal|nil, counts = {status = n}}.
function M.execute(items, executor, jnl, hooks)
  hooks = hooks or {}
  local counts, done = {}, 0
  local function finish(it, rows)
    for _, r in ipairs(rows) do
      r.params = it._case and it._case.params or it.params -- exact grid values when planned here
      r.case_id = r.case_id or it.case_id
      r.category = r.category or it.category
    end
    M.case_metrics(it, rows, hooks.peaks)
    for _, r in ipairs(rows) do
      M.apply_metrics(r, hooks.metrics)
      counts[r.status or "?"] = (counts[r.status or "?"] or 0) + 1
    end
    jnl:append(rows)
    done = done + 1
    if hooks.on_rows then hooks.on_rows(it, rows) end
  end
  if executor.run_queue then
    local res = executor:run_queue(items, { start = hooks.on_item_start, done = finish,
                                            interrupted = hooks.interrupted })
    return { done = done, interrupted = res.interrupted, counts = counts }
  end
  for _, it in ipairs(items) do
    local sig = hooks.interrupted and hooks.interrupted()
    if sig then return { done = done, interrupted = sig, counts = counts } end
    if hooks.on_item_start then
      hooks.on_item_start(it)
      -- an interrupt while the hook waited (the overlapped precompile phase) stops before the item
      sig = hooks.interrupted and hooks.interrupted()
      if sig then return { done = done, interrupted = sig, counts = counts } end
    end
    local rows = executor:run(it)
    -- a worker stopped from outside (tilebench.worker.OUTSIDE_SIGNALS): nothing journalled, stop
    if executor.stopped then return { done = done, interrupted = executor.stopped, counts = counts } end
    finish(it, rows)
  end
  local sig = hooks.interrupted and hooks.interrupted()
  return { done = done, interrupted = sig, counts = counts }
end

return M
