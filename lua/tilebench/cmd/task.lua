-- cmd/task.lua: `tilebench task --operator X --backend cuda|triton [--output FILE]`: the task
-- materials of the generated-kernel track as one Markdown document (lua/tilebench/task.lua),
-- written from the operator's folder each time. No GPU needed.
local options = require("tilebench.options")

local M = {}
M.spec = {
  { name = "operator", type = "string", metavar = "NAME", desc = "the operator (required)" },
  { name = "backend", type = "string", choices = { "cuda", "triton" }, desc = "the programming model the file is written in (required)" },
  { name = "output", type = "string", metavar = "FILE", desc = "write the document to FILE instead of stdout" },
}
M.summary = "print the task materials for writing an operator's kernels (generated-kernel track)"
M.usage = "usage: tilebench task --operator NAME --backend cuda|triton [--output FILE]\n\n"
  .. "Writes what a model (or a person) needs to write one file that takes the place of the operator's\n"
  .. "implementation for the backend: the operator's description, the torch reference, config.yaml,\n"
  .. "what the plan launches and the signatures to keep, the backend's conventions, how `tilebench eval`\n"
  .. "judges the file and the answer's format. docs/GENERATION.md describes the track.\n\n"
  .. "options:\n" .. options.help(M.spec) .. "\n"

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "task")
  if #pos > 0 then options.usage_error("task: unexpected argument '%s'", pos[1]) end
  if not opts.operator then options.usage_error("task: --operator NAME is required") end
  if not opts.backend then options.usage_error("task: --backend cuda|triton is required") end
  local ok, op = pcall(require("tilebench.operator").load, opts.operator)
  if not ok then options.usage_error("task: %s", tostring(op)) end
  local okb, why = require("tilebench.candidate").base(op, opts.backend)
  if not okb then options.usage_error("task: %s", why) end
  local text = require("tilebench.task").document(op, opts.backend)
  if opts.output then
    require("tilebench.util").write_atomic(opts.output, text)
  else
    io.write(text)
  end
  return 0
end

return M
