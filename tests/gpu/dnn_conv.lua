-- dnn_conv.lua (GPU): cuDNN's convolution forward and max pooling through tb.dnn on a device, on small
-- and odd cases against plain Lua computations in double on the inputs as rounded to the dtype.
-- Convolution (fp32: TF32 engines allowed; fp16): 1-d, 2-d and 3-d, grouped and depthwise, strided,
-- padded, windows 3 and 5, odd sizes; replayed from a launch plan; the engine recorded (index, knobs,
-- choice, workspace) and the probe finds the same one; cases of the operators' shape family must
-- get an engine, others may get cuDNN's no-engine answer (printed). Max pooling (fp32, fp16, bf16):
-- one pixel, odd images, planted NaN (propagates) and -inf, stride 1 and window 2 variants, exact;
-- its record names the legacy call. Prints op:describe() for every case. Exit 77 without a GPU or
-- without cuDNN.
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local dnn = require("tb.dnn")
local ok_lib, why_lib = dnn.available()
if not ok_lib then io.stderr:write("skip: ", tostring(why_lib), "\n") os.exit(77) end
local tensor, verify, launch = require("tb.tensor"), require("tb.verify"), require("tb.launch")
print("cuDNN " .. dnn.version().version .. " from " .. dnn.version().path)

local failed = 0
local function expect(cond, msg)
  if cond then print("ok   " .. msg) else failed = failed + 1; print("FAIL " .. msg) end
end

local function values(n, seed)
  local v = {}
  for i = 1, n do v[i] = ((i * 7919 + seed * 104729) % 2001) / 1000 - 1 end
  return v
end

-- ---- convolution ------------------------------------------------------------------------------
local function prod(t) local p = 1 for _, v in ipairs(t) do p = p * v end return p end
local function ipow(b, e) local p = 1 for _ = 1, e do p = p * b end return p end

-- OPERATORS.md 32-34: out[b, oc, o] = sum_{ic, t} x[b, g * Cin_g + ic, o * s + t - p] * w[oc, ic, t]
local function conv_cpu(cs, x, w)
  local nd = #cs.input
  local out = {}
  for i = 1, nd do out[i] = (cs.input[i] + 2 * cs.padding - cs.window) // cs.stride + 1 end
  local inn, win, o3 = { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }
  for i = 1, nd do inn[3 - nd + i], win[3 - nd + i], o3[3 - nd + i] = cs.input[i], cs.window, out[i] end
  local cg, kg = cs.c // cs.groups, cs.k // cs.groups
  local y = {}
  for b = 0, cs.n - 1 do
    for oc = 0, cs.k - 1 do
      local g = oc // kg
      for a0 = 0, o3[1] - 1 do for a1 = 0, o3[2] - 1 do for a2 = 0, o3[3] - 1 do
        local acc = 0
        for ic = 0, cg - 1 do
          local c = g * cg + ic
          for t0 = 0, win[1] - 1 do for t1 = 0, win[2] - 1 do for t2 = 0, win[3] - 1 do
            local p0 = nd == 3 and a0 * cs.stride + t0 - cs.padding or a0
            local p1 = nd >= 2 and a1 * cs.stride + t1 - cs.padding or a1
            local p2 = a2 * cs.stride + t2 - cs.padding
            if p0 >= 0 and p0 < inn[1] and p1 >= 0 and p1 < inn[2] and p2 >= 0 and p2 < inn[3] then
              acc = acc + x[(((b * cs.c + c) * inn[1] + p0) * inn[2] + p1) * inn[3] + p2 + 1] *
                          w[(((oc * cg + ic) * win[1] + t0) * win[2] + t1) * win[3] + t2 + 1]
            end
          end end end
        end
        y[(((b * cs.k + oc) * o3[1] + a0) * o3[2] + a1) * o3[3] + a2 + 1] = acc
      end end end
    end
  end
  return y, out
end

-- family: the operators' shapes (window 3, stride 1, padding 1, groups 1, channels a multiple of 8)
local CONV = {
  { n = 2, c = 8, k = 16, groups = 1, input = { 37 }, window = 3, stride = 1, padding = 1, family = true },
  { n = 1, c = 8, k = 4, groups = 4, input = { 101 }, window = 5, stride = 2, padding = 2 },
  { n = 1, c = 3, k = 5, groups = 1, input = { 13 }, window = 3, stride = 1, padding = 0 },
  { n = 1, c = 16, k = 8, groups = 1, input = { 17, 17 }, window = 3, stride = 1, padding = 1, family = true },
  { n = 2, c = 16, k = 16, groups = 16, input = { 15, 15 }, window = 3, stride = 2, padding = 1 },
  { n = 1, c = 3, k = 8, groups = 1, input = { 9, 11 }, window = 5, stride = 1, padding = 2 },
  { n = 1, c = 8, k = 8, groups = 1, input = { 5, 9, 9 }, window = 3, stride = 1, padding = 1, family = true },
  { n = 1, c = 6, k = 6, groups = 3, input = { 7, 11, 11 }, window = 3, stride = 2, padding = 1 },
}
local conv_tol = { fp32 = 2e-2, fp16 = 5e-2 } -- atol (rtol 1e-2): TF32 products, fp16 output rounding

for _, dt in ipairs({ "fp32", "fp16" }) do
  for _, cs in ipairs(CONV) do
    local label = string.format("conv %s %d-d n %d c %d k %d groups %d in (%s) window %d stride %d padding %d", dt,
      #cs.input, cs.n, cs.c, cs.k, cs.groups, table.concat(cs.input, ", "), cs.window, cs.stride, cs.padding)
    local nx, nw = cs.n * cs.c * prod(cs.input), cs.k * (cs.c // cs.groups) * ipow(cs.window, #cs.input)
    local x, w = tensor.from_table(values(nx, 1), dt, { nx }), tensor.from_table(values(nw, 2), dt, { nw })
    local want, out = conv_cpu(cs, x:to_host(), w:to_host())
    local y = tensor.empty({ #want }, dt)
    verify.poison(y)
    local windows = {}
    for i = 1, #cs.input do windows[i] = cs.window end
    local spec = { n = cs.n, c = cs.c, k = cs.k, groups = cs.groups, input = cs.input, window = windows,
                   stride = cs.stride, padding = cs.padding }
    local probe_spec = {}
    for key, v in pairs(spec) do probe_spec[key] = v end
    probe_spec.dtype = dt
    spec.x, spec.w, spec.y = x, w, y
    local ok, op = pcall(dnn.conv, spec)
    if not ok and not cs.family and tostring(op):find("offers no engine", 1, true) then
      print("info " .. label .. ": " .. tostring(op))
    elseif not ok then
      expect(false, label .. ": " .. tostring(op))
    else
      print("     " .. op:describe())
      local e = op:engine()
      expect(math.type(e.global_index) == "integer" and e.global_index >= 0 and e.choice >= 1 and
             e.choice <= e.candidates and e.workspace_bytes >= 0 and e.legacy_api == nil,
             string.format("%s: engine %d (knobs %s), choice %d of %d, workspace %d B", label, e.global_index,
               e.knobs_text, e.choice, e.candidates, e.workspace_bytes))
      local probe = dnn.conv(probe_spec)
      local pe = probe:engine()
      expect(pe.global_index == e.global_index and pe.knobs_text == e.knobs_text, label .. ": the probe finds the same engine")
      probe:close()
      launch.plan { { call = op } }:run()
      local ref = tensor.from_table(want, "fp32", { #want })
      local r = verify.compare(y, ref, { atol = conv_tol[dt], rtol = 1e-2, max_report = 3 })
      local f = r.first and r.first[1]
      expect(r.ok, string.format("%s: y (%s) matches the CPU convolution%s", label, table.concat(out, ", "),
        r.ok and "" or string.format(": %d of %d differ (max abs %.3g)%s", r.mismatches, r.numel, r.max_abs or 0,
          f and string.format(", first [%d] got %s expected %s", f.index, tostring(f.got), tostring(f.expected)) or "")))
      op:close()
    end
  end
end

-- ---- max pooling ------------------------------------------------------------------------------
-- cuDNN's max pooling starts each window at the dtype's lowest finite value, where max_pool2d
-- starts at -inf: a window holding only -inf gives the lowest finite value (measured on the H200,
-- cuDNN 9, 2026-12-02; docs/CONV.md). `lowest`, where given, is that start.
local function pool_cpu(ps, x, lowest)
  local ho = (ps.h + 2 * ps.padding - ps.window) // ps.stride + 1
  local wo = (ps.w + 2 * ps.padding - ps.window) // ps.stride + 1
  local y = {}
  for pl = 0, ps.n * ps.c - 1 do
    for oh = 0, ho - 1 do
      for ow = 0, wo - 1 do
        local m = lowest or -math.huge
        for i = 0, ps.window - 1 do
          for j = 0, ps.window - 1 do
            local r, c = oh * ps.stride - ps.padding + i, ow * ps.stride - ps.padding + j
            if r >= 0 and r < ps.h and c >= 0 and c < ps.w then
              local v = x[(pl * ps.h + r) * ps.w + c + 1]
              if v ~= v or v > m then m = v end
              if m ~= m then goto done end
            end
          end
        end
        ::done::
        y[(pl * ho + oh) * wo + ow + 1] = m
      end
    end
  end
  return y
end

local POOL = {
  { n = 1, c = 1, h = 1, w = 1, window = 3, stride = 2, padding = 1 },
  { n = 1, c = 2, h = 7, w = 9, window = 3, stride = 2, padding = 1, plant = true },
  { n = 2, c = 3, h = 33, w = 48, window = 3, stride = 2, padding = 1, plant = true },
  { n = 4, c = 128, h = 32, w = 32, window = 3, stride = 2, padding = 1 },
  { n = 1, c = 2, h = 10, w = 12, window = 3, stride = 1, padding = 1 },
  { n = 1, c = 2, h = 9, w = 11, window = 2, stride = 2, padding = 0 },
}
for _, dt in ipairs({ "fp32", "fp16", "bf16" }) do
  for _, ps in ipairs(POOL) do
    local label = string.format("maxpool %s (%d, %d, %d, %d) %d/%d/%d%s", dt, ps.n, ps.c, ps.h, ps.w, ps.window,
      ps.stride, ps.padding, ps.plant and " NaN/-inf planted" or "")
    local nx = ps.n * ps.c * ps.h * ps.w
    local v = values(nx, 3)
    if ps.plant then -- a NaN inside, one on the border, a -inf block in plane 0's bottom right
      v[1], v[ps.w * 3 + 4] = 0 / 0, 0 / 0
      for r = ps.h - 3, ps.h - 1 do for c = ps.w - 3, ps.w - 1 do v[r * ps.w + c + 1] = -math.huge end end
    end
    local x = tensor.from_table(v, dt, { nx })
    local want = pool_cpu(ps, x:to_host(), -require("tb.dtype").info[dt].max_finite)
    local y = tensor.empty({ #want }, dt)
    verify.poison(y)
    local spec = { n = ps.n, c = ps.c, h = ps.h, w = ps.w, window = ps.window, stride = ps.stride, padding = ps.padding }
    local probe_spec = {}
    for key, val in pairs(spec) do probe_spec[key] = val end
    probe_spec.dtype = dt
    spec.x, spec.y = x, y
    local ok, op = pcall(dnn.maxpool, spec)
    if not ok then
      expect(false, label .. ": " .. tostring(op))
    else
      print("     " .. op:describe())
      local e = op:engine()
      expect(e.legacy_api == "cudnnPoolingForward" and e.global_index == -1 and e.workspace_bytes == 0,
             label .. ": the record names the legacy call")
      dnn.maxpool(probe_spec):close()
      launch.plan { { call = op } }:run()
      local got = y:to_host()
      local bad, first = 0, nil
      for i = 1, #want do
        local same = (want[i] ~= want[i]) and (got[i] ~= got[i]) or want[i] == got[i]
        if not same then
          bad = bad + 1
          first = first or string.format("[%d] got %s expected %s", i - 1, tostring(got[i]), tostring(want[i]))
        end
      end
      expect(bad == 0, string.format("%s: y equals max_pool2d's (an all -inf window: the lowest finite value)%s", label,
        bad == 0 and "" or string.format(": %d of %d differ, first %s", bad, #want, first)))
      op:close()
      local okc, errc = pcall(op.run, op)
      expect(not okc and tostring(errc):find("closed", 1, true), label .. ": use after close raises")
    end
  end
end

local x = tensor.empty({ 16 }, "fp16")
local function raises(text, fn, spec, what)
  local ok, err = pcall(fn, spec)
  expect(not ok and tostring(err):find(text, 1, true), what .. ": " .. tostring(err))
end
raises("'y' holds 16 fp16 elements, the problem needs 4 fp16", dnn.maxpool,
  { x = x, y = x, n = 1, c = 1, h = 4, w = 4, window = 3, stride = 2, padding = 1 }, "pooling y's size")
raises("groups 3 must divide c = 4", dnn.conv,
  { n = 1, c = 4, k = 4, groups = 3, input = { 8 }, window = { 3 }, dtype = "fp16" }, "conv groups")

if failed > 0 then print(failed .. " failed") os.exit(1) end
print("all ok")
