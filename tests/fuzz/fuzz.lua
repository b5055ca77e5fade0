-- fuzz.lua: a bounded mutation fuzzer for what tilebench reads from users and from disk: the
-- YAML loader (tb.yaml, C), config validation (config.lua, grid.lua), the expression evaluator
-- (expr.lua) and the journal reader (journal.lua). Run it in the sanitizer build, where a memory
-- error or undefined behaviour in the C loader aborts the process.
--
--   tilebench script tests/fuzz/fuzz.lua [--seconds S] [--seed N]   (seed: $TB_FUZZ_SEED or 1)
--
-- Inputs are mutations of the project's own files (fixtures, operator configs, OPERATORS.md's
-- expressions, journal lines) and of random token strings; S seconds (default
-- $TB_FUZZ_SECONDS or 10) are split evenly over the four targets. Each input must end, within a
-- VM-instruction budget, in a value or an error that is a string naming what was read (never a
-- Lua location or "attempt to ..."). A failing input is written to $TB_FUZZ_OUT (default /tmp)
-- and the seed printed, so the run can be repeated exactly.
local yaml = require("tb.yaml")
local sys = require("tb.sys")
local expr = require("tilebench.expr")
local config = require("tilebench.config")
local journal = require("tilebench.journal")
local util = require("tilebench.util")
local lfs = require("lfs")

local HOME = TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or "."
local seconds = tonumber(os.getenv("TB_FUZZ_SECONDS")) or 10
local seed = math.tointeger(tonumber(os.getenv("TB_FUZZ_SEED"))) or 1 -- CI: the same inputs every run
do
  local i = 1
  while arg[i] do
    if arg[i] == "--seconds" then seconds = assert(tonumber(arg[i + 1]), "--seconds N"); i = i + 2
    elseif arg[i] == "--seed" then seed = assert(math.tointeger(tonumber(arg[i + 1])), "--seed N"); i = i + 2
    else error("fuzz.lua: unknown argument " .. arg[i], 0) end
  end
end
math.randomseed(seed)
local OUT = os.getenv("TB_FUZZ_OUT") or "/tmp"

-- ---- inputs -----------------------------------------------------------------------------------
local function read(path)
  local fh = io.open(path, "rb")
  if not fh then return nil end
  local s = fh:read("a")
  fh:close()
  return s
end

local function files(dir, pattern, out)
  out = out or {}
  if lfs.attributes(dir, "mode") ~= "directory" then return out end
  for e in lfs.dir(dir) do
    if e:sub(1, 1) ~= "." then
      local p = dir .. "/" .. e
      if lfs.attributes(p, "mode") == "directory" then files(p, pattern, out)
      elseif e:match(pattern) then out[#out + 1] = read(p) end
    end
  end
  return out
end

local yaml_seeds = files(HOME .. "/tests/fixtures/yaml", "%.yaml$")
files(HOME .. "/operators", "^config%.yaml$", yaml_seeds)
local expr_seeds = {}
for line in (read(HOME .. "/tests/fixtures/expressions.txt") or ""):gmatch("[^\n]+") do
  if line:sub(1, 1) ~= "#" then expr_seeds[#expr_seeds + 1] = line:match("^[^\t]*\t[^\t]*\t([^\t]*)") end
end
assert(#yaml_seeds > 10 and #expr_seeds > 50, "fuzz.lua: seed files not found under " .. HOME)

-- pieces that make parsers take their rarer paths
local yaml_tokens = {"\n", "\n  ", "\n- ", ": ", "- ", "[", "]", "{", "}", ",", "&a ", "*a", "<<: *a\n", "!!str ",
  "!!int ", "!!float ", "!!set ", "!foo ", "? ", "|\n  ", ">\n  ", "'", '"', "#", "~", "null", "0x1F", "0o17",
  "1e999", "-.inf", ".nan", "9223372036854775808", "---\n", "...\n", "\t", "\\", "%YAML 1.1\n", "\0", "\xff"}
local expr_tokens = {" + ", " - ", " * ", " / ", " // ", " % ", " ** ", "(", ")", "[", "]", ",", " for i in ",
  "range(", " if ", " else ", " and ", " or ", "not ", " < ", " == ", "True", "False", "0", "1", "-1", "10**18",
  "2**62", "9223372036854775807", "1e308", "0.5", "math.isqrt(", "math.log(", "math.inf", "math.nan", "min(",
  "max(", "abs(", "int(", "float(", "n", "M", "x", "i", "[] * ", "[0] * ", "\"", "lambda", "__", "."}

local function pick(t) return t[math.random(#t)] end

-- One to eight random edits: delete, duplicate, insert a token or random bytes, splice two inputs.
local function mutate(s, tokens, seeds)
  for _ = 1, math.random(8) do
    local n = #s
    local a = math.random(0, n)
    local b = math.min(n, a + math.random(0, 16))
    local op = math.random(6)
    if op == 1 then s = s:sub(1, a) .. s:sub(b + 1)
    elseif op == 2 then s = s:sub(1, b) .. s:sub(a + 1, b) .. s:sub(b + 1)
    elseif op == 3 or op == 4 then s = s:sub(1, a) .. pick(tokens) .. s:sub(a + 1)
    elseif op == 5 then
      local bytes = {}
      for k = 1, math.random(4) do bytes[k] = string.char(math.random(0, 255)) end
      s = s:sub(1, a) .. table.concat(bytes) .. s:sub(a + 1)
    else
      local other = pick(seeds)
      local c = math.random(0, #other)
      s = s:sub(1, a) .. other:sub(c, c + math.random(0, 64)) .. s:sub(b + 1)
    end
  end
  return s
end

-- ---- checking one input -------------------------------------------------------------------------
-- The evaluator's budget, lowered so that many inputs reach it; an evaluation must then end
-- within a fixed number of VM instructions per step of budget (a step that does unbounded work,
-- or work not charged to the budget, shows up here).
expr.limits.steps, expr.limits.elements = 20000, 10000
local STEP_LIMIT = 1000 * expr.limits.steps -- VM instructions per input
local failures = 0

local function report(target, input, why)
  failures = failures + 1
  local path = string.format("%s/tilebench-fuzz-%s-%d-%d.txt", OUT, target, seed, failures)
  local fh = io.open(path, "wb")
  if fh then fh:write(input); fh:close() end
  io.stderr:write(string.format("FUZZ FAILURE [%s] seed %d: %s\n  input saved to %s\n", target, seed, why, path))
end

-- Runs fn(input) under the instruction budget; returns ok, value-or-error.
local function bounded(fn, input)
  local budget_hit = false
  debug.sethook(function() budget_hit = true; error("fuzz: instruction budget exceeded", 0) end, "", STEP_LIMIT)
  local ok, v = pcall(fn, input)
  debug.sethook()
  if budget_hit then return nil, "did not end within " .. STEP_LIMIT .. " VM instructions" end
  return ok, v
end

-- An error a user may see: a string, with the expected prefix, no Lua internals.
local function readable(err, prefix)
  if type(err) ~= "string" then return false, "error of type " .. type(err) end
  if prefix and err:sub(1, #prefix) ~= prefix then return false, "error without the prefix " .. prefix .. ": " .. err end
  if err:find("%.lua:%d+:") or err:find("attempt to ") or err:find("stack overflow") or err:find("C stack") then
    return false, "Lua internals in the message: " .. err
  end
  return true
end

local targets = {}

targets.yaml = function()
  local input = mutate(pick(yaml_seeds), yaml_tokens, yaml_seeds)
  local ok, v = bounded(function(s) return yaml.load(s, "fuzz.yaml") end, input)
  if ok == nil then return report("yaml", input, v) end
  if not ok then
    local good, why = readable(v, "fuzz.yaml:")
    if not good then report("yaml", input, why) end
  end
end

targets.config = function()
  local input = mutate(pick(yaml_seeds), yaml_tokens, yaml_seeds)
  local loaded, doc = pcall(yaml.load, input, "fuzz.yaml")
  if not loaded then return end
  local ok, v = bounded(function(t) return config.validate(t, "fuzz.yaml") end, doc)
  if ok == nil then return report("config", input, v) end
  if not ok then
    local good, why = readable(v, "fuzz.yaml")
    if not good then report("config", input, why) end
  end
end

-- Well-formed expressions from the language's grammar, with the constants that break naive
-- evaluators (huge counts, 64-bit edges, nested ranges).
local constants = {"0", "1", "2", "3", "-1", "7", "1000", "10**6", "10**9", "10**18", "2**62", "2**63 - 1",
  "-2**62", "9223372036854775807", "0.5", "1e308", "math.inf", "math.nan", "n", "M", "i", "True"}
local function gen(depth)
  local r = math.random(depth > 0 and 11 or 1)
  if r == 1 then return pick(constants) end
  local a, b = gen(depth - 1), gen(depth - 1)
  if r == 2 then return "(" .. a .. pick({" + ", " - ", " * ", " // ", " % ", " ** ", " / "}) .. b .. ")"
  elseif r == 3 then return "[" .. a .. "] * " .. b
  elseif r == 4 then return "[" .. a .. " for i in range(" .. b .. ")]"
  elseif r == 5 then return "[" .. a .. " for i in range(" .. b .. ") for j in range(" .. gen(depth - 1) .. ")]"
  elseif r == 6 then return "[i for i in range(" .. a .. ", " .. b .. ", " .. gen(depth - 1) .. ")]"
  elseif r == 7 then return pick({"math.isqrt(", "abs(", "int(", "float(", "math.floor(", "math.log2("}) .. a .. ")"
  elseif r == 8 then return pick({"min(", "max("}) .. a .. ")"
  elseif r == 9 then return "(" .. a .. " if " .. b .. " else " .. gen(depth - 1) .. ")"
  elseif r == 10 then return "(" .. a .. " + " .. b .. ")"
  else return "-" .. a end
end

local expr_env = {n = 1048576, M = 4096, N = 1024, K = 512, dtype_size = 2, x = {1, 2, 3}, i = 7,
                  batch = 8, heads = 16}
targets.expr = function()
  local input
  local way = math.random(4)
  if way == 1 then
    input = gen(math.random(1, 4))
  elseif way == 2 then -- from tokens alone
    local parts = {}
    for k = 1, math.random(12) do parts[k] = pick(expr_tokens) end
    input = table.concat(parts)
  else
    input = mutate(pick(expr_seeds), expr_tokens, expr_seeds)
  end
  local ok, v = bounded(function(s) return expr.eval_in("fuzz.yaml", "metrics.flops_expr", s, expr_env) end, input)
  if ok == nil then return report("expr", input, v) end
  if not ok then
    local good, why = readable(v, "fuzz.yaml: metrics.flops_expr: ")
    if not good then report("expr", input, why) end
  end
end

local journal_path = os.tmpname()
local journal_seed = {
  journal.encode({journal = 1, run_id = "fuzz"}),
  journal.encode({operator = "vector_add", mode = "default", dtype = "fp16", case_index = 1, impl = "cuda",
                  status = "ok", params = {n = 4096}, ms = 0.01, samples = {0.01, 0.011}, stats = {median = 0.01},
                  config = "BLOCK=256", case_id = "n=4096", rho = 0 / 0, speedup = math.huge}),
  journal.encode({operator = "broken", mode = "autotune", status = "failed", reason = "config.yaml:3: bad"}),
}
local json_tokens = {"{", "}", "[", "]", ",", ":", '"', "null", "true", "1e400", "-0", "NaN", "Infinity", '"../.."',
  '"operator":', '"mode":', '"case_index":', '"dtype":', '"impl":', '"ms":', '"samples":', "\n", "\\u0000"}
targets.journal = function()
  local lines = {}
  for k = 1, math.random(6) do lines[k] = mutate(pick(journal_seed), json_tokens, journal_seed) end
  local input = table.concat(lines, "\n") .. (math.random(2) == 1 and "\n" or "")
  local fh = assert(io.open(journal_path, "wb"))
  fh:write(input)
  fh:close()
  local ok, v = bounded(function(p)
    local _, rows, problems = journal.read(p)
    for _, r in ipairs(rows) do
      local why = journal.entry_problem(r)
      if why then error("journal.read returned an entry it should have skipped: " .. why) end
      journal.key(r)
    end
    for _, p2 in ipairs(problems) do
      if type(p2) ~= "string" or p2:sub(1, #journal_path) ~= journal_path then error("problem without its file: " .. tostring(p2)) end
    end
    return rows
  end, journal_path)
  if ok == nil then return report("journal", input, v) end
  if not ok then report("journal", input, "journal.read raised: " .. tostring(v)) end
end

-- ---- the run ------------------------------------------------------------------------------------
local order = {"yaml", "config", "expr", "journal"}
local counts = {}
for _, name in ipairs(order) do
  local stop = sys.monotonic() + seconds / #order
  local n = 0
  repeat
    for _ = 1, 20 do targets[name](); n = n + 1 end
  until sys.monotonic() >= stop or failures >= 20
  counts[#counts + 1] = string.format("%s %d", name, n)
end
os.remove(journal_path)
print(string.format("fuzz: seed %d, %.0f s: %s inputs; %d failures", seed, seconds, table.concat(counts, ", "), failures))
os.exit(failures == 0 and 0 or 1)
