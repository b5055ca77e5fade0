-- cmd/run.lua: `tilebench run --operator A,B [--dtype D] [--gpu LABEL] [--device N]`: runs
-- operators case by case, prints one row per case and implementation, writes
-- results/<gpu>/csv/<op>_<mode>.csv.
local options = require("tilebench.options")

local M = {}

local function positive(v) if v > 0 then return true end return false, "must be > 0" end
local function nonneg(v) if v >= 0 then return true end return false, "must be >= 0" end

M.spec = {
  { name = "operator", type = "list", metavar = "A,B", desc = "operators to run (names)" },
  { name = "dtype", type = "list", metavar = "D,..", desc = "only these dtypes" },
  { name = "impl", type = "list", metavar = "I,..", desc = "only these implementations" },
  { name = "cases", type = "string", metavar = "SPEC", desc = "case subset: 1-3,7 or first|last|ends (1-based, per dtype)" },
  { name = "gpu", type = "label", metavar = "LABEL", desc = "results namespace results/<LABEL>/ (default: from the device name)" },
  { name = "device", type = "integer", metavar = "N", desc = "CUDA device ordinal", validate = nonneg },
  { name = "mode", type = "string", choices = { "default", "autotune" }, default = "default", desc = "configuration mode" },
  { name = "autotune", type = "flag", desc = "same as --mode autotune" },
  { name = "warmup", type = "integer", desc = "fixed protocol: warm-up runs", validate = nonneg },
  { name = "repeat", type = "integer", desc = "fixed protocol: timed runs", validate = positive },
  { name = "max-noise", type = "number", desc = "adaptive: stop under this relative stdev", validate = positive },
  { name = "min-time", type = "number", desc = "adaptive: seconds of GPU time at least", validate = nonneg },
  { name = "timeout", type = "number", desc = "adaptive: wall seconds at most per measurement", validate = positive },
  { name = "no-flush", type = "flag", desc = "do not evict the L2 before runs" },
  { name = "no-graph", type = "flag", desc = "launch eagerly instead of replaying a CUDA graph" },
  { name = "timer", type = "string", choices = { "cupti", "events" }, desc = "clock to report" },
  { name = "gate", type = "flag", desc = "exit 3 when any case is slow or wrong" },
  { name = "gate-rho", type = "number", desc = "mark verified cases under this rho slow", validate = nonneg },
  { name = "gate-elib", type = "number", desc = "mark verified cases under this E_lib slow", validate = nonneg },
  { name = "dry-run", type = "flag", desc = "print the cases that would run, run nothing" },
  { name = "quiet", type = "flag", desc = "no per-case lines" },
}

M.summary = "run operators or a campaign: verify, time, write results/<gpu>/csv"
M.usage = "usage: tilebench run --operator A,B [options]\n\n" .. options.help(M.spec) .. "\n"

-- "1-3,7", "first", "last", "ends" -> predicate over (index, count).
function M.case_filter(spec)
  if spec == nil then return function() return true end end
  if spec == "first" then return function(i) return i == 1 end end
  if spec == "last" then return function(i, n) return i == n end end
  if spec == "ends" then return function(i, n) return i == 1 or i == n end end
  local ranges = {}
  for part in spec:gmatch("[^,]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    if a then
      ranges[#ranges + 1] = { tonumber(a), tonumber(b) }
    elseif part:match("^%d+$") then
      ranges[#ranges + 1] = { tonumber(part), tonumber(part) }
    else
      options.usage_error("option --cases: bad case list '%s' (use e.g. 1-3,7 or first|last|ends)", spec)
    end
  end
  return function(i)
    for _, r in ipairs(ranges) do if i >= r[1] and i <= r[2] then return true end end
    return false
  end
end

-- The timer protocol from the flags, over the operator config's benchmark block.
function M.protocol(opts, config)
  local p = {}
  local b = config and config.benchmark or {}
  if b.use_cuda_graph ~= nil then p.graph = b.use_cuda_graph end
  if b.flush_l2 ~= nil then p.flush = b.flush_l2 end
  if opts.warmup or opts["repeat"] then
    p.mode = "fixed"
    p.warmup = opts.warmup or b.warmup or 20
    p["repeat"] = opts["repeat"] or b["repeat"] or 100
  end
  if opts["max-noise"] then p.max_noise = opts["max-noise"] end
  if opts["min-time"] then p.min_time = opts["min-time"] end
  if opts.timeout then p.timeout = opts.timeout end
  if opts["no-flush"] then p.flush = false end
  if opts["no-graph"] then p.graph = false end
  if opts.timer then p.clock = opts.timer end
  return p
end

-- Results go under ./results (or $TILEBENCH_RESULTS_DIR).
function M.results_root()
  local env = os.getenv("TILEBENCH_RESULTS_DIR")
  return (env and env ~= "") and env or "results"
end

local function default_label()
  local name = require("tb.device").props().name or "gpu"
  local label = name:gsub("^NVIDIA ", ""):gsub("[^A-Za-z0-9._+-]+", "-")
  return label ~= "" and label or "gpu"
end

local function fmt_params(p)
  return require("tilebench.results").params_string(p)
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "run")
  if #pos > 0 then options.usage_error("run: unexpected argument '%s'", pos[1]) end
  if not opts.operator then options.usage_error("run: --operator is required (e.g. --operator vector_add)") end
  if opts.autotune then opts.mode = "autotune" end
  local opmod = require("tilebench.operator")
  local runner = require("tilebench.runner")
  local filter = M.case_filter(opts.cases)

  -- Resolve every operator and its items first: bad names fail before any GPU work.
  local plans = {}
  for _, name in ipairs(opts.operator) do
    local op = opmod.load(name)
    local dtypes = opts.dtype or opmod.dtypes(op)
    local known = {}
    for _, d in ipairs(opmod.dtypes(op)) do known[d] = true end
    local items = {}
    for _, dt in ipairs(dtypes) do
      if not known[dt] then
        options.usage_error("option --dtype: operator %s has no dtype '%s' (has %s)", name, dt,
          table.concat(opmod.dtypes(op), ", "))
      end
      local cases = opmod.cases_of(op, dt)
      for i, c in ipairs(cases) do
        if filter(i, #cases) then
          items[#items + 1] = { operator = name, mode = opts.mode, dtype = dt, case_index = i,
                                impls = opts.impl, case = c }
        end
      end
    end
    plans[#plans + 1] = { op = op, items = items }
  end

  if opts["dry-run"] then
    for _, p in ipairs(plans) do
      io.write(string.format("%s (%s): %d cases, implementations %s\n", p.op.name, opts.mode, #p.items,
        table.concat(opts.impl or p.op.impls, ",")))
      for _, it in ipairs(p.items) do
        io.write(string.format("  %-9s #%-3d %s\n", it.dtype, it.case_index, fmt_params(it.case.params)))
      end
    end
    return 0
  end

  local device = require("tb.device")
  if opts.device then device.select(opts.device) end
  local label = opts.gpu or default_label()
  local peaks_ok, peaks = pcall(function() return require("tilebench.peaks").load(label) end)
  if not peaks_ok then
    io.stderr:write("tilebench: ", tostring(peaks), " (rho is left empty)\n")
    peaks = nil
  end
  local gate = nil
  if opts["gate-rho"] or opts["gate-elib"] then gate = { rho = opts["gate-rho"], elib = opts["gate-elib"] } end

  local bad = 0
  for _, p in ipairs(plans) do
    local rows = {}
    local protocol = M.protocol(opts, p.op.config)
    io.write(string.format("%s  %s  mode %s  gpu %s\n", p.op.name, p.op.category, opts.mode, label))
    io.write(string.format("  %-30s %-9s %-8s %12s %10s %8s  %s\n", "params", "dtype", "impl", "ms", "GB/s", "rho", "status"))
    for _, it in ipairs(p.items) do
      it.protocol, it.gate, it.peaks, it.case = protocol, gate, peaks, nil
      local ok, out = pcall(runner.run_item, it)
      if not ok then
        out = {}
        for _, impl in ipairs(opts.impl or p.op.impls) do
          out[#out + 1] = { operator = p.op.name, mode = opts.mode, dtype = it.dtype, case_index = it.case_index,
                            params = opmod.cases_of(p.op, it.dtype)[it.case_index].params, impl = impl,
                            status = "failed", reason = tostring(out) }
        end
      end
      for _, r in ipairs(out) do
        rows[#rows + 1] = r
        if r.status == "wrong" or r.status == "slow" or r.status == "failed" or r.status == "timeout" then bad = bad + 1 end
        if not opts.quiet then
          io.write(string.format("  %-30s %-9s %-8s %12s %10s %8s  %s%s\n", fmt_params(r.params), r.dtype, r.impl,
            r.ms and string.format("%.5f", r.ms) or "-", r.gbs and string.format("%.1f", r.gbs) or "-",
            r.rho and string.format("%.3f", r.rho) or "-", r.status or "?",
            r.reason and ("  (" .. r.reason:gsub("\n.*", "") .. ")") or ""))
          io.stdout:flush()
        end
      end
      if out[1] and out[1].fatal then
        io.stderr:write("tilebench: the GPU context is unusable after a fault; stopping "
          .. "(campaign runs isolate cases in worker processes)\n")
        local dir = string.format("%s/%s/csv", M.results_root(), label)
        require("tilebench.results").write_csv(dir, p.op.name, opts.mode, rows, opts.impl or p.op.impls)
        return 1
      end
    end
    local rank = {}
    for i, d in ipairs(opmod.dtypes(p.op)) do rank[d] = i end
    local dir = string.format("%s/%s/csv", M.results_root(), label)
    local path = require("tilebench.results").write_csv(dir, p.op.name, opts.mode, rows, opts.impl or p.op.impls, rank)
    io.write(string.format("wrote %s\n", path))
  end
  if opts.gate and bad > 0 then return 3 end
  return 0
end

return M
