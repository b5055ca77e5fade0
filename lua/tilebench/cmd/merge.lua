-- cmd/merge.lua: `tilebench merge RUN-DIR... [--gpu LABEL] [--output RUN-ID]`: joins the runs of
-- one campaign's shards (`tilebench run --shard k/n` on several nodes) into one run,
-- results/<gpu>/runs/<run-id>/ (journal.jsonl with every entry once, run.json, provenance.json
-- naming each merged run with its own provenance), and rebuilds results/<gpu>/csv/<op>_<mode>.csv
-- and raw/<op>.json with rundir.write_outputs, so the n shards merged give the CSVs of the
-- unsharded run. Runs of different campaigns, settings, devices or shard counts, a shard given
-- twice and an entry in two runs are refused; missing shards are a warning. No GPU is touched.
-- --recompute-metrics derives every entry's metrics again from its measured time with the
-- current formulas and peaks/<gpu>.json (tilebench.recompute), also for a single run.
local options = require("tilebench.options")
local campaign = require("tilebench.campaign")
local rundir = require("tilebench.rundir")
local journal = require("tilebench.journal")
local util = require("tilebench.util")
local sys = require("tb.sys")

local M = {}

local function run_id_ok(v)
  if rundir.valid_run_id(v) then return true end
  return false, string.format("'%s' is not a run id (one path component of [A-Za-z0-9._+-])", v)
end

M.spec = {
  { name = "gpu", type = "label", metavar = "LABEL", desc = "results namespace results/<LABEL>/ (default: the runs' label)" },
  { name = "output", type = "string", metavar = "RUN-ID", desc = "id of the merged run (default: a new one)", validate = run_id_ok },
  { name = "complete", type = "flag",
    desc = "refuse a missing or incomplete shard instead of warning (the Slurm merge job: tilebench slurm)" },
  { name = "recompute-metrics", type = "flag",
    desc = "derive rho, speedup, E_lib, the gate... again from the times (current formulas and peaks)" },
}

M.summary = "join the runs of a sharded campaign into one run and rebuild its CSVs"
M.usage = "usage: tilebench merge RUN-DIR... [--gpu LABEL] [--output RUN-ID] [--complete] [--recompute-metrics]\n\n"
  .. "RUN-DIR is results/<gpu>/runs/<run-id> (or a run id found under results/*/runs) of one\n"
  .. "shard of a campaign run with --shard k/n. The merged run gets every journal entry once;\n"
  .. "results/<gpu>/csv/<op>_<mode>.csv and its raw/<op>.json are rebuilt from it. Missing\n"
  .. "shards are reported (`tilebench run --resume` of the merged run runs them).\n"
  .. "--recompute-metrics (also with one run) derives every measured entry's metrics again from\n"
  .. "its time: work from the operator's current config.yaml, ceilings from peaks/<LABEL>.json;\n"
  .. "an entry whose operator or case is gone keeps its metrics (a warning). Exit status:\n"
  .. "0 merged, 2 for usage errors and runs that do not belong together.\n\n"
  .. options.help(M.spec) .. "\n"

local function warn(fmt, ...)
  io.stderr:write("tilebench: merge: warning: ", string.format(fmt, ...), "\n")
end

local function is_dir(p) return require("lfs").attributes(p, "mode") == "directory" end

-- A RUN-DIR argument: a directory, or a run id under <root>/*/runs.
local function resolve(arg, root)
  local d = arg:gsub("(.)/+$", "%1")
  if is_dir(d) then return d end
  if rundir.valid_run_id(arg) and is_dir(root) then
    for gpu in require("lfs").dir(root) do
      local p = string.format("%s/%s/runs/%s", root, gpu, arg)
      if gpu:sub(1, 1) ~= "." and is_dir(p) then return p end
    end
  end
  options.usage_error("merge: no run directory '%s'", arg)
end

local function read_json(path)
  local fh = io.open(path, "rb")
  if not fh then return nil end
  local v = journal.decode(fh:read("a"))
  fh:close()
  return type(v) == "table" and v or nil
end

-- The args of a run without its --shard (what the whole campaign was run with).
local function without_shard(args)
  local out, skip = {}, false
  for _, a in ipairs(args or {}) do
    if skip then skip = false
    elseif a == "--shard" then skip = true
    elseif not a:match("^%-%-shard=") then out[#out + 1] = a end
  end
  return out
end

-- The shard text a run was started with: provenance.shard, else its stored args.
local function shard_text(rec, prov)
  if prov.shard then return prov.shard end
  for i, a in ipairs(rec.args or {}) do
    if a == "--shard" then return rec.args[i + 1] end
    local v = a:match("^%-%-shard=(.*)$")
    if v then return v end
  end
  return nil
end

-- Loads one run directory: {dir, id, label, shard_k, shard_n, rec (run.json), prov, rows}.
local function load_run(dir)
  local rec, why = rundir.read_run_json(dir)
  if not rec then options.usage_error("merge: %s (not a run directory?)", why) end
  local prov = read_json(dir .. "/provenance.json")
  if not prov then options.usage_error("merge: %s/provenance.json is missing or unreadable", dir) end
  local jpath = dir .. "/journal.jsonl"
  if require("lfs").attributes(jpath, "mode") ~= "file" then
    options.usage_error("merge: %s/journal.jsonl is missing", dir)
  end
  local _, rows, problems = journal.read(jpath)
  for _, p in ipairs(problems or {}) do warn("%s", p) end
  local text = shard_text(rec, prov)
  local k, n = campaign.shard_of(text)
  if not k then options.usage_error("merge: %s: bad shard '%s' (%s)", dir, tostring(text), n) end
  return { dir = dir, id = rec.run_id or util.basename(dir), label = rec.label or prov.gpu, rec = rec,
           prov = prov, rows = rows or {}, shard_k = k, shard_n = n }
end

-- What must agree between the shards of one campaign: name -> canonical text.
local function identity(r)
  local c = r.prov.campaign or {}
  local function enc(v) return util.json_encode(v == nil and util.null or v) end
  return {
    { "campaign name", enc(c.name) },
    { "operators", enc(c.operators) },
    { "dtypes", enc(c.dtypes) },
    { "implementations", enc(c.impls) },
    { "cases", enc(c.cases) },
    { "modes", enc(c.modes) },
    { "case timeout", enc(c.case_timeout) },
    { "protocol", enc(r.prov.protocol) },
    { "gate", enc(r.prov.gate) },
    { "device", enc(r.prov.device and r.prov.device.name) },
    { "shard count", tostring(r.shard_n) },
  }
end

-- The ceilings a recomputation uses: peaks/<label>.json as it is now, and what names it in the
-- provenance (path, its SHA-256, when and by which tilebench it was measured).
local function current_peaks(label)
  local ok, p = pcall(require("tilebench.peaks").load, label)
  if not ok then options.usage_error("merge: --recompute-metrics needs the device's ceilings: %s", tostring(p)) end
  local fh = io.open(p._path, "rb")
  local text = fh and fh:read("a")
  if fh then fh:close() end
  return p, { path = p._path, sha256 = text and require("tb.kernel").sha256(text), gpu = p.gpu,
              measured_at = p.measured_at, tilebench = p.tilebench }
end

-- The campaign's metric functions (its script, named by the run's args), so that columns derived
-- from rho are derived again too: settings.metrics, or nil and why they could not be had.
local function campaign_metrics(runs, settings)
  if settings then return settings.metrics end
  local run = require("tilebench.cmd.run")
  local ok, s = pcall(function()
    local opts, pos = options.parse(without_shard(runs[1].rec.args), run.spec, "run")
    return run.settings(opts, pos)
  end)
  if not ok then return nil, tostring(s) end
  return s.metrics
end

-- Derives every entry's metrics again (tilebench.recompute); says what it kept and why.
local function recompute_rows(runs, rows, items, settings, peaks)
  local fns, why = campaign_metrics(runs, settings)
  if why then
    warn("the campaign's settings do not load (%s): its own metric columns keep the values they were run with",
      (why:gsub("\n.*", "")))
  end
  local report = require("tilebench.recompute").rows(rows, items, peaks, { gate = runs[1].prov.gate, metrics = fns })
  local by_reason, reasons = {}, {}
  for _, k in ipairs(report.kept) do
    if not by_reason[k.why] then by_reason[k.why] = 0; reasons[#reasons + 1] = k.why end
    by_reason[k.why] = by_reason[k.why] + k.entries
  end
  for _, w in ipairs(reasons) do
    warn("%s: %d entr%s keep the metrics they were run with", w, by_reason[w], by_reason[w] == 1 and "y" or "ies")
  end
  return report
end

local function check_one_campaign(runs)
  local first = runs[1]
  local want = identity(first)
  for i = 2, #runs do
    local got = identity(runs[i])
    for j, f in ipairs(want) do
      if got[j][2] ~= f[2] then
        options.usage_error("merge: %s and %s are not shards of one campaign: they differ in %s (%s vs %s)",
          first.dir, runs[i].dir, f[1], f[2], got[j][2])
      end
    end
  end
  local by_k = {}
  for _, r in ipairs(runs) do
    if by_k[r.shard_k] then
      options.usage_error("merge: shard %d/%d given twice: %s and %s", r.shard_k, r.shard_n, by_k[r.shard_k].dir, r.dir)
    end
    by_k[r.shard_k] = r
  end
  local missing = {}
  for k = 1, first.shard_n do if not by_k[k] then missing[#missing + 1] = k end end
  return missing
end

-- Re-plans the campaign from the first run's args (no shard): settings, items, plan, or nil and
-- why. Checked against the journals: a case whose id differs means the operators changed.
-- The campaign's items: those run.json stores (format 2: as planned, nothing re-expanded), else
-- re-planned from the first run's args (format 1).
local function replan(runs, rows)
  if runs[1].rec.items then
    return nil, runs[1].rec.items, rundir.plan_of(runs[1].rec.items)
  end
  local run = require("tilebench.cmd.run")
  local ok, settings, items, plan = pcall(function()
    local opts, pos = options.parse(without_shard(runs[1].rec.args), run.spec, "run")
    opts.shard, opts.resume, opts["dry-run"] = nil, nil, nil
    return run.plan(opts, pos)
  end)
  if not ok then return nil, nil, nil, tostring(settings) end
  for _, r in ipairs(rows) do
    local p = plan[r.operator]
    local c = p and p.cases[r.dtype] and p.cases[r.dtype][r.case_index]
    if r.case_id and (not c or c.id ~= r.case_id) then
      return nil, nil, nil, string.format("%s %s case #%s is '%s' in the journal but '%s' now (operators changed?)",
        r.operator, r.dtype, tostring(r.case_index), tostring(r.case_id), c and tostring(c.id) or "absent")
    end
  end
  return settings, items, plan
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "merge")
  if #pos == 0 then options.usage_error("merge: give the run directories to merge (results/<gpu>/runs/<run-id>)") end
  local root = require("tilebench.cmd.run").results_root()

  local runs, seen_dir = {}, {}
  for _, a in ipairs(pos) do
    local d = resolve(a, root)
    if seen_dir[d] then options.usage_error("merge: run directory '%s' given twice", a) end
    seen_dir[d] = true
    runs[#runs + 1] = load_run(d)
  end
  local missing = check_one_campaign(runs)
  if opts.complete and #missing > 0 then
    local ks = {}
    for i, k in ipairs(missing) do ks[i] = string.format("%d/%d", k, runs[1].shard_n) end
    options.usage_error("merge: --complete: shard%s %s missing (not among the runs given)", #ks == 1 and "" or "s",
      table.concat(ks, ", "))
  end

  local label = opts.gpu
  if not label then
    for _, r in ipairs(runs) do
      if r.label ~= runs[1].label then
        options.usage_error("merge: the runs have different GPU labels (%s: %s, %s: %s); give --gpu LABEL",
          runs[1].dir, tostring(runs[1].label), r.dir, tostring(r.label))
      end
    end
    label = runs[1].label
    if not util.is_name(label) then
      options.usage_error("merge: %s/run.json names no usable GPU label (%s is not %s); give --gpu LABEL",
        runs[1].dir, util.describe(label), util.NAME_RULE)
    end
  end
  for _, r in ipairs(runs) do
    local sha, sha1 = r.prov.tilebench and r.prov.tilebench.build_sha, runs[1].prov.tilebench and runs[1].prov.tilebench.build_sha
    if sha ~= sha1 then warn("%s was run by tilebench %s, %s by %s", r.dir, tostring(sha), runs[1].dir, tostring(sha1)) end
  end

  local peaks, peaks_rec
  if opts["recompute-metrics"] then peaks, peaks_rec = current_peaks(label) end

  -- Every entry once: each run's latest per key; a key in two runs is refused.
  local sources = {}
  for _, r in ipairs(runs) do sources[#sources + 1] = { name = r.dir, rows = r.rows } end
  local rows, conflicts = journal.join(sources)
  if not rows then
    local c = conflicts[1]
    options.usage_error("merge: %d journal entr%s in more than one run, e.g. %s in both %s and %s",
      #conflicts, #conflicts == 1 and "y is" or "ies are", c.key, c.first, c.second)
  end

  local settings, items, plan, why = replan(runs, rows)
  if not items then
    local env = runs[1].prov.environment or {}
    local path = env.TILEBENCH_OPERATOR_PATH
    if path and path ~= os.getenv("TILEBENCH_OPERATOR_PATH") then
      why = string.format("%s; the runs had TILEBENCH_OPERATOR_PATH=%s", why, path)
    end
    if opts.complete then
      options.usage_error("merge: --complete: cannot tell whether the shards are complete: the campaign does not re-plan (%s)", why)
    end
    warn("cannot re-plan the campaign (%s): implementation and dtype order taken from the journals", why)
    plan = {}
  else
    local n = runs[1].shard_n
    for _, r in ipairs(runs) do
      local done = journal.done_set(r.rows)
      local want = rundir.item_keys(campaign.shard(items, r.shard_k, n))
      local lack = 0
      for _, k in ipairs(want) do if not done[k] then lack = lack + 1 end end
      if lack > 0 and opts.complete then
        options.usage_error("merge: --complete: %s (shard %d/%d) lacks %d of its %d entries (failed, preempted or "
          .. "killed?); finish it with: tilebench run --resume %s --gpu %s (tilebench slurm: submit the same "
          .. "command again)", r.dir, r.shard_k, n, lack, #want, r.id, tostring(r.label))
      elseif lack > 0 then
        warn("%s (shard %d/%d) lacks %d of its %d entries (interrupted? finish it first with: tilebench run --resume %s --gpu %s)",
          r.dir, r.shard_k, n, lack, #want, r.id, tostring(r.label))
      end
    end
    local planned = {}
    for _, k in ipairs(rundir.item_keys(items)) do planned[k] = true end
    local extra = 0
    for _, r in ipairs(rows) do if not planned[journal.key(r)] then extra = extra + 1 end end
    if extra > 0 then warn("%d journal entries are not in the campaign's plan (kept)", extra) end
    rows = rundir.sort_rows(rows, items)
  end

  local recomputed
  if peaks then
    recomputed = recompute_rows(runs, rows, items, settings, peaks)
    recomputed.peaks = peaks_rec
  end

  local out_id = opts.output or rundir.new_run_id()
  local out_dir = rundir.run_path(root, label, out_id)
  if require("lfs").attributes(out_dir) then options.usage_error("option --output: %s already exists", out_dir) end
  rundir.mkdirs(out_dir)

  local ids, shards = {}, {}
  for _, r in ipairs(runs) do ids[#ids + 1] = r.id; shards[#shards + 1] = string.format("%d/%d", r.shard_k, r.shard_n) end
  local jnl <close> = journal.open(out_dir .. "/journal.jsonl", { run_id = out_id, label = label, merged_from = ids,
    recomputed_metrics = recomputed and true or nil })
  jnl:append(rows)
  jnl:close()
  local args_run = without_shard(runs[1].rec.args)
  rundir.write_run_json(out_dir, { run_id = out_id, label = label, args = args_run, created = sys.iso_time(),
    merged_from = ids, items = items, broken = runs[1].rec.broken })

  local provenance = require("tilebench.provenance")
  local first = runs[1].prov
  local record = provenance.collect({ argv = arg and { [0] = arg[0], table.unpack(arg) } or args, run_id = out_id,
    label = label })
  record.started, record.merged = nil, sys.iso_time()
  record.campaign, record.protocol, record.gate, record.device = first.campaign, first.protocol, first.gate, first.device
  record.shard_count = runs[1].shard_n
  if #missing > 0 then record.missing_shards = missing end
  record.merged_from = {}
  for i, r in ipairs(runs) do
    record.merged_from[i] = { run_id = r.id, dir = r.dir, shard = shards[i], entries = #journal.latest(r.rows),
                              provenance = r.prov }
  end
  if recomputed then
    -- The derived columns are this tilebench's (record.tilebench: version, build and checkout)
    -- on these ceilings, not the measuring runs'.
    record.recomputed_metrics = { at = record.merged, peaks = recomputed.peaks, entries = recomputed.entries,
      cases = recomputed.cases, kept = recomputed.kept }
  end
  provenance.write(out_dir .. "/provenance.json", record)

  local written = rundir.write_outputs(out_dir, rundir.csv_dir(root, label), rows, plan, out_id)
  local name = (settings and settings.name) or (first.campaign and first.campaign.name)
  io.write(string.format("merged %d run%s (shard%s %s) of %s: %d entries into %s\n", #runs,
    #runs == 1 and "" or "s", #runs == 1 and "" or "s", table.concat(shards, ", "),
    name and ("campaign " .. name) or "one campaign", #rows, out_dir))
  if recomputed then
    io.write(string.format("recomputed the metrics of %d entries (%d cases) against %s%s\n", recomputed.entries,
      recomputed.cases, recomputed.peaks.path,
      #recomputed.kept > 0 and string.format("; %d cases kept theirs", #recomputed.kept) or ""))
  end
  for _, path in ipairs(written) do io.write(string.format("wrote %s\n", path)) end
  if #missing > 0 then
    local ks = {}
    for i, k in ipairs(missing) do ks[i] = string.format("%d/%d", k, runs[1].shard_n) end
    warn("shard%s %s missing: the merge lacks their cases (run them with: tilebench run --resume %s --gpu %s)",
      #ks == 1 and "" or "s", table.concat(ks, ", "), out_id, label)
  end
  return 0
end

return M
