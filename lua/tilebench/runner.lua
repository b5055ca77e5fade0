-- runner.lua: runs one work item (operator, mode, dtype, case) in this process: inputs, the
-- reference, then per implementation poison -> run -> verify -> (autotune) -> measure, and
-- returns one result row per implementation. It never lets one implementation's failure lose
-- another's result; a sticky GPU fault marks the row fatal so the worker can be replaced.
local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local errors = require("tb.error")

local M = {}

-- The row status of each GPU error class (tb.error; the backend decides the class, host/gpu/
-- error.c): every class not named here is `failed`. A class whose context is lost (a sticky
-- fault, a hung kernel) marks the row fatal, so the worker is replaced.
M.STATUS_OF_CLASS = { oom = "oom", timeout = "timeout" }

-- Turns an error object into status, reason, fatal. A plain (string) error is a Lua failure of
-- the operator's code: failed, the context intact.
function M.classify_error(e)
  local class = errors.class(e)
  if not class then return "failed", tostring(e), false end
  return M.STATUS_OF_CLASS[class] or "failed", tostring(e), errors.classes[class].context_lost
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- The cartesian product of an implementation's declared space, in sorted key order.
function M.candidates(spec)
  local space = spec.space or {}
  local keys = sorted_keys(space)
  local out = { {} }
  for _, k in ipairs(keys) do
    local vals = space[k]
    local nxt = {}
    for _, partial in ipairs(out) do
      for _, v in ipairs(vals) do
        local c = {}
        for kk, vv in pairs(partial) do c[kk] = vv end
        c[k] = v
        nxt[#nxt + 1] = c
      end
    end
    out = nxt
  end
  -- Fill keys the space does not vary from the default.
  for _, c in ipairs(out) do
    for k, v in pairs(spec.default or {}) do if c[k] == nil then c[k] = v end end
  end
  return out
end

-- The candidates of spec at case that can run and are distinct: those `valid` accepts, less
-- the ones whose spec.launch_key(case, cfg) (optional: what the configuration compiles and
-- launches at this case) equals an earlier one's. prefer (optional: config string -> true) picks
-- the representative of a set of equal ones (the seeds); else the first in space order. Returns
-- the list of {cfg, key} kept, and {config string -> why left out} for the others: "invalid",
-- or the representative's config string.
function M.distinct_candidates(spec, case, prefer)
  local valid, lkey, rep = {}, {}, {}
  for _, cfg in ipairs(M.candidates(spec)) do
    local key = M.config_string(cfg)
    if not spec.valid or spec.valid(case, cfg) then
      valid[#valid + 1] = { cfg = cfg, key = key }
      if spec.launch_key then
        local ok, lk = pcall(spec.launch_key, case, cfg)
        if ok and type(lk) == "string" then
          lkey[key] = lk
          if not rep[lk] or (prefer and prefer[key] and not (prefer[rep[lk]])) then rep[lk] = key end
        end
      end
    end
  end
  local kept, out = {}, {}
  local valid_set = {}
  for _, c in ipairs(valid) do valid_set[c.key] = true end
  for _, cfg in ipairs(M.candidates(spec)) do
    local key = M.config_string(cfg)
    if not valid_set[key] then out[key] = "invalid" end
  end
  for _, c in ipairs(valid) do
    local lk = lkey[c.key]
    if lk and rep[lk] ~= c.key then out[c.key] = rep[lk] else kept[#kept + 1] = c end
  end
  return kept, out
end

function M.config_string(cfg)
  if cfg == nil then return "" end
  local parts = {}
  for _, k in ipairs(sorted_keys(cfg)) do parts[#parts + 1] = k .. "=" .. tostring(cfg[k]) end
  return table.concat(parts, ",")
end

local function device_family()
  local ok, props = pcall(function() return require("tb.device").props() end)
  return ok and props.family or nil
end

-- Compares every output of `outs` with the same-named reference output.
local function verify_outputs(op, case, outs, refs)
  local verify = require("tb.verify")
  local config = require("tilebench.config")
  local family = device_family()
  local report = {}
  local ok = true
  for _, name in ipairs(sorted_keys(refs)) do
    local out = outs[name]
    if out == nil then error(string.format("implementation produced no output '%s'", name), 0) end
    local atol, rtol = config.tolerance(op.config, out.dtype, family)
    local r = verify.compare(out, refs[name], { atol = atol, rtol = rtol, max_report = 4 })
    r.atol, r.rtol = atol, rtol
    report[name] = r
    if not r.ok then ok = false end
  end
  return ok, report
end

local function mismatch_reason(report)
  for _, name in ipairs(sorted_keys(report)) do
    local r = report[name]
    if not r.ok then
      local first = r.first and r.first[1]
      local where = first and string.format(" first at [%d]: got %s, expected %s", first.index,
        tostring(first.got), tostring(first.expected)) or ""
      return string.format("output '%s': %d of %d elements outside atol %g rtol %g (max abs err %.4g);%s",
        name, r.mismatches, r.numel, r.atol, r.rtol, r.max_abs or 0, where)
    end
  end
  return "mismatch"
end

-- Runs impl with cfg once into poisoned outputs and verifies. Returns ok, plan, outs, report,
-- reason, finish. A plan may come with finish(), run after the verified run and never timed: it moves
-- what the run produced into outs (the torch implementation's returned tensors) and returns
-- true, or false and why the result cannot be compared (wrong shape or dtype: status wrong).
-- clock (optional): adds the seconds of planning (loading the kernels), the first run and the
-- verification to clock.plan_s, run_s and verify_s.
local function build_and_check(op, case, spec, cfg, ins, refs, ctx, clock)
  local verify = require("tb.verify")
  local now = require("tb.sys").monotonic
  local t0 = clock and now()
  local outs = op.module.outputs(case, ins, ctx)
  for _, t in pairs(outs) do verify.poison(t) end
  local plan, finish = spec.plan(case, ins, outs, cfg, ctx)
  local t1 = clock and now()
  plan:run()
  if finish then
    local okf, why = finish()
    if not okf then return false, plan, outs, nil, why end
  end
  local t2 = clock and now()
  local ok, report = verify_outputs(op, case, outs, refs)
  if clock then
    local t3 = now()
    clock.plan_s = (clock.plan_s or 0) + (t1 - t0)
    clock.run_s = (clock.run_s or 0) + (t2 - t1)
    clock.verify_s = (clock.verify_s or 0) + (t3 - t2)
  end
  return ok, plan, outs, report, nil, finish
end

-- tb.timer.measure, keeping a load that runs below the throttle threshold: that is the clock the
-- device sustains under it (tensor-core-heavy kernels on an H200). The timer's sustained-clock
-- rule keeps such samples itself (throttle_filter "sustained"); with that rule off
-- (sustained_clock = false) and every sample dropped, the samples are re-taken without the
-- filter. Either way the row says so in clock_note. Other failures raise.
local function measure(plan, opts, row, first)
  local timer = require("tb.timer")
  local res, msg, code
  if first then res, msg, code = first.res, first.msg, first.code -- a group's result for this plan
  else res, msg, code = timer.measure(plan, opts) end
  if not res and code == "throttled" then
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    o.throttle_threshold = 0
    res, msg, code = timer.measure(plan, o)
    if res and row then
      row.clock_note = string.format("every sample under the throttle threshold; kept at the sustained %.0f MHz",
        res.sm_clock_mhz or 0)
    end
  end
  if res and res.throttle_filter == "sustained" and row then
    row.clock_note = string.format("%d of %d samples under the throttle threshold: the load sustains %.0f MHz; all kept",
      res.under_threshold or 0, res.n or 0, res.sm_clock_mhz or 0)
  end
  if not res then
    if code == "oom" then context.oom_error(msg) end
    error(msg or "tb.timer.measure failed", 0)
  end
  return res
end
M.measure = measure

-- What a plan says about itself for the results (tb.launch plans take one field, plan.note: the
-- cuDNN `lib` implementations name the engine cuDNN chose), or nil. The row carries it as
-- row.note (raw results; CSV column note_<impl>, results.lua).
function M.plan_note(plan)
  local ok, note = pcall(function() return plan.note end)
  if ok and type(note) == "string" and note ~= "" then return note end
end

-- A timer option's default, from the engine's table (tb.timer.options): its one declaration.
local function option_default(name)
  for _, o in ipairs(require("tb.timer").options) do if o.name == name then return o.default end end
end

-- Whether item's implementations are measured together in rounds: conditions = "interleave" (the
-- protocol's, else the timer's default), except in autotune mode and under honesty checks.
function M.interleaved(item)
  local conditions = (item.protocol or {}).conditions or option_default("conditions")
  return conditions == "interleave" and (item.mode or "default") ~= "autotune" and not item.checks
end

-- The row of a measured implementation. The clock and power columns (CSV <name>_<impl>, after
-- the standard ones): the median SM clock of the kept samples, and the share of them taken under
-- a power or thermal cap (empty where the power source could not be read: power_reason says why
-- in the raw results).
local function measured(row, res)
  row.ms = res.estimate or res.median -- the median, or a heavy load's trimmed mean (heavy_estimate)
  row.stats = res
  row.samples, row.events_ms = res.samples, res.events_ms
  row.clock = res.clock
  row.extra = row.extra or {}
  row.extra.sm_clock_mhz = res.sm_clock_mhz
  row.extra.cap_fraction = res.cap_fraction
  row.status = "ok"
end
M.measured = measured

local function timer_opts(protocol, override)
  local o = {}
  for k, v in pairs(protocol or {}) do o[k] = v end
  for k, v in pairs(override or {}) do o[k] = v end
  return o
end

-- The autotune search (tilebench.search) over the valid candidates of one implementation at one
-- case. A candidate `valid` rejects is never built (nor compiled: the precompile phase applies
-- the same check); one whose kernel failed to compile in the precompile phase (at, an item's
-- `autotune` field: {search = mode, seeds = {impl -> {config strings}}, compile_failed = {impl ->
-- {config string -> first lines of the log}}}) is recorded with that log and not tried again.
-- The screen is a fixed measurement of a few samples (no adaptive stopping) under the case's
-- protocol otherwise; the finalists get the full protocol, and the best finalist's measurement
-- is the row's. Returns best = {cfg, res} | nil, tried (entries in trial order), search record,
-- fatal. Screens never cool down (conditions "sequential", reading "sustained"): a cool-down of up
-- to cooldown_max per screened candidate would make the search's cost the cool-downs'; the
-- finalists get the case's conditions and reading. Nor do screens read the power source (power =
-- false): a reading is three driver queries, taken at each batch's start and end and every 5 ms
-- between, host time per candidate that the ranking does not use.
local SCREEN = { mode = "fixed", warmup = 2, timeout = 1.0, conditions = "sequential", reading = "sustained", power = false }
M.SCREEN = SCREEN

-- The precompile phase's log for impl in cfg at item's case, or nil (item.autotune.compile_failed).
function M.compile_failure(item, impl, cfg)
  local failed = ((item.autotune or {}).compile_failed or {})[impl]
  return failed and failed[M.config_string(cfg)] or nil
end

-- The search over spec's candidates at case: attempt(cand, timer options, note) -> the timer's
-- result | nil, {status, reason, fatal} builds, verifies and measures one candidate (the fake
-- runner's is synthetic). Returns best = {cfg, res, clock_note, report} | nil, tried (entries in
-- trial order: the excluded ones, then the search's), the search record, fatal.
function M.search_candidates(case, spec, impl, item, protocol, attempt)
  local at = item.autotune or {}
  local tried, cands = {}, {}
  local prefer = {}
  for _, k in ipairs((at.seeds or {})[impl] or {}) do prefer[k] = true end
  local kept, left = M.distinct_candidates(spec, case, prefer)
  local keep = {}
  for _, c in ipairs(kept) do keep[c.key] = true end
  for _, cfg in ipairs(M.candidates(spec)) do
    local key = M.config_string(cfg)
    local why = M.compile_failure(item, impl, cfg)
    if left[key] == "invalid" then
      -- excluded before compilation: listed, never built
      tried[#tried + 1] = { config = key, status = "skipped", reason = "not valid for this case" }
    elseif left[key] then
      -- the same kernel and launch as another candidate: that one is screened for both
      tried[#tried + 1] = { config = key, status = "skipped", same_as = left[key],
                            reason = "runs as " .. left[key] .. " at this case (same kernel and launch)" }
    elseif why then
      tried[#tried + 1] = { config = key, status = "failed", reason = "compile: " .. why }
    elseif keep[key] then
      cands[#cands + 1] = { key = key, cfg = cfg }
    end
  end
  -- a seed that runs as another candidate is tried as that one
  local seeds = {}
  for _, k in ipairs((at.seeds or {})[impl] or {}) do
    local r = left[k]
    seeds[#seeds + 1] = (r and r ~= "invalid") and r or k
  end
  local results = {}
  -- Where the search's wall time went (seconds): screens and full measurements, each including
  -- the first build and verification of a candidate (clock.build_s, which attempt may fill, has
  -- that part alone); total from the first candidate to the last.
  local clock = { screen_s = 0, full_s = 0, build_s = 0, screens = 0, fulls = 0 }
  local now = require("tb.sys").monotonic
  local t_start = now()
  -- and the timer's own accounts of its calls (setup: buffers, CUPTI, graph; collect: flushes)
  local function timer_parts(kind, res)
    if type(res) ~= "table" then return end
    for _, f in ipairs({ "wall_s", "setup_s", "collect_s", "wait_s", "enqueue_s" }) do
      local k = kind .. "_timer_" .. f
      clock[k] = (clock[k] or 0) + (tonumber(res[f]) or 0)
    end
  end
  local rec = require("tilebench.search").run(cands, {
    mode = at.search, seeds = seeds, finalists = at.finalists, full_n = at.full_n, budget = at.budget,
    screen = function(cand, samples)
      local t0 = now()
      local res, err = attempt(cand, timer_opts(protocol, timer_opts(SCREEN, { ["repeat"] = samples })), nil, clock)
      clock.screen_s, clock.screens = clock.screen_s + (now() - t0), clock.screens + 1
      timer_parts("screen", res)
      return res and res.median, err
    end,
    full = function(cand)
      local note = {}
      local t0 = now()
      local res, err = attempt(cand, timer_opts(protocol), note, clock)
      clock.full_s, clock.fulls = clock.full_s + (now() - t0), clock.fulls + 1
      timer_parts("full", res)
      if res then results[cand.key] = { res = res, clock_note = note.clock_note } end
      return res and (res.estimate or res.median), err
    end,
  })
  clock.total_s = now() - t_start
  rec.seconds = clock
  for _, key in ipairs(rec.order) do
    local e = rec.entries[key]
    tried[#tried + 1] = { config = key, status = e.status, reason = e.reason, ms = e.ms,
                          screen_ms = e.screen_ms, screen_samples = e.screen_samples,
                          finalist = e.finalist, full = e.full, seed = e.seed }
  end
  local won = rec.best and results[rec.best.key]
  local best = won and { cfg = rec.best.cfg, key = rec.best.key, res = won.res, clock_note = won.clock_note }
  return best, tried, rec, rec.fatal and { status = rec.fatal.status, reason = rec.fatal.reason }
end

-- The search's summary in the autotune CSV (extra columns after the standard ones, so the
-- default-mode tables keep their layout): the chosen configuration, the candidates screened,
-- the finalists given the full protocol, the search mode.
function M.autotune_columns(row)
  row.extra = row.extra or {}
  row.extra.autotune_config = row.config
  if row.search then
    row.extra.autotune_search = row.search.mode
    row.extra.autotune_screened = row.search.screened
    row.extra.autotune_finalists = #(row.search.finalists or {})
    -- the search's wall seconds (build, verify, screens and full measurements of every candidate)
    if row.search.seconds then row.extra.autotune_search_s = row.search.seconds.total_s end
  end
end

-- The real attempt: the first time a candidate is tried, its plan is built into poisoned
-- outputs and verified; that plan is then measured by every screen and the full protocol (one
-- build and one verification per candidate, however many rounds it survives).
local function autotune(op, case, spec, impl, ins, refs, ctx, item)
  local verified, built = {}, {}
  local best, tried, rec, fatal = M.search_candidates(case, spec, impl, item, item.protocol,
    function(cand, topts, note, clock)
      local ok, res = pcall(function()
        local plan = built[cand.key]
        if not plan then
          local t0 = require("tb.sys").monotonic()
          local okv, p, _, report, why = build_and_check(op, case, spec, cand.cfg, ins, refs, ctx, clock)
          if clock then clock.build_s = clock.build_s + (require("tb.sys").monotonic() - t0) end
          if not okv then return { wrong = why or mismatch_reason(report) } end
          verified[cand.key], built[cand.key], plan = report, p, p
        end
        return { res = measure(plan, topts, note) }
      end)
      if not ok then
        local status, reason, fatal = M.classify_error(res)
        return nil, { status = status, reason = reason, fatal = fatal }
      end
      if res.wrong then return nil, { status = "wrong", reason = res.wrong } end
      return res.res
    end)
  if best then best.report, best.note = verified[best.key], M.plan_note(built[best.key]) end
  return best, tried, rec, fatal
end

local function new_row(item, op, case, impl)
  return { operator = op.name, mode = item.mode or "default", dtype = case.dtype,
           case_index = item.case_index, case_id = case.id, params = case.params, impl = impl,
           category = op.category }
end

-- The grid case an item names. A planned item carries its case id: the case is looked up by it
-- (the worker takes the values from the operator's own grid, exact, not from JSON), and an id
-- the grid no longer has is an error, so a run resumed from stored items never measures another
-- case under the planned one's name. Items without an id (tests, old callers) go by index.
function M.case_of(op, item)
  local cases = opmod.cases_of(op, item.dtype)
  if item.case_id ~= nil then
    for _, c in ipairs(cases) do if c.id == item.case_id then return c end end
    error(string.format("%s: no case '%s' for dtype %s: the operator's grid changed since the run was planned",
      op.name, tostring(item.case_id), tostring(item.dtype)), 0)
  end
  local case = cases[item.case_index]
  if not case then
    error(string.format("%s: no case %s for dtype %s (%d cases)", op.name, tostring(item.case_index),
      tostring(item.dtype), #cases), 0)
  end
  return case
end

-- Fails row with error e; a lost context skips every row still unmeasured. Returns fatal.
local function fail_row(row, e, ordered)
  local status, reason, fatal = M.classify_error(e)
  row.status, row.reason, row.fatal = status, reason, fatal or nil
  row.error_class = errors.class(e)
  if fatal then
    for _, later in ipairs(ordered) do
      if later.status == nil then
        later.status, later.reason = "skipped", "GPU context lost after " .. row.impl .. " failed"
      end
    end
  end
  return fatal
end

-- Runs one work item; returns an array of rows (one per implementation, in op.impls order).
-- on_ready(), when given, is called once the inputs and the reference have run (synchronized),
-- and on_row(row) gets each implementation's row as soon as it is final, so the worker can
-- report them as they happen (the parent then limits each phase's time on its own).
-- on_progress(msg), when given, hears of the interleaved conditions' two waits, which have no
-- row yet: {verified = impl} when an implementation verified and waits for the rounds, and
-- {rounds = {impl, ...}} when the rounds of those start, so the parent can tell a hang in one
-- implementation's build or check (its own) from one in the rounds (anybody's).
-- The rows are raw results: flops, bytes, rho, speedup and the gate are the parent's
-- (tilebench.execute.case_metrics), which holds the peaks and the whole case.
-- item.candidate = {backend, file} adds the implementation `candidate` (tilebench.candidate: the
-- file in place of the backend's source); item.checks (true: every implementation; a list: those
-- named) runs tilebench.checks after each
-- implementation's timed runs (default mode), a failed check being the row's status `refused`.
function M.run_item(item, on_row, on_ready, on_progress)
  local op = opmod.load(item.operator)
  if item.candidate then require("tilebench.candidate").install(op, item.candidate) end
  local case = M.case_of(op, item)
  case.seed = case.seed or opmod.case_seed(op.name, case)
  local impls = item.impls or op.impls
  local rows, ordered = {}, {}
  for _, impl in ipairs(impls) do
    if not op.module.implementations[impl] then
      error(string.format("%s: unknown implementation '%s' (has: %s)", op.name, impl,
        table.concat(op.impls, ", ")), 0)
    end
    local row = new_row(item, op, case, impl)
    rows[impl] = row
    ordered[#ordered + 1] = row
  end

  local ctx <close> = context.new(op, case)
  -- Inputs and the reference: a failure here is every implementation's status.
  local okref, err = pcall(function()
    local ins = op.module.inputs(case, ctx)
    local refs = op.module.outputs(case, ins, ctx)
    local rplan = op.module.reference(case, ins, refs, ctx)
    rplan:run()
    return { ins = ins, refs = refs, rplan = rplan }
  end)
  if not okref then
    local status, reason, fatal = M.classify_error(err)
    for _, row in ipairs(ordered) do
      row.status, row.reason, row.fatal = status, "inputs/reference: " .. reason, fatal or nil
      row.error_class = errors.class(err)
    end
    return ordered
  end
  local ins, refs, rplan = err.ins, err.refs, err.rplan
  if on_ready then on_ready() end

  -- conditions = "interleave" (docs/MEASUREMENT.md): the verified plans wait here and are measured
  -- together in rounds after the loop, so every implementation sees the same power state. The
  -- autotune search measures its candidates as it goes. Items with honesty checks (tilebench.checks:
  -- `tilebench eval`) measure each implementation on its own and check it at once, so a mutated
  -- input or a kept result is that implementation's and no other's.
  local interleave = M.interleaved(item)
  local pending = {}

  for _, row in ipairs(ordered) do
    local spec = op.module.implementations[row.impl]
    local ok, e = pcall(function()
      if spec.supports then
        local sup, why = spec.supports(case, ctx)
        if not sup then
          row.status, row.reason = "unsupported", why or "not supported for this case"
          return
        end
      end
      local cfg = spec.default or {}
      local res
      if row.mode == "autotune" and spec.space and next(spec.space) then
        local best, tried, rec, fatal = autotune(op, case, spec, row.impl, ins, refs, ctx, item)
        row.autotune = tried
        row.search = require("tilebench.search").summary(rec)
        if fatal then
          row.status, row.reason, row.fatal = fatal.status, fatal.reason, true
          return
        end
        if not best then
          row.status, row.reason = "failed", "autotune: no candidate verified"
          for _, t in ipairs(tried) do
            if t.status == "wrong" then row.status = "wrong"; row.reason = "autotune: " .. t.reason; break end
          end
          return
        end
        cfg = best.cfg
        -- the winner's full-protocol measurement (it was verified before it was timed)
        res, row.verify, row.clock_note, row.note = best.res, best.report, best.clock_note, best.note
        row.config = M.config_string(cfg)
        M.autotune_columns(row)
      else
        local why = M.compile_failure(item, row.impl, cfg)
        if why then
          -- the precompile phase already tried this kernel: its log, not a second compile
          row.status, row.reason, row.error_class = "failed", "compile: " .. why, "compile"
          return
        end
        row.config = M.config_string(cfg)
        local checked = require("tilebench.checks").wanted(item, row.impl)
        local snapshot = checked and require("tilebench.checks").snapshot(ins, ctx)
        local okv, plan, outs, report, why, finish = build_and_check(op, case, spec, cfg, ins, refs, ctx)
        row.verify, row.note = report, M.plan_note(plan)
        if not okv then
          row.status, row.reason = "wrong", why or mismatch_reason(report)
          return
        end
        if interleave then
          pending[#pending + 1] = { row = row, plan = plan }
          if on_progress then on_progress({ verified = row.impl }) end
          return
        end
        res = measure(plan, timer_opts(item.protocol), row)
        if checked then
          local list, refused = require("tilebench.checks").after({
            op = op, case = case, ins = ins, outs = outs, plan = plan, finish = finish, rplan = rplan,
            res = res, snapshot = snapshot, ctx = ctx, mismatch = mismatch_reason,
            verify = function() return verify_outputs(op, case, outs, refs) end })
          row.checks = list
          if refused then
            row.status, row.reason = "refused", refused
            return
          end
        end
      end
      measured(row, res)
    end)
    if not ok and fail_row(row, e, ordered) then
      if on_row then on_row(row) end
      break
    end
    if on_row and row.status ~= nil then on_row(row) end
  end
  local left = {}
  for _, p in ipairs(pending) do if p.row.status == nil then left[#left + 1] = p end end
  if on_progress and #left > 1 then
    local names = {}
    for i, p in ipairs(left) do names[i] = p.row.impl end
    on_progress({ rounds = names })
  end
  M.measure_interleaved(left, timer_opts(item.protocol), ordered, on_row)
  return ordered
end


-- Measures the verified plans of pending ({row, plan}) in rounds (tb.timer.measure_group) and
-- reports each row. A result the group could not give (every sample under the throttle
-- threshold, no memory) goes through measure() as a sequential one would; a GPU failure in one
-- plan is that row's, and the others are then measured one by one unless the context is lost.
function M.measure_interleaved(pending, opts, ordered, on_row)
  local timer = require("tb.timer")
  local results, gerr, gidx
  if #pending > 1 then
    local plans = {}
    for i, p in ipairs(pending) do plans[i] = p.plan end
    results, gerr, gidx = timer.measure_group(plans, opts)
  end
  local lost = false
  if not results and gerr then lost = fail_row(pending[gidx].row, gerr, ordered) end
  for i, p in ipairs(pending) do
    if p.row.status == nil and not lost then
      local first = results and results[i]
      if first then
        first = first.code and { msg = first.message, code = first.code } or { res = first }
      end
      local ok, e = pcall(function() measured(p.row, measure(p.plan, opts, p.row, first)) end)
      if not ok then lost = fail_row(p.row, e, ordered) end
    end
  end
  if on_row then
    for _, p in ipairs(pending) do if p.row.status ~= nil then on_row(p.row) end end
  end
end

return M
