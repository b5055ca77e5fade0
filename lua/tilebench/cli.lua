-- cli.lua: the tilebench command line. main(arg) dispatches to lua/tilebench/cmd/<name>.lua,
-- whose run(args) returns the exit status. Usage errors exit 2, like a missing GPU driver.
local options = require("tilebench.options")
local errors = require("tb.error")

local M = {}

-- Subcommands in the order --help lists them; each lives in lua/tilebench/cmd/<name>.lua.
local commands = { "run", "compile", "task", "eval", "refine", "merge", "slurm", "list", "show", "devices", "peaks", "aggregate", "report",
                   "compare", "script", "worker" }

local function load_command(name)
  local ok, mod = pcall(require, "tilebench.cmd." .. name)
  if ok then return mod end
  if type(mod) == "string" and mod:find("module 'tilebench.cmd." .. name .. "' not found", 1, true) then
    return nil
  end
  error(mod, 0)
end

local function usage()
  local lines = {
    "usage: tilebench <command> [options]",
    "       tilebench --help | --version",
    "",
    "A benchmark for GPU kernels: verifies every implementation of an operator against a",
    "reference, times it under one protocol, and reports latency, roofline fraction and",
    "library efficiency.",
    "",
    "commands:",
  }
  for _, name in ipairs(commands) do
    local mod = load_command(name)
    if mod then lines[#lines + 1] = string.format("  %-10s %s", name, mod.summary or "") end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "'tilebench <command> --help' describes a command's options."
  return table.concat(lines, "\n") .. "\n"
end

-- Classifies an error raised anywhere below into (message, exit status): a usage error or a
-- missing driver (the tb.error class the backend gave it) exits 2, anything else 1.
local function classify(err)
  if options.is_usage_error(err) then return err.message, 2 end
  if errors.class(err) == "no_driver" then return err.message, 2 end
  return tostring(err) .. (type(err) == "table" and err.traceback or ""), 1
end

function M.main(arg)
  local args = {}
  for i = 1, #arg do args[i] = arg[i] end
  local first = args[1]
  if first == nil or first == "--help" or first == "-h" or first == "help" then
    if first == "help" and args[2] then
      args = { args[2], "--help" }
    else
      io.write(usage())
      return first == nil and 2 or 0
    end
    first = args[1]
  end
  if first == "--version" or first == "version" then
    io.write(string.format("tilebench %s (git %s%s, %s)\n", TILEBENCH_VERSION, TILEBENCH_GIT_SHA, TILEBENCH_GIT_DIRTY and "-dirty" or "", _VERSION))
    return 0
  end
  local cmd = load_command(first)
  if not cmd then
    io.stderr:write(string.format("tilebench: unknown command '%s' (see 'tilebench --help')\n", first))
    return 2
  end
  table.remove(args, 1)
  if args[1] == "--help" or args[1] == "-h" then
    io.write(cmd.usage or (cmd.summary or "") .. "\n")
    return 0
  end
  local ok, status = xpcall(cmd.run, function(e)
    if options.is_usage_error(e) then return e end
    if os.getenv("TILEBENCH_TRACEBACK") then
      if type(e) == "string" then return debug.traceback(e, 2) end
      if errors.class(e) then e.traceback = debug.traceback("", 2) end
    end
    return e
  end, args)
  if ok then return math.tointeger(status) or 0 end
  local msg, code = classify(status)
  io.stderr:write("tilebench: ", msg, "\n")
  return code
end

return M
