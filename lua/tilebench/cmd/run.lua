-- cmd/run.lua: `tilebench run [CAMPAIGN.lua] [--operator A,B] [options]`: runs a campaign (a
-- script in campaigns/, or operators named on the command line; flags override the script),
-- each case in a worker process under a time limit, journalling every finished case so that
-- `--resume RUN-ID` continues a killed run. Prints one row per case and implementation, and
-- writes results/<gpu>/csv/<op>_<mode>.csv and results/<gpu>/runs/<run-id>/.
local options = require("tilebench.options")
local campaign = require("tilebench.campaign")
local execute = require("tilebench.execute")
local rundir = require("tilebench.rundir")
local journal = require("tilebench.journal")
local sys = require("tb.sys")
local SEARCH = require("tilebench.search").DEFAULTS -- the search's defaults, named in the help

local M = {}

local function positive(v) if v > 0 then return true end return false, "must be > 0" end
local function nonneg(v) if v >= 0 then return true end return false, "must be >= 0" end
local function shard_ok(v)
  local k, err = campaign.parse_shard(v)
  if not k then return false, err end
  return true
end
local function run_id_ok(v)
  if rundir.valid_run_id(v) then return true end
  return false, string.format("'%s' is not a run id (one path component of [A-Za-z0-9._+-])", v)
end

local function devices_ok(v)
  local list, err = require("tilebench.pools").parse(v)
  if not list then return false, err end
  return true
end

-- --autotune-from: a run id (the --resume rule) or a run directory whose name is one.
local function from_ok(v)
  if rundir.valid_run_id(v) or rundir.valid_run_id(require("tilebench.util").basename(v)) then return true end
  return false, string.format("'%s' is neither a run id nor a run directory", v)
end

M.spec = {
  { name = "operator", type = "list", metavar = "A,B", desc = "operators (names or categories) to run; replaces the campaign's" },
  { name = "dtype", type = "list", metavar = "D,..", desc = "only these dtypes" },
  { name = "impl", type = "list", metavar = "I,..", desc = "only these implementations" },
  { name = "cases", type = "string", metavar = "SPEC", desc = "case subset: 1-3,7 or first|last|ends|middle|all (1-based, per dtype)" },
  { name = "gpu", type = "label", metavar = "LABEL", desc = "results namespace results/<LABEL>/ (default: from the device name)" },
  { name = "device", type = "integer", metavar = "N", desc = "CUDA device ordinal", validate = nonneg },
  { name = "devices", type = "string", metavar = "N,M,..", validate = devices_ok,
    desc = "run on these GPUs of this host at once: one worker pool per GPU, fed from one queue; one journal and one set of CSVs (device_<impl> columns name each row's GPU)" },
  { name = "mode", type = "string", choices = { "default", "autotune" }, desc = "configuration mode (default: the campaign's, else default)" },
  { name = "autotune", type = "flag", desc = "same as --mode autotune" },
  { name = "autotune-search", type = "string", choices = { "halving", "exhaustive" },
    desc = "autotune search: screen every valid candidate briefly and time the best few fully (halving, the default), or time every one fully (exhaustive)" },
  { name = "autotune-finalists", type = "integer", metavar = "N", validate = positive,
    desc = string.format("halving: candidates in the final rung, ranked by a screen of at least %d samples each (default %d)",
      SEARCH.final_samples, SEARCH.finalists) },
  { name = "autotune-full", type = "integer", metavar = "N", validate = positive,
    desc = string.format("halving: the best N finalists by that screen get the full protocol (default %d)", SEARCH.full_n) },
  { name = "autotune-budget", type = "integer", metavar = "N", validate = positive,
    desc = string.format("halving: samples the screens may take in all, per case and implementation (default %d)",
      SEARCH.budget) },
  { name = "autotune-from", type = "string", metavar = "RUN", validate = from_ok,
    desc = "seed each autotune search with the winners of an earlier run (run id or run directory)" },
  { name = "no-precompile", type = "flag", desc = "skip the precompile phase (kernels then compile in the workers, inside each case's limit)" },
  { name = "precompile", type = "string", choices = { "ahead", "overlap" },
    desc = "ahead: compile every kernel before the first case is timed; overlap: compile while cases run, each case waiting (outside its limit) until its own kernels are compiled (default: overlap when the run autotunes, else ahead)" },
  { name = "compile-jobs", type = "integer", metavar = "N", validate = positive,
    desc = "processes of the precompile phase (default: the CPUs this process may use)" },
  { name = "gate", type = "flag", desc = "exit 3 when any case is slow, wrong, failed or timed out" },
  { name = "checks", type = "flag", desc = "honesty checks after each implementation's timed runs (inputs unchanged, kernel count, outputs recomputed, fresh inputs; docs/GENERATION.md): a failed one is status refused; implementations are then measured one after the other" },
  { name = "gate-rho", type = "number", desc = "mark verified cases under this rho slow", validate = nonneg },
  { name = "gate-elib", type = "number", desc = "mark verified cases under this E_lib slow", validate = nonneg },
  { name = "case-timeout", type = "number", metavar = "S", desc = "seconds each implementation may take (plus --timeout), counted from the previous one's result, before its worker is killed (default 60)", validate = positive },
  { name = "shard", type = "string", metavar = "K/N", desc = "run only the K-th of N deterministic shards of the work items", validate = shard_ok },
  { name = "resume", type = "string", metavar = "RUN-ID", desc = "continue an interrupted run: skip what its journal holds", validate = run_id_ok },
  { name = "run-id", type = "string", metavar = "ID", validate = run_id_ok,
    desc = "the new run's id (default: the time and a random part); refused if that run exists (tilebench slurm names each shard's run)" },
  { name = "no-isolate", type = "flag", desc = "run cases in this process (debugging; a GPU fault ends the run)" },
  { name = "dry-run", type = "flag", desc = "print the cases that would run, run nothing" },
  { name = "quiet", type = "flag", desc = "no per-case lines" },
}
-- The timer's protocol options, generated from tb.timer.options (options.protocol_flags).
for _, o in ipairs(options.protocol_flags()) do M.spec[#M.spec + 1] = o end

M.summary = "run operators or a campaign: verify, time, write results/<gpu>/csv"
M.usage = "usage: tilebench run [CAMPAIGN.lua] [--operator A,B] [options]\n"
  .. "       tilebench run --resume RUN-ID [--gpu LABEL]\n\n"
  .. "CAMPAIGN is a file or a name in campaigns/ (smoke, suite, tilebench-protocol); flags\n"
  .. "override its fields. Exit status: 0 when every case ran (whatever its status), 3 with\n"
  .. "--gate when a case is slow, wrong, failed or timed out, 1 when an operator did not load\n"
  .. "(its config.yaml or operator.lua is broken: recorded as failed, the others still run), 2 for\n"
  .. "usage errors or no driver, 130 when interrupted (the resume command is printed).\n\n"
  .. options.help(M.spec) .. "\n"

M.case_filter = function(spec)
  local f, err = campaign.case_filter(spec)
  if not f then options.usage_error("option --cases: %s", err) end
  return f
end

-- The command line's protocol fields (only those given).
function M.protocol_overrides(opts)
  local p = options.protocol_from(opts, M.spec)
  -- Naming the fixed protocol's fields selects it; max_noise the adaptive one.
  if (p.warmup or p["repeat"]) and p.mode == nil then p.mode = "fixed" end
  if p.max_noise and p.mode == nil then p.mode = "adaptive" end
  return p
end

-- Kept for callers of the first version: the protocol of an operator config under the flags.
function M.protocol(opts, config)
  return campaign.protocol_for({ config = config }, { protocol = M.protocol_overrides(opts) })
end

-- Results go under ./results (or $TILEBENCH_RESULTS_DIR).
function M.results_root()
  local env = os.getenv("TILEBENCH_RESULTS_DIR")
  return (env and env ~= "") and env or "results"
end

local function label_from_device(dev)
  local name = (dev and dev.name) or "gpu"
  local label = name:gsub("^NVIDIA ", ""):gsub("[^A-Za-z0-9._+-]+", "-")
  return label ~= "" and label or "gpu"
end

local function fmt_params(p)
  return require("tilebench.results").params_string(p)
end

-- A campaign argument: a file, or a name in <TILEBENCH_HOME>/campaigns.
local function find_campaign(arg)
  local lfs = require("lfs")
  for _, p in ipairs({ arg, TILEBENCH_HOME .. "/campaigns/" .. arg, TILEBENCH_HOME .. "/campaigns/" .. arg .. ".lua" }) do
    if lfs.attributes(p, "mode") == "file" then return p end
  end
  options.usage_error("run: no campaign file '%s' (nor campaigns/%s.lua)", arg, arg)
end

local function overrides_from(opts)
  local o = { operators = opts.operator, dtypes = opts.dtype, impls = opts.impl, cases = opts.cases,
              case_timeout = opts["case-timeout"], gate_exit = opts.gate or nil, checks = opts.checks or nil,
              protocol = M.protocol_overrides(opts) }
  if opts.autotune then opts.mode = "autotune" end
  if opts.mode then o.modes = { opts.mode } end
  if opts.devices then o.devices = require("tilebench.pools").parse(opts.devices) end
  if opts["gate-rho"] or opts["gate-elib"] then o.gate = { rho = opts["gate-rho"], elib = opts["gate-elib"] } end
  if opts.cases then M.case_filter(opts.cases) end
  return o
end

-- The settings of parsed options: the campaign script (its metric functions too) under the
-- flags. Cheap: no operator is loaded.
local function load_settings(opts, pos)
  if #pos > 1 then options.usage_error("run: unexpected argument '%s'", pos[2]) end
  local c
  if pos[1] then
    local ok, loaded = pcall(campaign.load, find_campaign(pos[1]))
    if not ok then
      if options.is_usage_error(loaded) then error(loaded, 0) end
      options.usage_error("%s", tostring(loaded))
    end
    c = loaded
  elseif not opts.operator then
    options.usage_error("run: give a campaign (e.g. 'tilebench run smoke') or --operator NAME")
  end
  return campaign.settings(c, overrides_from(opts))
end

local function plan_items(settings)
  local ok, items, broken = pcall(campaign.plan_items, settings)
  if not ok then
    if options.is_usage_error(items) then error(items, 0) end
    options.usage_error("run: %s", tostring(items))
  end
  return items, broken
end

-- Everything planning needs, from parsed options: settings, this shard's items, the
-- per-operator plan and order, the operators that did not load, and the whole campaign's items
-- (what run.json keeps).
local function plan_run(opts, pos)
  local settings = load_settings(opts, pos)
  local all_items, broken = plan_items(settings)
  local items = all_items
  if opts.shard then
    local k, n = campaign.parse_shard(opts.shard)
    items = campaign.shard(items, k, n)
    if k ~= 1 then broken = {} end -- shard 1 records them, so merged shards hold each once
  end
  local plan, order = rundir.plan_of(items)
  return settings, items, plan, order, broken, all_items
end

-- A resumed run's plan from its run.json: the items stored there (no grid expanded, the same
-- cases even if the operators changed since); operators that did not load then are tried again.
local function plan_stored(opts, pos, rec)
  local settings = load_settings(opts, pos)
  local all_items = rec.items
  local items = campaign.shard(all_items, campaign.shard_of(opts.shard))
  local broken = rec.broken or {}
  if #broken > 0 then
    local again = {}
    for k, v in pairs(settings) do again[k] = v end
    again.operators, again.exclude, again.dtypes, again.impls = {}, nil, nil, nil
    for i, b in ipairs(broken) do again.operators[i] = b.operator end
    local ok, more, still = pcall(campaign.plan_items, again)
    if ok then
      for _, it in ipairs(more) do items[#items + 1] = it end
      broken = still
    end
  end
  local plan, order = rundir.plan_of(items)
  return settings, items, plan, order, broken, all_items
end

-- (opts, pos) -> settings, items, plan, order, broken (operators that did not load), all items;
-- raises usage errors. `tilebench merge` re-plans with it the campaign of a run whose run.json
-- predates stored items (format 1).
M.plan = plan_run
-- (opts, pos) -> the settings alone (the campaign script's metric functions and gate under the
-- flags; no operator loaded): `tilebench merge --recompute-metrics` applies its metrics again.
M.settings = load_settings

-- An operator that did not load, as the run reports it (stderr: the message holds its frames).
local function report_broken(b)
  io.stderr:write(string.format("tilebench: %s: failed to load, recorded as failed: %s\n", b.operator, b.error))
end

local function print_dry_run(items, plan, order, broken)
  for _, b in ipairs(broken) do report_broken(b) end
  for _, name in ipairs(order) do
    local p = plan[name]
    io.write(string.format("%s (%s): %d cases, implementations %s\n", name, p.category or "?", p.count,
      table.concat(p.impls, ",")))
    for _, it in ipairs(items) do
      if it.operator == name then
        io.write(string.format("  %-8s %-9s #%-3d %s\n", it.mode, it.dtype, it.case_index, fmt_params(it._case.params)))
      end
    end
  end
  io.write(string.format("%d work items\n", #items))
end

local function find_run_dir(root, id, label)
  local dir, found = rundir.find_run(root, id, label)
  if not dir then options.usage_error("option --resume: %s", found) end
  return dir, found
end

local ROW_FMT = "  %-30s %-9s %-8s %12s %10s %8s  %s%s"

local function row_line(r)
  return string.format(ROW_FMT, fmt_params(r.params), r.dtype, r.impl,
    r.ms and string.format("%.5f", r.ms) or "-", r.gbs and string.format("%.1f", r.gbs) or "-",
    r.rho and string.format("%.3f", r.rho) or "-", r.status or "?",
    r.reason and ("  (" .. tostring(r.reason):gsub("\n.*", "") .. ")") or "")
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "run")
  local root = M.results_root()
  local run_id, run_dir, label, resumed, stored
  local stored_args = args
  if opts.resume then
    local allowed = { resume = true, gpu = true, quiet = true, ["no-isolate"] = true, devices = true }
    for k in pairs(opts) do
      if not allowed[k] then
        options.usage_error("option --resume: the run's own options are used; only --gpu, --quiet, --devices and --no-isolate may be added (got --%s)", k)
      end
    end
    if #pos > 0 then options.usage_error("option --resume: unexpected argument '%s'", pos[1]) end
    run_dir, label = find_run_dir(root, opts.resume, opts.gpu)
    -- run.json is read back like any input: its names build paths, so they pass the rule
    -- --gpu is held to (util.is_name), or the run is refused before anything is written.
    local why
    stored, why = rundir.read_run_json(run_dir)
    if not stored then options.usage_error("option --resume: %s", why) end
    local rec = stored
    stored_args = rec.args
    local quiet, noiso, devices = opts.quiet, opts["no-isolate"], opts.devices
    opts, pos = options.parse(rec.args, M.spec, "run")
    opts.quiet, opts["no-isolate"] = opts.quiet or quiet, opts["no-isolate"] or noiso
    opts.devices = devices or opts.devices -- the GPUs this host has now
    run_id, label, resumed = rec.run_id, rec.label or label, true
  end

  local settings, items, plan, order, broken, all_items
  if stored and stored.items then
    settings, items, plan, order, broken, all_items = plan_stored(opts, pos, stored)
  else
    settings, items, plan, order, broken, all_items = plan_run(opts, pos)
  end
  -- before --dry-run: a dry run exits as the run would
  if #items == 0 and #broken == 0 then options.usage_error("run: nothing to run (no case matches)") end
  if opts["dry-run"] then
    print_dry_run(items, plan, order, broken)
    return #broken > 0 and 1 or 0
  end

  -- --autotune-from is read before anything is written: a bad one leaves no run directory.
  local from
  if opts["autotune-from"] then
    local why
    from, why = require("tilebench.autotune").read_winners(root, opts["autotune-from"], label or opts.gpu)
    if not from then options.usage_error("option --autotune-from: %s", why) end
  end
  -- The executor: worker processes unless --no-isolate. Its hello tells the device, so the
  -- parent learns the label without touching the GPU itself.
  -- Each implementation's own limit (the worker reports each as it finishes).
  local limit_of = function(item)
    return settings.case_timeout + ((item.protocol and item.protocol.timeout) or 0)
  end
  local log_fh
  local executor
  local function log(text) if log_fh then log_fh:write(text); log_fh:flush() end end
  local progress
  local function event(text) if progress then progress:line("  ! " .. text) end end
  local devices = settings.devices
  if devices and (opts.device or opts["no-isolate"]) then
    options.usage_error("option --devices: not with --%s (each GPU has its own worker pool)", opts.device and "device" or "no-isolate")
  end
  if devices then
    executor = require("tilebench.pools").new(devices, { limit = limit_of, log = log, on_event = event,
      runner = os.getenv("TILEBENCH_RUNNER") })
  elseif opts["no-isolate"] then
    executor = require("tilebench.worker").in_process({ device = opts.device, runner = os.getenv("TILEBENCH_RUNNER") })
  else
    executor = require("tilebench.worker").isolated({ device = opts.device, limit = limit_of, log = log,
      on_event = event, runner = os.getenv("TILEBENCH_RUNNER") })
  end
  local hello = executor:hello()
  label = label or opts.gpu or label_from_device(hello.device)

  if not resumed then run_id = opts["run-id"] or rundir.new_run_id() end
  -- a directory without run.json is a run killed before it planned anything: it is taken over
  if opts["run-id"] and not resumed and require("lfs").attributes(rundir.run_path(root, label, run_id) .. "/run.json") then
    executor:close()
    options.usage_error("option --run-id: %s exists (continue it with: tilebench run --resume %s --gpu %s)",
      rundir.run_path(root, label, run_id), run_id, label)
  end
  run_dir = run_dir or rundir.run_path(root, label, run_id)
  rundir.mkdirs(run_dir)
  log_fh = io.open(run_dir .. "/worker.log", "ab")
  if not resumed then
    rundir.write_run_json(run_dir, { run_id = run_id, label = label, args = stored_args, created = sys.iso_time(),
      shard = opts.shard, items = all_items, broken = broken })
  end
  local provenance = require("tilebench.provenance")
  local record = provenance.collect({ argv = arg and { [0] = arg[0], table.unpack(arg) } or stored_args,
    campaign = settings, run_id = run_id, worker = hello, label = label, shard = opts.shard,
    isolated = not opts["no-isolate"], torch = require("tilebench.torch").versions_for(settings.impls),
    triton = require("tilebench.triton").versions_for(settings.impls) })
  local prov_path = run_dir .. (resumed and "/provenance-resume-" .. os.date("!%Y%m%dT%H%M%SZ") .. ".json"
    or "/provenance.json")
  provenance.write(prov_path, record)

  local peaks_ok, peaks = pcall(function() return require("tilebench.peaks").load(label) end)
  if not peaks_ok then
    -- A rho gate without ceilings would pass everything: that is the correctness-only gate
    -- this tool exists to replace, so it is refused rather than ignored.
    if settings.gate and settings.gate.rho then
      options.usage_error("a rho gate needs the device's ceilings: %s", tostring(peaks))
    end
    io.stderr:write("tilebench: ", tostring(peaks), " (rho is left empty)\n")
    peaks = nil
  end

  -- Skip what the journal holds; an item partly done runs its remaining implementations.
  local jpath = run_dir .. "/journal.jsonl"
  local todo = items
  local done_rows
  if resumed then
    local problems
    done_rows, problems = select(2, journal.read(jpath))
    for _, p in ipairs(problems or {}) do io.stderr:write("tilebench: ", p, "\n") end
    todo = rundir.todo(items, done_rows)
  end
  local jnl <close> = journal.open(jpath, { run_id = run_id, label = label })

  io.write(string.format("run %s%s: %s, %d cases%s, %s on %s (%s)\n", run_id, resumed and " (resumed)" or "",
    settings.name or table.concat(order, ","), #items,
    resumed and string.format(" (%d left)", #todo) or "", label, hello.device and hello.device.name or "?",
    opts["no-isolate"] and "in-process" or devices and ("isolated workers on devices " .. table.concat(devices, ","))
      or "isolated workers"))
  io.write(string.format("  results: %s\n", run_dir))
  io.stdout:flush()

  -- Autotune seeds and the precompile phase (compilation is not measurement: every kernel the
  -- items need is compiled here, in parallel, before anything is timed).
  local seeds = require("tilebench.autotune").new({ from = from, search = opts["autotune-search"],
    finalists = opts["autotune-finalists"], full_n = opts["autotune-full"], budget = opts["autotune-budget"] })
  -- a resumed run's finished cases seed their neighbours as they would have
  for _, r in ipairs(done_rows and journal.latest(done_rows) or {}) do
    if not rundir.is_operator_row(r) then seeds:record(r, { r }) end
  end
  if opts["no-precompile"] then
    record.precompile = { skipped = "--no-precompile" }
    provenance.write(prov_path, record)
  end
  local pre = require("tilebench.precompile")
  local pool -- the precompile phase running beside the cases (--precompile overlap)
  local function report_phase(sum, how)
    io.write("  ", pre.summary_line(sum), how or "", "\n")
    for _, msg in ipairs(sum.problems) do io.stderr:write("tilebench: ", msg, "\n") end
    for _, g in ipairs(sum.groups_failed) do
      io.stderr:write(string.format("tilebench: %s %s %s {%s} does not compile (%d case%s): %s\n", g.operator, g.dtype,
        g.impl, g.config, g.cases, g.cases == 1 and "" or "s", pre.first_lines(g.log)))
    end
    record.precompile = pre.record(sum)
    record.precompile.mode = pool and "overlap" or "ahead"
    provenance.write(prov_path, record)
  end
  if not opts["no-precompile"] and #todo > 0 then
    local how = opts.precompile
    if not how then
      how = "ahead"
      for _, it in ipairs(todo) do if it.mode == "autotune" then how = "overlap"; break end end
    end
    local cpus = require("tilebench.cmd.compile").cpu_count()
    local po = { quiet = opts.quiet, arch = hello.device and hello.device.arch, overlap = how == "overlap",
                 -- overlapped, one CPU stays with the worker that measures
                 jobs = opts["compile-jobs"] or (how == "overlap" and math.max(1, cpus - 1) or cpus) }
    if how == "overlap" then
      local started, skipped = pre.phase_start(todo, po)
      if started then
        pool = started
        record.precompile = { mode = "overlap", running = true, jobs = pool.sum.jobs, plans = #pool.units }
        io.write(string.format("  precompile: %d plans in %d processes, beside the cases (each case waits for its own kernels)\n",
          #pool.units, pool.sum.jobs))
      else
        record.precompile = { skipped = skipped }
        io.write("  precompile: skipped (", skipped, ")\n")
      end
      provenance.write(prov_path, record)
    else
      local sum, skipped = pre.phase(todo, po)
      if sum then
        seeds:compile_failures(sum.units, sum.failures, sum.classes, function(e) return pre.first_lines(e) end)
        report_phase(sum)
      else
        record.precompile = { skipped = skipped }
        io.write("  precompile: skipped (", skipped, ")\n")
        provenance.write(prov_path, record)
      end
    end
  end
  io.stdout:flush()
  local waited_s = 0 -- seconds the cases waited for the overlapped phase
  -- Before an item runs: its kernels compiled (overlap), and their failures known to the search.
  local function await_kernels(it)
    if not pool then return end
    local list = pool:units_of(it)
    if not list then return end
    local t0 = sys.monotonic()
    local told = 0
    pool:wait_units(list, function() return sys.interrupted() end, function(s)
      if not opts.quiet and s - told >= pre.PROGRESS_EVERY then
        told = s
        progress:line(string.format("  waiting %.0f s for %s %s case %s's kernels (precompile: %d/%d plans)", s,
          it.operator, it.dtype, tostring(it.case_index), pool.finished, #pool.units))
      end
    end)
    waited_s = waited_s + (sys.monotonic() - t0)
    seeds:compile_failures(pool.units, pool.sum.failures, pool.sum.classes, function(e) return pre.first_lines(e) end)
  end

  -- Operators that did not load: one failed entry per mode, then the others run.
  if #broken > 0 then
    local rows = {}
    for _, b in ipairs(broken) do
      report_broken(b)
      for _, mode in ipairs(settings.modes) do rows[#rows + 1] = campaign.operator_failed_row(b.operator, mode, b.error) end
    end
    jnl:append(rows)
  end

  progress = require("tilebench.progress").new({ total = #todo })
  local current_op
  sys.catch_interrupts()
  local ok, summary = pcall(execute.execute, todo, executor, jnl, {
    metrics = settings.metrics, peaks = peaks,
    interrupted = function() return sys.interrupted() or executor.fatal or executor.stopped end,
    on_item_start = function(it)
      local key = it.operator .. " " .. it.mode
      local first = key ~= current_op
      current_op = key
      await_kernels(it)
      seeds:prepare(it)
      progress:start(it)
      if first and not opts.quiet then
        progress:line(string.format("%s  %s  mode %s  gpu %s", it.operator, it._category or "?", it.mode, label))
        progress:line(string.format("  %-30s %-9s %-8s %12s %10s %8s  %s", "params", "dtype", "impl", "ms", "GB/s", "rho", "status"))
      end
    end,
    on_rows = function(it, rows)
      seeds:record(it, rows)
      if not opts.quiet then for _, r in ipairs(rows) do progress:line(row_line(r)) end end
      progress:finish(it, rows)
    end,
  })
  sys.release_interrupts()
  progress:close()
  executor:close()
  if pool then
    -- an interrupted run leaves what still compiles; a finished one waited for every unit already
    local sum = pool:finish(not ok or (type(summary) == "table" and summary.interrupted ~= nil))
    report_phase(sum, string.format(", beside the cases (they waited %.1f s for it)", waited_s))
    record.precompile.waited_s = waited_s
    provenance.write(prov_path, record)
  end
  if log_fh then log_fh:close() end
  if not ok then error(summary, 0) end

  -- Outputs from the whole journal: the same files whether or not the run was interrupted.
  local _, all_rows = journal.read(jpath)
  local written = rundir.write_outputs(run_dir, rundir.csv_dir(root, label), all_rows or {},
    plan, run_id)
  for _, path in ipairs(written) do io.write(string.format("wrote %s\n", path)) end

  local bad, has_cases = 0, {}
  local latest = journal.latest(all_rows or {})
  for _, r in ipairs(latest) do if not rundir.is_operator_row(r) then has_cases[r.operator] = true end end
  for _, r in ipairs(latest) do
    -- an operator's load failure counts until its cases ran (a resume after the fix)
    local stale = rundir.is_operator_row(r) and has_cases[r.operator]
    if execute.BAD[r.status] and not stale then bad = bad + 1 end
  end
  if summary.interrupted then
    local left = #todo - summary.done
    io.write(string.format("stopped (%s): %d of %d cases done, %d left\n", summary.interrupted,
      summary.done, #todo, left))
    io.write(string.format("resume with: tilebench run --resume %s --gpu %s\n", run_id, label))
    return executor.fatal and 1 or 130
  end
  -- Every planned (item, implementation) must have its entry now; one without (an entry the
  -- journal lost) fails the run instead of leaving a silent hole in the CSVs.
  local missing = rundir.unaccounted(items, all_rows or {})
  if #missing > 0 then
    io.stderr:write(string.format("tilebench: %d planned entr%s no journal entry, e.g. %s (run --resume %s again)\n",
      #missing, #missing == 1 and "y has" or "ies have", missing[1], run_id))
    return 1
  end
  io.write(string.format("run %s finished: %d cases; %d rows slow, wrong, failed or timed out\n", run_id,
    #todo, bad))
  if #broken > 0 then
    local names = {}
    for i, b in ipairs(broken) do names[i] = b.operator end
    io.stderr:write(string.format("tilebench: %d operator%s did not load (recorded as failed): %s\n", #broken,
      #broken == 1 and "" or "s", table.concat(names, ", ")))
    return 1
  end
  if settings.gate_exit and bad > 0 then return 3 end
  return 0
end

return M
