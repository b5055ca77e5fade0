-- refine.lua: the iterative-refinement loop's parts that need neither a GPU nor a model (issue
-- 20): reading a generator's response, assembling the iteration-N prompt, the freeze rule, the
-- choice of the best verify-clean iteration and the token arithmetic. cmd/refine.lua drives the
-- loop (the generator and `tilebench eval` as processes, the run directory).
--
--   refine.parse_response(text)   -> code, tokens (number | nil), how ("fenced" | "whole")
--   refine.record(i, verdict, tokens, extra) -> an iteration's record (what the trajectory shows)
--   refine.best(records)          -> the best verify-clean record | nil (highest speedup over
--                                    torch; lowest time where a record has no speedup)
--   refine.frozen(rec, stop_rho)  -> true when rec verified at rho >= stop_rho
--   refine.prompt(task_text, ctx) -> the prompt of iteration ctx.iteration
--   refine.summary(by_dtype)      -> per dtype and for the backend: verify-clean iterations, the
--                                    correctness-gated speedup, tokens, token efficiency
local json = require("tilebench.json")

local M = {}

-- The generator writes the file (in a fenced block, or as its whole output) and a JSON line
-- {"tokens": N} or {"tokens": {"input": a, "output": b, ...}} (summed). The token line is the
-- last line that is such an object; it is removed before the code is taken. The code is the
-- last fenced block's body, else everything.
function M.parse_response(text)
  local lines = {}
  for l in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  local tokens
  for i = #lines, 1, -1 do
    local l = lines[i]
    if l:match("^%s*{.*}%s*$") then
      local v = json.decode(l)
      if type(v) == "table" and v.tokens ~= nil then
        local t = v.tokens
        if type(t) == "number" then tokens = t
        elseif type(t) == "table" then
          tokens = 0
          for _, x in pairs(t) do if type(x) == "number" then tokens = tokens + x end end
        end
        table.remove(lines, i)
        break
      end
    end
  end
  local body = table.concat(lines, "\n")
  local code
  for block in body:gmatch("```[%w_+-]*[^\n]*\n(.-)\n?```") do code = block end
  if code then return code .. "\n", tokens, "fenced" end
  body = body:gsub("^%s*\n", "")
  return body:match("\n$") and body or (body .. "\n"), tokens, "whole"
end

-- The verdict's one case (eval runs one case per dtype here) as the trajectory's entry.
function M.record(i, v, tokens, extra)
  local c = (v and v.cases and v.cases[1]) or {}
  local r = { iteration = i, status = v and v.status or "failed", reason = v and v.reason, ms = c.ms, rho = c.rho,
              speedup = c.speedup, torch_ms = c.torch_ms, tokens = tokens, case_id = c.case_id }
  for k, val in pairs(extra or {}) do r[k] = val end
  return r
end

local function better(a, b) -- a better than b (both ok)
  if a.speedup and b.speedup then return a.speedup > b.speedup end
  if a.ms and b.ms then return a.ms < b.ms end
  return false
end

function M.best(records)
  local best
  for _, r in ipairs(records) do
    if r.status == "ok" and (not best or better(r, best)) then best = r end
  end
  return best
end

function M.frozen(rec, stop_rho)
  return rec.status == "ok" and type(rec.rho) == "number" and rec.rho >= stop_rho
end

local function num(v, fmt) return type(v) == "number" and string.format(fmt, v) or "-" end

local function first_line(s) return (tostring(s or ""):gsub("\n.*", "")) end

local function fence(lang, text) return "```" .. lang .. "\n" .. text:gsub("\n$", "") .. "\n```\n" end

-- ctx: {iteration, dtype, case_id, lang, source (the file's name), stop_rho, max,
--       records = {record...}, previous = {code, verdict} | nil, best = {record, code} | nil}
-- Iteration 1 is the task; later ones add the trajectory, the previous file with what its
-- verdict said, and, after a failure or a regression, the best verify-clean file so far.
function M.prompt(task_text, ctx)
  local L = { task_text }
  local function add(s) L[#L + 1] = s or "" end
  add(string.format("## This run\n\nDtype %s, case %s; iteration %d of at most %d. The loop stops once a file "
    .. "verifies at rho >= %g; the best verified iteration is the result.", ctx.dtype, ctx.case_id or "?",
    ctx.iteration, ctx.max, ctx.stop_rho))
  if ctx.iteration == 1 or #ctx.records == 0 then return table.concat(L, "\n") .. "\n" end
  add()
  add("## Trajectory so far")
  add()
  add("| iteration | status | ms | rho | speedup over torch | tokens | reason |")
  add("|---|---|---|---|---|---|---|")
  for _, r in ipairs(ctx.records) do
    add(string.format("| %d | %s | %s | %s | %s | %s | %s |", r.iteration, r.status, num(r.ms, "%.5f"),
      num(r.rho, "%.3f"), num(r.speedup, "%.3f"), num(r.tokens, "%d"),
      r.status == "ok" and "" or first_line(r.reason):gsub("|", "/")))
  end
  local prev = ctx.previous
  if prev then
    local last = ctx.records[#ctx.records]
    add()
    add(string.format("## Your previous file (iteration %d): %s", last.iteration, last.status))
    add()
    add(fence(ctx.lang, prev.code or ""))
    local v = prev.verdict or {}
    local c = (v.cases or {})[1] or {}
    if v.compile_log and #v.compile_log > 0 then
      add("Compiler log:")
      add()
      add(fence("text", table.concat(v.compile_log, "\n")))
    end
    if v.reason then add("Verdict: " .. tostring(v.reason)) end
    for _, m in ipairs(c.mismatches or {}) do
      add(string.format("- output %s[%s]: got %s, expected %s", tostring(m.output), tostring(m.index),
        tostring(m.got), tostring(m.expected)))
    end
    for _, k in ipairs(c.checks or {}) do
      if k.status == "refused" then add(string.format("- check %s refused it: %s", k.name, tostring(k.reason))) end
    end
  end
  local best, last = ctx.best, ctx.records[#ctx.records]
  if best and last and (last.status ~= "ok" or best.record.iteration ~= last.iteration) then
    add()
    add(string.format("## The best verified file so far (iteration %d: %s ms, rho %s, speedup %s)",
      best.record.iteration, num(best.record.ms, "%.5f"), num(best.record.rho, "%.3f"), num(best.record.speedup, "%.3f")))
    add()
    add("The previous iteration " .. (last.status == "ok" and "was slower than this one" or "failed")
      .. "; you may start again from this file.")
    add()
    add(fence(ctx.lang, best.code or ""))
  end
  add()
  add("Write the next version of the whole file.")
  return table.concat(L, "\n") .. "\n"
end

-- by_dtype: {{dtype, records, frozen_at}}. Failed iterations count zero speedup and their tokens:
-- a dtype's correctness-gated speedup is its best verify-clean iteration's speedup over torch (0
-- when none verified or torch did not run), its tokens every iteration's; the backend's token
-- efficiency is the sum of the dtypes' gated speedups per million tokens spent on them all.
function M.summary(by_dtype)
  local s = { dtypes = json.array({}), tokens = 0, gated_speedup_sum = 0, verify_clean = 0, iterations = 0,
              tokens_unreported = 0 }
  for _, d in ipairs(by_dtype) do
    local tokens, clean, unreported = 0, 0, 0
    for _, r in ipairs(d.records) do
      if type(r.tokens) == "number" then tokens = tokens + r.tokens else unreported = unreported + 1 end
      if r.status == "ok" then clean = clean + 1 end
    end
    local best = M.best(d.records)
    local gated = best and best.speedup or 0
    local e = { dtype = d.dtype, iterations = #d.records, verify_clean = clean, frozen_at = d.frozen_at,
                best_iteration = best and best.iteration, best_ms = best and best.ms, best_rho = best and best.rho,
                gated_speedup = gated, tokens = tokens, tokens_unreported = unreported,
                token_efficiency = tokens > 0 and gated / (tokens / 1e6) or nil }
    s.dtypes[#s.dtypes + 1] = e
    s.tokens, s.gated_speedup_sum = s.tokens + tokens, s.gated_speedup_sum + gated
    s.verify_clean, s.iterations = s.verify_clean + clean, s.iterations + #d.records
    s.tokens_unreported = s.tokens_unreported + unreported
  end
  s.gated_speedup_mean = #by_dtype > 0 and s.gated_speedup_sum / #by_dtype or nil
  s.token_efficiency = s.tokens > 0 and s.gated_speedup_sum / (s.tokens / 1e6) or nil
  return s
end

return M
