-- cmd/list.lua: `tilebench list [--category C]` lists the operators on the search path.
local options = require("tilebench.options")
local M = {}
local spec = { { name = "category", type = "string", desc = "only operators of this category" } }
M.summary = "list operators (name, category, dtypes, cases, implementations)"
M.usage = "usage: tilebench list [--category C]\n\n" .. options.help(spec) .. "\n"

function M.run(args)
  local opts = options.parse(args, spec, "list")
  local opmod = require("tilebench.operator")
  local shown, errors = 0, 0
  io.write(string.format("%-24s %-16s %-28s %6s  %s\n", "operator", "category", "dtypes", "cases", "implementations"))
  for _, name in ipairs(opmod.list()) do
    local ok, op = pcall(opmod.load, name)
    if not ok then -- one broken operator costs only its own line
      errors = errors + 1
      io.stderr:write(string.format("tilebench: %s: %s\n", name, tostring(op)))
    elseif not opts.category or op.category:lower() == opts.category:lower() then
      shown = shown + 1
      io.write(string.format("%-24s %-16s %-28s %6d  %s\n", name, op.category,
        table.concat(opmod.dtypes(op), ","), op.case_count, table.concat(op.impls, ",")))
    end
  end
  if opts.category and shown == 0 then
    io.stderr:write(string.format("tilebench: no operator of category '%s'\n", opts.category))
    return 1
  end
  -- status 1 for a broken operator, as from `run` (which records it failed) and `show`
  return errors > 0 and 1 or 0
end
return M
