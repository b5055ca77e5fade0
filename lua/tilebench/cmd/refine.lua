-- cmd/refine.lua: `tilebench refine --operator X --backend B --generator CMD [--iterations 10]
-- [--stop-rho 0.8] [--dtype D,..] [--run-dir DIR]` and `tilebench refine --resume DIR`: the
-- generated-kernel track's loop (issue 20). Per dtype, on its representative case: the prompt
-- (tilebench.refine: the task, then the trajectory, the previous file and its verdict, the best
-- verified file after a failure or a regression) goes to CMD on stdin; CMD (any program: a
-- script around a model's API) writes the file and a JSON line with the tokens it used;
-- `tilebench eval` judges the file; the loop stops at --iterations or once a file verifies at
-- rho >= --stop-rho. Every prompt, response, file, verdict and token count stays in the run
-- directory; an iteration is done once its iteration.json exists, so --resume continues where a
-- killed run stopped. summary.json gives verify-clean iterations, the correctness-gated speedup,
-- tokens and token efficiency. docs/GENERATION.md shows how to plug in a model.
local options = require("tilebench.options")
local refine = require("tilebench.refine")
local json = require("tilebench.json")
local util = require("tilebench.util")
local sys = require("tb.sys")

local M = {}

local function positive(v) if v > 0 then return true end return false, "must be > 0" end
local function nonneg(v) if v >= 0 then return true end return false, "must be >= 0" end

M.spec = {
  { name = "operator", type = "string", metavar = "NAME", desc = "the operator (required)" },
  { name = "backend", type = "string", choices = { "cuda", "triton" }, desc = "the programming model the files are written in (required)" },
  { name = "generator", type = "string", metavar = "CMD", desc = "shell command that reads a prompt on stdin and writes a file and a {\"tokens\": N} line (required)" },
  { name = "iterations", type = "integer", metavar = "N", validate = positive, desc = "iterations per dtype at most (default 10)" },
  { name = "stop-rho", type = "number", metavar = "R", validate = nonneg, desc = "stop a dtype once a file verifies at rho >= R (default 0.8)" },
  { name = "dtype", type = "list", metavar = "D,..", desc = "only these dtypes (default: the operator's)" },
  { name = "run-dir", type = "string", metavar = "DIR", desc = "the run directory (default: <results>/refine/<operator>-<backend>-<run id>)" },
  { name = "resume", type = "string", metavar = "DIR", desc = "continue the run in DIR with its own settings" },
}
M.summary = "drive a model through iterations of write, eval, feedback (generated-kernel track)"
M.usage = "usage: tilebench refine --operator NAME --backend cuda|triton --generator CMD [--iterations N]\n"
  .. "                        [--stop-rho R] [--dtype D,..] [--run-dir DIR]\n"
  .. "       tilebench refine --resume DIR\n\n"
  .. "CMD runs through sh, in the current directory, with the prompt on stdin and TILEBENCH_ITERATION,\n"
  .. "TILEBENCH_OPERATOR, TILEBENCH_BACKEND, TILEBENCH_DTYPE, TILEBENCH_RUN_DIR and TILEBENCH_ITERATION_DIR\n"
  .. "set; it writes the file (the last fenced block of its output, or all of it) and a JSON line\n"
  .. "{\"tokens\": N} or {\"tokens\": {\"input\": a, \"output\": b}}.\nExit status 0 once every dtype's loop ended, whatever the verdicts (summary.json).\n\n"
  .. "options:\n" .. options.help(M.spec) .. "\n"

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local read = require("tilebench.util").read_file_if

local function exists(path) return require("lfs").attributes(path, "mode") ~= nil end

local function last_line(text)
  local last
  for l in (text or ""):gmatch("[^\n]+") do if l:match("%S") then last = l end end
  return last
end

-- Runs a shell command line; returns its exit status (signals as 128 + n).
local function shell(cmd)
  local ok, how, code = os.execute(cmd)
  if ok then return 0 end
  if how == "signal" then return 128 + (code or 0) end
  return code or 1
end

local function settings_of(opts)
  if opts.resume then
    for k in pairs(opts) do
      if k ~= "resume" then options.usage_error("option --resume: the run's own settings are used (got --%s)", k) end
    end
    local text = read(opts.resume .. "/refine.json")
    if not text then options.usage_error("option --resume: %s has no refine.json", opts.resume) end
    local s, why = json.decode(text)
    if type(s) ~= "table" or type(s.operator) ~= "string" or type(s.generator) ~= "string" then
      options.usage_error("option --resume: %s/refine.json is not a refine run's (%s)", opts.resume, tostring(why or "fields missing"))
    end
    s.dir = opts.resume
    return s, true
  end
  for _, k in ipairs({ "operator", "backend", "generator" }) do
    if not opts[k] then options.usage_error("refine: --%s is required", k) end
  end
  local dir = opts["run-dir"] or string.format("%s/refine/%s-%s-%s", require("tilebench.cmd.run").results_root(),
    opts.operator, opts.backend, require("tilebench.rundir").new_run_id())
  if exists(dir .. "/refine.json") then
    options.usage_error("refine: %s already holds a run (continue it with --resume %s)", dir, dir)
  end
  return { format = 1, operator = opts.operator, backend = opts.backend, generator = opts.generator,
           iterations = opts.iterations or 10, stop_rho = opts["stop-rho"] or 0.8, dtypes = opts.dtype,
           created = sys.iso_time(), dir = dir }, false
end

-- One iteration in idir: prompt -> generator -> file -> eval. Returns the record, the code, the
-- verdict (nil when the generator gave no file).
local function iterate(s, op, spec, dtype, i, idir, prompt)
  util.write_atomic(idir .. "/prompt.md", prompt)
  -- in the directory refine was started from, so a relative CMD (./my_model.py) means what it says
  local env = string.format("TILEBENCH_ITERATION=%d TILEBENCH_OPERATOR=%s TILEBENCH_BACKEND=%s TILEBENCH_DTYPE=%s "
    .. "TILEBENCH_RUN_DIR=%s TILEBENCH_ITERATION_DIR=%s", i, quote(op.name), quote(s.backend), quote(dtype),
    quote(s.dir), quote(idir))
  local rc = shell(string.format("%s sh -c %s < %s > %s 2> %s", env, quote(s.generator), quote(idir .. "/prompt.md"),
    quote(idir .. "/response.txt"), quote(idir .. "/generator.err")))
  local code, tokens = refine.parse_response(read(idir .. "/response.txt") or "")
  if rc ~= 0 then
    local why = last_line(read(idir .. "/generator.err"))
    return refine.record(i, nil, tokens, { status = "generator_failed",
      reason = string.format("the generator exited with status %d%s", rc, why and (": " .. why) or "") }), code
  end
  if not code:match("%S") then
    return refine.record(i, nil, tokens, { status = "no_code", reason = "the generator's output holds no file" }), code
  end
  local file = idir .. "/" .. spec.source
  util.write_atomic(file, code)
  shell(string.format("%s eval --operator %s --backend %s --dtype %s --impl %s --json > %s 2> %s", quote(sys.exe()),
    quote(op.name), quote(s.backend), quote(dtype), quote(file), quote(idir .. "/verdict.json"), quote(idir .. "/eval.err")))
  local v = json.decode(read(idir .. "/verdict.json") or "")
  if type(v) ~= "table" then
    return refine.record(i, nil, tokens, { status = "failed",
      reason = "eval gave no verdict: " .. tostring(last_line(read(idir .. "/eval.err"))) }), code
  end
  return refine.record(i, v, tokens), code, v
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "refine")
  if #pos > 0 then options.usage_error("refine: unexpected argument '%s'", pos[1]) end
  local s, resumed = settings_of(opts)
  if s.dir:sub(1, 1) ~= "/" then s.dir = require("lfs").currentdir() .. "/" .. s.dir end
  local okl, op = pcall(require("tilebench.operator").load, s.operator)
  if not okl then options.usage_error("refine: %s", tostring(op)) end
  local candidate = require("tilebench.candidate")
  local spec, why = candidate.base(op, s.backend)
  if not spec then options.usage_error("refine: %s", why) end
  local dtypes = s.dtypes or require("tilebench.operator").dtypes(op)
  local known = {}
  for _, d in ipairs(require("tilebench.operator").dtypes(op)) do known[d] = true end
  for _, d in ipairs(dtypes) do
    if not known[d] then options.usage_error("option --dtype: %s has no dtype '%s'", op.name, d) end
  end
  util.mkdir_p(s.dir)
  local stored = {}
  for k, v in pairs(s) do if k ~= "dir" then stored[k] = v end end
  if not resumed then util.write_atomic(s.dir .. "/refine.json", json.encode_sorted(stored, { indent = 2 }) .. "\n") end
  local task_text = require("tilebench.task").document(op, s.backend)
  util.write_atomic(s.dir .. "/task.md", task_text)
  local lang = s.backend == "triton" and "python" or "cuda"
  io.write(string.format("refine %s (%s) in %s%s: at most %d iterations per dtype, stop at rho >= %g\n", op.name,
    s.backend, s.dir, resumed and " (resumed)" or "", s.iterations, s.stop_rho))
  io.stdout:flush()

  local by_dtype = {}
  for _, dtype in ipairs(dtypes) do
    local case = candidate.representative(op, dtype)
    local records, codes, verdicts, frozen_at = {}, {}, {}, nil
    for i = 1, s.iterations do
      local idir = string.format("%s/%s/%02d", s.dir, dtype, i)
      local done = read(idir .. "/iteration.json")
      local rec, code, v
      if done then
        rec = json.decode(done)
        code = read(idir .. "/" .. spec.source)
        v = json.decode(read(idir .. "/verdict.json") or "")
      else
        util.mkdir_p(idir)
        local best = refine.best(records)
        local prompt = refine.prompt(task_text, { iteration = i, dtype = dtype, case_id = case.id, lang = lang,
          source = spec.source, stop_rho = s.stop_rho, max = s.iterations, records = records,
          previous = #records > 0 and { code = codes[#records], verdict = verdicts[#records] } or nil,
          best = best and { record = best, code = codes[best.iteration] } or nil })
        rec, code, v = iterate(s, op, spec, dtype, i, idir, prompt)
        util.write_atomic(idir .. "/iteration.json", json.encode_sorted(rec, { indent = 2 }) .. "\n")
      end
      records[i], codes[i], verdicts[i] = rec, code, type(v) == "table" and v or nil
      io.write(string.format("  %-9s %2d %-16s %12s %8s %8s %8s%s%s\n", dtype, i, rec.status,
        rec.ms and string.format("%.5f ms", rec.ms) or "-", rec.rho and string.format("%.3f", rec.rho) or "-",
        rec.speedup and string.format("%.3fx", rec.speedup) or "-",
        rec.tokens and tostring(math.tointeger(rec.tokens) or rec.tokens) or "?", done and "  (done before)" or "",
        rec.status ~= "ok" and rec.reason and ("  " .. tostring(rec.reason):gsub("\n.*", "")) or ""))
      io.stdout:flush()
      if refine.frozen(rec, s.stop_rho) then frozen_at = i break end
    end
    by_dtype[#by_dtype + 1] = { dtype = dtype, records = records, frozen_at = frozen_at }
  end
  local sum = refine.summary(by_dtype)
  sum.operator, sum.backend, sum.stop_rho, sum.max_iterations = op.name, s.backend, s.stop_rho, s.iterations
  util.write_atomic(s.dir .. "/summary.json", json.encode_sorted(sum, { indent = 2 }) .. "\n")
  for _, d in ipairs(sum.dtypes) do
    io.write(string.format("%s %s %s: %d iterations, %d verify-clean, best %s (speedup %s, rho %s)%s, %d tokens, %s speedup per M tokens\n",
      op.name, s.backend, d.dtype, d.iterations, d.verify_clean, d.best_iteration and ("#" .. d.best_iteration) or "none",
      string.format("%.3f", d.gated_speedup), d.best_rho and string.format("%.3f", d.best_rho) or "-",
      d.frozen_at and string.format(", frozen at #%d", d.frozen_at) or "", d.tokens,
      d.token_efficiency and string.format("%.4g", d.token_efficiency) or "-"))
  end
  io.write(string.format("%s %s: %d of %d iterations verify-clean, gated speedup %.3f summed over %d dtypes, %d tokens, token efficiency %s\n",
    op.name, s.backend, sum.verify_clean, sum.iterations, sum.gated_speedup_sum, #sum.dtypes, sum.tokens,
    sum.token_efficiency and string.format("%.4g speedup per M tokens", sum.token_efficiency) or "-"))
  io.write("wrote ", s.dir, "/summary.json\n")
  return 0
end

return M
