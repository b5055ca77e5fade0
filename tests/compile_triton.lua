-- Compiles every Triton kernel of every operator that has one (operators/*/<name>_triton.py) with
-- triton's own compiler for sm_90, without a GPU: each `triton` implementation's default
-- configuration (--all: every candidate its `valid` accepts) at the first and last case of every
-- dtype, through tilebench.precompile (the plans `tilebench compile --impl triton` makes). Checks
-- that a cubin and a description come out for each, that the description's parameter list is
-- the kernel's signature (its runtime arguments in the function's order, then triton's scratch
-- pointers) and that every plan step's arguments follow it. Exits 77 when triton does not import,
-- unless TB_REQUIRE_TRITON is set (CI), where that is a failure.
-- usage: tilebench script tests/compile_triton.lua [--all] [OPERATOR...]
local all, only = false, {}
for i = 1, #arg do
  if arg[i] == "--all" then all = true else only[#only + 1] = arg[i] end
end
local opmod = require("tilebench.operator")
local pre = require("tilebench.precompile")
local triton = require("tilebench.triton")
local kernel = require("tb.kernel")
local json = require("tilebench.json")

local ok, version = triton.available()
if not ok then
  io.stderr:write("triton is not available: ", tostring(version), "\n")
  os.exit(os.getenv("TB_REQUIRE_TRITON") and 1 or 77)
end

-- the @triton.jit function's arguments, in order, read from the file (def name(a, b, C: tl.constexpr):)
local function jit_args(path, fn)
  local fh = assert(io.open(path))
  local src = fh:read("a")
  fh:close()
  local list = src:match("@triton%.jit%s*\ndef%s+" .. fn .. "%s*(%b())")
  assert(list, path .. " has no @triton.jit def " .. fn)
  local names = {}
  for a in list:sub(2, -2):gmatch("[^,]+") do names[#names + 1] = a:match("^%s*([%w_]+)") end
  return names
end

local names = #only > 0 and only or opmod.list()
local items, compiled, failures, checked = {}, 0, {}, 0
for _, name in ipairs(names) do
  local op = opmod.load(name)
  if op.module.implementations.triton then
    for _, dtype in ipairs(opmod.dtypes(op)) do
      local cases = opmod.cases_of(op, dtype)
      for _, case in ipairs({ cases[1], cases[#cases] ~= cases[1] and cases[#cases] or nil }) do
        items[#items + 1] = { operator = name, dtype = dtype, mode = all and "autotune" or "default", _case = case,
                              impls = { "triton" } }
      end
    end
  end
end
assert(#items > 0, "no operator has a triton implementation")

local context = require("tilebench.context")
for _, u in ipairs(pre.units(items)) do
  if u.impl then
    local n, err = pre.compile_unit(u)
    if not n then
      failures[#failures + 1] = pre.describe(u) .. ": " .. err
    else
      compiled = compiled + n
      -- the plan again (cached now): every step's description against the kernel's signature
      local ctx = context.new(u.op, u.case, { compile_only = true })
      local ins = u.op.module.inputs(u.case, ctx)
      local outs = u.op.module.outputs(u.case, ins, ctx)
      for _, step in ipairs(u.op.module.implementations.triton.plan(u.case, ins, outs, u.cfg, ctx)) do
        local d = step.description
        -- (a plan may hold other steps too: the matmul family's transpose of B for TF32 and fp8)
        if d then
          local key = step.fn.compiled.key
          local cubin = kernel.cache_read(key .. ".cubin")
          local stored = kernel.cache_read(key .. ".json")
          local where = pre.describe(u) .. " " .. d.name
          if not (cubin and cubin:sub(1, 4) == "\127ELF") then failures[#failures + 1] = where .. ": no cubin in the cache" end
          if not (stored and json.decode(stored).name == d.name) then failures[#failures + 1] = where .. ": no description" end
          local runtime = {}
          for _, a in ipairs(jit_args(d.file, d["function"])) do
            if d.constexprs[a] == nil then runtime[#runtime + 1] = a end
          end
          local expect = {}
          for _, a in ipairs(runtime) do expect[#expect + 1] = a end
          expect[#expect + 1] = "global_scratch"
          expect[#expect + 1] = "profile_scratch"
          local got = {}
          for i, p in ipairs(d.params) do got[i] = p.name end
          if table.concat(got, ",") ~= table.concat(expect, ",") then
            failures[#failures + 1] = string.format("%s: parameters %s, the signature gives %s", where,
              table.concat(got, ","), table.concat(expect, ","))
          end
          if #step.args ~= #d.params then failures[#failures + 1] = where .. ": step has " .. #step.args .. " arguments" end
          if d.block ~= 32 * d.num_warps or step.block[1] ~= d.block then failures[#failures + 1] = where .. ": block" end
          checked = checked + 1
        end
      end
      ctx:close()
    end
  end
end

if #failures > 0 then
  for _, f in ipairs(failures) do io.stderr:write("FAIL ", f, "\n") end
  io.stderr:write(string.format("%d failure(s)\n", #failures))
  os.exit(1)
end
print(string.format("triton %s: %d kernel compiles for sm_90 passed, %d descriptions checked (no GPU)",
  version, compiled, checked))
os.exit(compiled > 0 and 0 or 1)
