-- launches.lua (GPU): the Triton launches of operators' `triton` implementations at one case, as
-- JSON for bench/triton/proton_check.py: each launch's compile request (file, kernel, signature,
-- constexprs, num_warps, num_stages, arch), its grid, the SHA-256 of the cubin tilebench
-- launches, and its arguments (scalars by value, tensors by shape and dtype), so a plain Python
-- process can launch the very same binary through triton's own launcher on tensors of the same
-- shapes. Builds the default configuration's plan like tests/gpu/triton_launch.lua.
-- usage: tilebench script bench/triton/launches.lua OPERATOR:DTYPE:CASE ...   (CASE: first|last|N)
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("no GPU: ", tostring(why), "\n") os.exit(77) end
local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local launch = require("tb.launch")
local tensor = require("tb.tensor")
local triton = require("tilebench.triton")
local json = require("tilebench.json")

local out = {}
for _, spec_s in ipairs(arg) do
  local name, dtype, which = spec_s:match("^([^:]+):([^:]+):([^:]+)$")
  if not name then error("expected OPERATOR:DTYPE:CASE, got " .. spec_s, 0) end
  local op = opmod.load(name)
  local spec = op.module.implementations.triton
  if not spec then error(name .. " has no triton implementation", 0) end
  local cases = opmod.cases_of(op, dtype)
  local case = which == "first" and cases[1] or which == "last" and cases[#cases] or cases[tonumber(which)]
  if not case then error(string.format("%s %s has no case %s", name, dtype, which), 0) end
  local ctx = context.new(op, case)
  local launched = triton.record_launches(ctx)
  local ins = op.module.inputs(case, ctx)
  local outs = op.module.outputs(case, ins, ctx)
  spec.plan(case, ins, outs, spec.default, ctx)
  local entry = { operator = name, dtype = dtype, case_id = case.id, launches = {} }
  for _, l in ipairs(launched) do
    local r = triton.launch_request(l)
    r.args = {}
    for argname, v in pairs(l.spec.args) do
      if type(v) == "number" then r.args[argname] = { value = v }
      elseif type(v) == "userdata" and tensor.is_tensor(v) then
        r.args[argname] = { shape = v.shape, dtype = v.dtype }
      else local _, value = launch.value(v); r.args[argname] = { value = value } end
    end
    entry.launches[#entry.launches + 1] = r
  end
  ctx:close()
  out[#out + 1] = entry
end
io.write(json.encode_sorted(out), "\n")
