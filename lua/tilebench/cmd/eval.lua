-- cmd/eval.lua: `tilebench eval --operator X --impl FILE [--backend cuda|triton] [--dtype D,..]
-- [--cases SPEC] [--json]`: evaluates one candidate file as the operator's implementation for a
-- backend without adding it to the operator folder (lua/tilebench/candidate.lua). Steps:
--   1. screen: a Triton file importing anything but triton and pure helpers is refused;
--   2. compile, here, without a GPU (NVRTC or triton for sm_90, as the precompile phase does):
--      a file that does not compile, or lacks a kernel the plan launches, is the verdict
--      compile_error with the compiler's log; the kernels land in the cache the worker reads;
--   3. run: each case is a work item (torch, then the candidate, with the honesty checks of
--      tilebench.checks) in an isolated worker, through the campaign's executor; the parent
--      computes rho and the speedup over torch as for any run;
--   4. the verdict (tilebench.verdict) on stdout, JSON with --json; the exit status is the
--      verdict's: 0 ok, 3 wrong, 4 compile_error, 5 refused, 6 failed, 2 usage or no GPU.
local options = require("tilebench.options")
local candidate = require("tilebench.candidate")
local verdict = require("tilebench.verdict")
local util = require("tilebench.util")

local M = {}

local function positive(v) if v > 0 then return true end return false, "must be > 0" end

M.spec = {
  { name = "operator", type = "string", metavar = "NAME", desc = "the operator (required)" },
  { name = "impl", type = "string", metavar = "FILE", desc = "the candidate file (required)" },
  { name = "backend", type = "string", choices = { "cuda", "triton" }, desc = "the file's backend (default: by its extension, .cu or .py)" },
  { name = "dtype", type = "list", metavar = "D,..", desc = "only these dtypes (default: all of the operator's)" },
  { name = "cases", type = "string", metavar = "SPEC", desc = "cases per dtype: 1-3,7 or first|last|ends|middle|all (default: each dtype's representative case, the one with the most bytes)" },
  { name = "json", type = "flag", desc = "print the verdict as one JSON document" },
  { name = "device", type = "integer", metavar = "N", desc = "CUDA device ordinal" },
  { name = "case-timeout", type = "number", metavar = "S", validate = positive, desc = "seconds each implementation of a case may take before its worker is killed (default 60)" },
  { name = "no-torch", type = "flag", desc = "leave out the torch baseline (no speedup)" },
}
M.summary = "evaluate one candidate file as an operator's implementation: a verdict (generated-kernel track)"
M.usage = "usage: tilebench eval --operator NAME --impl FILE [--backend cuda|triton] [--dtype D,..] [--cases SPEC] [--json]\n\n"
  .. "Compiles FILE in place of the operator's cuda (.cu) or triton (.py) source, verifies it against the\n"
  .. "reference, times it, checks that it is honest (inputs unchanged, outputs recomputed after the timed\n"
  .. "runs and on fresh inputs, no kernel the plan did not launch) and prints a verdict. The operator folder\n"
  .. "is not changed. `tilebench task` prints what the file must contain; docs/GENERATION.md the details.\n\n"
  .. "Exit status: 0 ok, 3 wrong, 4 compile_error, 5 refused, 6 failed (runtime error, time limit, out of\n"
  .. "memory, unsupported), 2 usage error or no GPU (status no_device), 1 an error of tilebench itself.\n\n"
  .. "options:\n" .. options.help(M.spec) .. "\n"

local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  return require("lfs").currentdir() .. "/" .. path
end

-- The work items: one per (dtype, case), implementations torch (when the operator has it) and
-- the candidate, with the honesty checks on.
function M.items(op, opts, cand)
  local campaign = require("tilebench.campaign")
  local opmod = require("tilebench.operator")
  local dtypes = opmod.dtypes(op)
  if opts.dtype then
    local known = {}
    for _, d in ipairs(dtypes) do known[d] = true end
    for _, d in ipairs(opts.dtype) do
      if not known[d] then options.usage_error("option --dtype: %s has no dtype '%s' (has %s)", op.name, d, table.concat(dtypes, ", ")) end
    end
    dtypes = opts.dtype
  end
  local filter
  if opts.cases then
    local why
    filter, why = campaign.case_filter(opts.cases)
    if not filter then options.usage_error("option --cases: %s", why) end
  end
  local impls = { candidate.NAME }
  if not opts["no-torch"] and op.module.implementations.torch then table.insert(impls, 1, "torch") end
  local protocol = campaign.protocol_for(op, { protocol = {} })
  local items = {}
  for _, d in ipairs(dtypes) do
    local cases = opmod.cases_of(op, d)
    local rep = candidate.representative(op, d)
    for i, c in ipairs(cases) do
      if (filter and filter(i, #cases)) or (not filter and c == rep) then
        c.seed = c.seed or opmod.case_seed(op.name, c)
        local it = campaign.resolve_item(op, op.name, "default", d, i, c, impls, protocol, nil)
        -- the candidate alone is checked: torch is the yardstick (and its prepare() may hold data
        -- derived from the first inputs, which fresh_inputs would call stale)
        it.candidate, it.checks = cand, { candidate.NAME }
        items[#items + 1] = it
      end
    end
  end
  if #items == 0 then options.usage_error("eval: no case matches") end
  return items
end

-- Compiles the candidate at every item's case without a GPU. Returns nil when all compiled, else
-- the failure {reason, log}. A kernel the plan launches from the candidate's file must be in
-- the compiled image (a misnamed kernel would otherwise fail only when loaded, on the GPU).
function M.compile_all(op, spec, items, cand)
  local pre = require("tilebench.precompile")
  local kernel = require("tb.kernel")
  local task = require("tilebench.task")
  for _, it in ipairs(items) do
    local unit = { op = op, case = it._case, dtype = it.dtype, impl = candidate.NAME, cfg = spec.default or {} }
    local n, keys, class = pre.compile_unit(unit)
    if not n then
      local text = tostring(keys):gsub("\nstack traceback:.*", "")
      return { reason = string.format("%s %s: %s", it.dtype, it.case_id, class == "compile" and "does not compile" or "cannot be planned"),
               log = verdict.log_lines(text), class = class }
    end
    if cand.backend == "cuda" then
      local images = {}
      for _, k in ipairs(keys) do images[#images + 1] = kernel.cache_read(k.key .. ".cubin") or "" end
      local image = table.concat(images)
      if image ~= "" then
        for _, l in ipairs(task.contract(op, cand.backend, it._case).launches) do
          if l.own and not candidate.defines_kernel(image, l.name) then
            return { reason = string.format("%s %s: the file defines no kernel %s, which the plan launches (extern \"C\" __global__)",
              it.dtype, it.case_id, l.name), log = verdict.log_lines("") }
          end
        end
      end
    end
  end
  return nil
end

local function print_human(v)
  io.write(string.format("eval %s (%s) %s: %s%s\n", v.operator, v.backend, v.impl, v.status,
    v.reason and ("  (" .. tostring(v.reason):gsub("\n.*", "") .. ")") or ""))
  for _, l in ipairs(v.compile_log or {}) do io.write("  | ", l, "\n") end
  for _, c in ipairs(v.cases) do
    io.write(string.format("  %-9s %-28s %-13s %10s  rho %-6s speedup %-6s%s\n", c.dtype, c.case_id, c.status,
      c.ms and string.format("%.5f ms", c.ms) or "-", c.rho and string.format("%.3f", c.rho) or "-",
      c.speedup and string.format("%.3f", c.speedup) or "-",
      (c.status ~= "ok" and c.reason) and ("  " .. tostring(c.reason):gsub("\n.*", "")) or ""))
    for _, m in ipairs(c.mismatches or {}) do
      io.write(string.format("      %s[%d]: got %s, expected %s\n", m.output, m.index, tostring(m.got), tostring(m.expected)))
    end
  end
end

local function emit(v, json_out)
  local _, code = verdict.finish(v)
  if json_out then
    io.write(require("tilebench.json").encode_sorted(v, { indent = 2 }), "\n")
  else
    print_human(v)
  end
  return code
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "eval")
  if #pos > 0 then options.usage_error("eval: unexpected argument '%s'", pos[1]) end
  if not opts.operator then options.usage_error("eval: --operator NAME is required") end
  if not opts.impl then options.usage_error("eval: --impl FILE is required") end
  local file = absolute(opts.impl)
  local fh = io.open(file, "rb")
  if not fh then options.usage_error("eval: cannot read --impl %s", opts.impl) end
  local text = fh:read("a")
  fh:close()
  local backend = opts.backend or candidate.backend_of(file)
  if not backend then options.usage_error("eval: cannot tell the backend of %s by its extension: give --backend cuda|triton", opts.impl) end
  local okl, op = pcall(require("tilebench.operator").load, opts.operator)
  if not okl then options.usage_error("eval: %s", tostring(op)) end
  local base, why = candidate.base(op, backend)
  if not base then options.usage_error("eval: %s", why) end
  local cand = { backend = backend, file = file }
  local items = M.items(op, opts, cand)
  local v = verdict.new({ operator = op.name, backend = backend, impl = file, replaces = base.source,
                          sha256 = require("tb.kernel").sha256(text) })

  -- 1. screen
  local refused = candidate.screen(backend, text)
  if refused then
    v.status, v.reason, v.checks = "refused", "screen: " .. refused, { { name = "screen", status = "refused", reason = refused } }
    return emit(v, opts.json)
  end
  if backend == "triton" then
    local ok, tv = require("tilebench.triton").available()
    if not ok then
      v.status, v.reason = "failed", "triton is not available: " .. tostring(tv)
      return emit(v, opts.json)
    end
  end
  -- 2. compile (no GPU)
  local spec = candidate.install(op, cand)
  local failed = M.compile_all(op, spec, items, cand)
  if failed then
    v.status, v.reason, v.compile_log = "compile_error", failed.reason, failed.log
    v.compile = { ok = false }
    return emit(v, opts.json)
  end
  v.compile = { ok = true }
  -- 3. run, in isolated workers
  local stderr_log = {}
  local executor = require("tilebench.worker").isolated({ device = opts.device,
    limit = function(item) return (opts["case-timeout"] or 60) + ((item.protocol and item.protocol.timeout) or 0) end,
    log = function(t) stderr_log[#stderr_log + 1] = t end,
    on_event = function(t) io.stderr:write("tilebench: ", t, "\n") end,
    runner = os.getenv("TILEBENCH_RUNNER") })
  local okh, hello = pcall(executor.hello, executor)
  if not okh then
    executor:close()
    if require("tb.error").class(hello) == "no_driver" or tostring(hello):find("no CUDA", 1, true) then
      v.status, v.reason = "no_device", tostring(hello)
      return emit(v, opts.json)
    end
    error(hello, 0)
  end
  v.device = hello.device and hello.device.name
  local label = (v.device or "gpu"):gsub("^NVIDIA ", ""):gsub("[^A-Za-z0-9._+-]+", "-")
  local okp, peaks = pcall(function() return require("tilebench.peaks").load(label) end)
  local all = {}
  require("tilebench.execute").execute(items, executor, { append = function() end }, {
    peaks = okp and peaks or nil,
    on_rows = function(it, rows) all[#all + 1] = { it = it, rows = rows } end,
  })
  executor:close()
  for _, e in ipairs(all) do v.cases[#v.cases + 1] = verdict.case(e.it, e.rows, candidate.NAME) end
  if not okp then v.peaks_error = tostring(peaks) end
  return emit(v, opts.json)
end

return M
