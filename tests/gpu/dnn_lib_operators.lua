-- dnn_lib_operators.lua (GPU): the cuDNN `lib` of 1d_conv, 2d_conv, 3d_conv and 2d_max_pooling as the
-- runner builds it (the operator's inputs, its lib.supports and lib.plan, replayed twice into a
-- poisoned output) against the operator's own reference kernel, within the operator's tolerance
-- (2d_max_pooling: exactly), on small and odd cases: lengths and images that are no tile multiple,
-- grouped, depthwise and strided convolutions, channel counts that are not multiples of 8, pooling
-- windows past the edges, stride 1 and window 2. Cases of the grid's shape family must be supported;
-- others may be `unsupported` with cuDNN's no-engine answer (printed). Each plan's note must name
-- what cuDNN ran (engine and workspace, or the legacy pooling call). Exit 77 without a GPU or cuDNN.
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local ok_lib, why_lib = require("tb.dnn").available()
if not ok_lib then io.stderr:write("skip: ", tostring(why_lib), "\n") os.exit(77) end
local opmod, context = require("tilebench.operator"), require("tilebench.context")
local config, verify = require("tilebench.config"), require("tb.verify")

local failed, checked = 0, 0
local function expect(cond, msg)
  if cond then print("ok   " .. msg) else failed = failed + 1; print("FAIL " .. msg) end
end

local function conv(extra)
  local p = { batch = 1, in_channels = 16, out_channels = 16, kernel_size = 3, stride = 1, padding = 1, groups = 1 }
  for k, v in pairs(extra) do p[k] = v end
  return p
end

-- family = true: the grid's shape (3 x 3 / 1 / 1, groups 1, channels a multiple of 8)
local CASES = {
  ["1d_conv"] = { dtypes = { "fp16", "fp32" }, params = {
    { p = conv({ L = 1000 }), family = true },
    { p = conv({ L = 4099, batch = 2, in_channels = 128, out_channels = 128 }), family = true },
    { p = conv({ L = 777, in_channels = 12, out_channels = 8, groups = 4, stride = 2, kernel_size = 5, padding = 2 }) },
    { p = conv({ L = 33, in_channels = 3, out_channels = 5, padding = 0 }) } } },
  ["2d_conv"] = { dtypes = { "fp16", "fp32" }, params = {
    { p = conv({ H = 16, in_channels = 128, out_channels = 128 }), family = true },
    { p = conv({ H = 37, W = 29 }), family = true },
    { p = conv({ H = 31, in_channels = 32, out_channels = 32, groups = 32, stride = 2 }) },
    { p = conv({ H = 9, in_channels = 3, out_channels = 8, kernel_size = 5, padding = 2 }) } } },
  ["3d_conv"] = { dtypes = { "fp16", "fp32" }, params = {
    { p = conv({ D = 8, H = 16, in_channels = 64, out_channels = 64 }), family = true },
    { p = conv({ D = 5, H = 13, W = 11 }), family = true },
    { p = conv({ D = 7, H = 9, in_channels = 12, out_channels = 12, groups = 3, stride = 2 }) } } },
  ["2d_max_pooling"] = { dtypes = { "fp16", "bf16", "fp32" }, exact = true, params = {
    { p = { N = 4, C = 128, H = 32, kernel_size = 3, stride = 2, padding = 1 }, family = true },
    { p = { N = 1, C = 1, H = 1, kernel_size = 3, stride = 2, padding = 1 }, family = true },
    { p = { N = 1, C = 5, H = 33, W = 47, kernel_size = 3, stride = 2, padding = 1 }, family = true },
    { p = { N = 2, C = 3, H = 10, W = 12, kernel_size = 3, stride = 1, padding = 1 } },
    { p = { N = 1, C = 2, H = 9, W = 11, kernel_size = 2, stride = 2, padding = 0 } } } },
}
local ORDER = { "1d_conv", "2d_conv", "3d_conv", "2d_max_pooling" }

local function id(p)
  local keys = {}
  for k in pairs(p) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(p[k]) end
  return table.concat(parts, ",")
end

local family = device.props().family
for _, name in ipairs(ORDER) do
  local op = opmod.load(name)
  local lib = op.module.implementations.lib
  expect(lib ~= nil, name .. " has a lib")
  local spec = CASES[name]
  for _, dt in ipairs(spec.dtypes) do
    for _, cs in ipairs(spec.params) do
      local c = { params = cs.p, dtype = dt, index = 1, id = id(cs.p) }
      local where = string.format("%s %s %s", name, dt, c.id)
      local okc, err = xpcall(function()
        local ctx <close> = context.new(op, c)
        local ins = op.module.inputs(c, ctx)
        local refs = op.module.outputs(c, ins, ctx)
        op.module.reference(c, ins, refs, ctx):run()
        local sup, reason = lib.supports(c, ctx)
        if not sup then
          if not cs.family and tostring(reason):find("offers no engine", 1, true) then
            print("info " .. where .. ": unsupported: " .. tostring(reason))
          else
            expect(false, where .. ": unsupported: " .. tostring(reason))
          end
          return
        end
        local outs = op.module.outputs(c, ins, ctx)
        for _, t in pairs(outs) do verify.poison(t) end
        local plan = lib.plan(c, ins, outs, {}, ctx)
        plan:run()
        for _, t in pairs(outs) do verify.poison(t) end
        plan:run() -- a replay, as the timer's
        local note = plan.note or ""
        expect(note:match("^cuDNN %d+%.%d+%.%d+ engine %d+ %(knobs .*%), heuristic choice %d+ of %d+, workspace %d+ B$") or
               note:match("^cuDNN %d+%.%d+%.%d+ cudnnPoolingForward %(legacy API, no engine choice%), workspace 0 B$"),
               where .. ": note '" .. note .. "'")
        for oname, ref in pairs(refs) do
          checked = checked + 1
          local atol, rtol = config.tolerance(op.config, ref.dtype, family)
          if spec.exact then atol, rtol = 0, 0 end
          local r = verify.compare(outs[oname], ref, { atol = atol, rtol = rtol, max_report = 3 })
          local f = r.first and r.first[1]
          expect(r.ok, string.format("%s: '%s' matches the reference (atol %g rtol %g)%s", where, oname, atol, rtol,
            r.ok and "" or string.format(": %d of %d differ (max abs %.3g)%s", r.mismatches, r.numel, r.max_abs or 0,
              f and string.format(", first [%d] got %s expected %s", f.index, tostring(f.got), tostring(f.expected)) or "")))
        end
      end, debug.traceback)
      if not okc then expect(false, where .. ": " .. tostring(err)) end
    end
  end
end

print(string.format("%d outputs compared, %d failed", checked, failed))
os.exit(failed == 0 and checked > 0 and 0 or 1)
