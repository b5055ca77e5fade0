-- cmd/script.lua: `tilebench script FILE.lua [ARGS]` runs any Lua script with the tb modules.
local options = require("tilebench.options")
local errors = require("tb.error")
local M = {}
M.summary = "run a Lua script with the tb.* modules (tb.device, tb.tensor, tb.kernel, ...)"
M.usage = [[
usage: tilebench script FILE.lua [ARGS...]

Runs FILE.lua in tilebench's Lua 5.4 with tb.device, tb.tensor, tb.kernel, tb.launch,
tb.verify, tb.timer, tb.yaml and the tilebench.* library available through require.
The script sees its arguments in `arg` (arg[0] is FILE.lua) and in `...`.
Its exit status is what it passes to os.exit, else 0.
]]

function M.run(args)
  local file = args[1]
  if not file then options.usage_error("script: missing FILE.lua (see 'tilebench script --help')") end
  local chunk, err = loadfile(file)
  if not chunk then error(err, 0) end
  local script_arg = { [0] = file }
  for i = 2, #args do script_arg[i - 1] = args[i] end
  arg = script_arg
  -- A tb.error keeps its class (cli.lua exits 2 for no_driver) and carries the traceback.
  local ok, e = xpcall(chunk, function(failure)
    if errors.class(failure) then
      failure.traceback = debug.traceback("", 2)
      return failure
    end
    return debug.traceback(failure, 2)
  end, table.unpack(script_arg))
  if not ok then error(e, 0) end
  return 0
end
return M
