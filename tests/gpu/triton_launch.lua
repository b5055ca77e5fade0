-- triton_launch.lua (GPU, issue 21): the launch convention is proven, not assumed. For every
-- operator with a `triton` implementation, at the first (smallest) case of each dtype and in its
-- default configuration, the kernel runs twice on the same inputs: through tilebench (the plan
-- ctx:triton builds: cubin from the cache, loaded by the backend, arguments packed by
-- tilebench.triton) and through triton's own Python launcher (CompiledKernel[grid] of triton's
-- rebuild of the kernel, made to load tilebench's cubin, checked by SHA-256, with the rebuild's
-- shared memory and warps held to tilebench's description; on tilebench's stream and memory:
-- host/python/tb_triton.py's launch_with_triton and adopt_binary). The binary is handed over
-- rather than rebuilt, and the count of rebuilds that differ from the cached cubin is printed:
-- until session 9 the cubins carried line info with the source's absolute directory, so an
-- entry built in another checkout differed in those bytes with the same SASS (the likely cause
-- of the 79 launches counted on the H200 on 2026-12-02; reproduced without a GPU: one source at
-- two paths, 22579 bytes apart, identical SASS). They no longer carry it (tb_triton.py), so a
-- count above 0 now means another ptxas or other compiler settings there. Outputs are poisoned
-- before each run and must be identical (atol = rtol = 0; NaN matches NaN): a kernel whose
-- result depends on the order of float atomics fails here (linear_self_attention's split-K
-- sums, until session 9). Exits 77 without a GPU, without triton, or without a CUDA torch
-- (triton's launcher asks torch for the device).
-- usage: tilebench script tests/gpu/triton_launch.lua [OPERATOR ...]
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skipped: ", tostring(why), "\n") os.exit(77) end
local triton = require("tilebench.triton")
local ok_t, tver = triton.available()
if not ok_t then io.stderr:write("skipped: ", tostring(tver), "\n") os.exit(77) end
local ok_p, pwhy = require("tilebench.torch").available(0)
if not ok_p then io.stderr:write("skipped (triton's launcher needs torch): ", tostring(pwhy), "\n") os.exit(77) end

local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local verify = require("tb.verify")
local launch = require("tb.launch")
local py = require("tb.python")
local json = require("tilebench.json")

local names = #arg > 0 and arg or opmod.list()
local failures, checked = 0, 0
local rebuilt_differ = 0 -- launches whose cubin triton, asked again here, built differently
local function fail(what, msg) failures = failures + 1; print("FAIL " .. what .. ": " .. msg) end

local function sorted_names(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

for _, name in ipairs(names) do
  local op = opmod.load(name)
  local spec = op.module.implementations.triton
  if spec then
    for _, dtype in ipairs(opmod.dtypes(op)) do
      local case = opmod.cases_of(op, dtype)[1]
      local what = string.format("%s %s %s", name, dtype, case.id)
      local ctx = context.new(op, case)
      local ok, err = pcall(function()
        local launched = triton.record_launches(ctx)
        local ins = op.module.inputs(case, ctx)
        local outs = op.module.outputs(case, ins, ctx)
        local plan = spec.plan(case, ins, outs, spec.default, ctx)
        if #launched == 0 then error("the plan launched no triton kernel", 0) end
        local by_tilebench = {}
        for _, o in ipairs(sorted_names(outs)) do verify.poison(outs[o]) end
        plan:run()
        for _, o in ipairs(sorted_names(outs)) do
          local copy = assert(outs[o]:copy())
          ctx.tensors[#ctx.tensors + 1] = copy
          by_tilebench[o] = copy
          verify.poison(outs[o])
        end
        for _, l in ipairs(launched) do
          local r = triton.launch_request(l)
          r.args = {}
          for argname, v in pairs(l.spec.args) do
            if type(v) == "number" then r.args[argname] = v
            elseif type(v) == "userdata" and require("tb.tensor").is_tensor(v) then r.args[argname] = py.describe(v).ptr
            else local _, value = launch.value(v); r.args[argname] = value end
          end
          local res = json.decode(py.call("triton_launch", json.encode_sorted(r), py.stream()))
          if res.error or res.unsupported then error("triton's launcher: " .. (res.error or res.unsupported), 0) end
          if not res.rebuilt_identical then rebuilt_differ = rebuilt_differ + 1 end
        end
        for _, o in ipairs(sorted_names(outs)) do
          local c = verify.compare(outs[o], by_tilebench[o], { atol = 0, rtol = 0 })
          if not c.ok then
            local first = c.first[1] or {}
            error(string.format("output %s: %d of %d elements differ (first at %s: triton %s, tilebench %s)", o,
              c.mismatches, c.numel, tostring(first.index), tostring(first.got), tostring(first.expected)), 0)
          end
        end
      end)
      ctx:close()
      checked = checked + 1
      if ok then print("ok   " .. what .. ": identical through triton's launcher and tilebench")
      else fail(what, tostring(err)) end
    end
  end
end
print(string.format("triton %s: %d kernels compared, %d failed; triton's own rebuild in this process differed from the cached cubin for %d launches (both launchers ran the cached one)",
  tver, checked, failures, rebuilt_differ))
os.exit(failures == 0 and checked > 0 and 0 or 1)
