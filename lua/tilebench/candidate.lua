-- candidate.lua: a candidate implementation under evaluation (issue 20: the generated-kernel
-- track). A candidate is one file that takes the place of an operator's implementation source:
-- for the `cuda` backend the implementation's kernel file (<name>.cu, or the file its `source`
-- names), for `triton` its <name>_triton.py. Everything else is the operator's own: the plan
-- (grid, block, defines, arguments), the inputs, the reference and the tolerances. So the only
-- code of the candidate that runs is the device code the plan launches (no host code of its own:
-- it cannot pick a stream, call a library or touch the timer), and `tilebench task` can say
-- exactly what the file must define (lua/tilebench/task.lua).
--
--   candidate.NAME                       "candidate": the implementation's name in rows and items
--   candidate.backend_of(path)           -> "cuda" | "triton" | nil (by the file's extension)
--   candidate.base(op, backend)          -> the operator's implementation the candidate replaces
--                                           | nil, why
--   candidate.install(op, cand)          -> spec: op.module.implementations.candidate, built from
--                                           cand = {backend =, file = absolute path}
--   candidate.screen(backend, text)      -> nil | why the file is refused before it is compiled
--   candidate.representative(op, dtype)  -> the dtype's case with the most bytes (ties: the last)
--   candidate.defines_kernel(image, name) -> true | false (a compiled image's symbol table)
local util = require("tilebench.util")

local M = { NAME = "candidate" }

M.BACKENDS = { cuda = { ext = "cu", impl = "cuda" }, triton = { ext = "py", impl = "triton" } }

function M.backend_of(path)
  local ext = tostring(path):match("%.([%w]+)$")
  for name, b in pairs(M.BACKENDS) do if b.ext == ext then return name end end
  return nil
end

function M.base(op, backend)
  local b = M.BACKENDS[backend]
  if not b then return nil, string.format("unknown backend '%s' (cuda, triton)", tostring(backend)) end
  local spec = op.module.implementations[b.impl]
  if not spec then
    return nil, string.format("%s has no %s implementation to take the place of", op.name, b.impl)
  end
  if type(spec.source) ~= "string" or not spec.source:match("%." .. b.ext .. "$") then
    return nil, string.format("%s's %s implementation has no single .%s source a candidate can replace",
      op.name, b.impl, b.ext)
  end
  return spec
end

-- The candidate's implementation: the base implementation's plan, run while ctx.sources points
-- the base's source file at the candidate (context.lua: Ctx:source_of). The reference and the
-- other implementations of the item read their own files.
function M.install(op, cand)
  local base, why = M.base(op, cand.backend)
  if not base then error(why, 0) end
  local dir, file = util.dirname(cand.file), util.basename(cand.file)
  local spec = {
    description = string.format("candidate %s in place of %s", cand.file, base.source),
    source = base.source, default = base.default, valid = base.valid, supports = base.supports,
    plan = function(case, ins, outs, cfg, ctx)
      local saved = ctx.sources
      ctx.sources = { [base.source] = { dir = dir, file = file } }
      local res = table.pack(pcall(base.plan, case, ins, outs, cfg, ctx))
      ctx.sources = saved
      if not res[1] then error(res[2], 0) end
      return table.unpack(res, 2, res.n)
    end,
  }
  op.module.implementations[M.NAME] = spec
  return spec
end

-- A Triton candidate is a Python module: its top level runs when triton compiles it. It may import
-- only triton and the standard library's pure helpers; anything else (torch, a library binding,
-- a dynamic import) is refused before it is compiled, with the line. A check of the text, not a
-- sandbox: docs/GENERATION.md says what it does not catch.
M.TRITON_IMPORTS = { triton = true, ["triton.language"] = true, math = true, functools = true,
                     typing = true, __future__ = true }
M.TRITON_FORBIDDEN = { "__import__", "importlib", "exec%s*%(", "eval%s*%(", "ctypes", "subprocess", "os%.system" }

function M.screen(backend, text)
  if backend ~= "triton" then return nil end
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local code = line:gsub("#.*$", "")
    local mods = {}
    local from = code:match("^%s*from%s+([%w_.]+)%s+import")
    if from then mods[1] = from
    else
      local list = code:match("^%s*import%s+(.+)$")
      for part in (list or ""):gmatch("[^,]+") do mods[#mods + 1] = part:match("^%s*([%w_.]+)") end
    end
    for _, m in ipairs(mods) do
      if not M.TRITON_IMPORTS[m] then
        return string.format("line %d imports %s: a Triton candidate may import only %s", n, m,
          "triton, triton.language, math, functools, typing")
      end
    end
    for _, pat in ipairs(M.TRITON_FORBIDDEN) do
      if code:find(pat) then
        return string.format("line %d uses %s: a Triton candidate is kernels only", n, (pat:gsub("%%s%*%%%(", "("):gsub("%%", "")))
      end
    end
  end
  return nil
end

function M.representative(op, dtype)
  local config = require("tilebench.config")
  local best, best_bytes
  for _, c in ipairs(require("tilebench.operator").cases_of(op, dtype)) do
    local ok, _, bytes = pcall(config.work, op.config, c)
    bytes = ok and type(bytes) == "number" and bytes or -1
    if not best or bytes >= best_bytes then best, best_bytes = c, bytes end
  end
  return best
end

-- Whether a compiled image (an ELF cubin) defines kernel `name`: its string table holds the
-- name between NULs. A text image (PTX) names it after ".entry".
function M.defines_kernel(image, name)
  if image:find("\0" .. name .. "\0", 1, true) then return true end
  return image:find(".entry " .. name .. "(", 1, true) ~= nil
end

return M
